#include "sim/snapshot_barrier.h"

#include <filesystem>
#include <sstream>
#include <tuple>
#include <utility>

#include "base/atomic_file.h"
#include "node/host/checkpoint.h"

namespace meshlearn::sim {
namespace {

// The name of node `id`'s checkpoint in a round folder.
std::string KeptCheckpointName(const std::string& id) { return id + "." + node::kCheckpointFile; }

// Copies `from` over `to`; kIoError "<round_dir>: cannot <what> the checkpoint of node <id>: ...".
Status CopyCheckpoint(const std::string& from, const std::string& to, const std::string& round_dir,
                      const char* what, const std::string& id) {
  std::error_code ec;
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    return Status::IoError(round_dir + ": cannot " + what + " the checkpoint of node " + id + ": " +
                           ec.message());
  }
  return Status::Ok();
}

// Checks that `s`, read from `path`, was taken by a run of as many nodes as `ids` with snapshots
// every `every` rounds.
Status CheckSameRun(const SimulationSnapshot& s, const std::string& path, int64_t every,
                    const std::vector<std::string>& ids) {
  if (s.every != every) {
    return Status::InvalidArgument(
        path + ": taken with a snapshot every " + std::to_string(s.every) +
        " rounds; resume with the same setting (snapshot_every, --snapshot-every " +
        std::to_string(s.every) + "), since the snapshots are part of what the run computes");
  }
  if (s.nodes.size() != ids.size()) {
    return Status::InvalidArgument(path + ": the snapshot holds " + std::to_string(s.nodes.size()) +
                                   " nodes, this run " + std::to_string(ids.size()));
  }
  return Status::Ok();
}

// Checks that node `saved` of a snapshot read from `path` is node `id` of a run with `outages`
// outages.
Status CheckSameNode(const NodeSnapshot& saved, const std::string& path, const std::string& id,
                     size_t outages) {
  if (saved.id != id) {
    return Status::InvalidArgument(path + ": node '" + saved.id + "' where this run has '" + id +
                                   "'");
  }
  for (size_t o : saved.outages) {
    if (o >= outages) {
      return Status::InvalidArgument(path + ": node '" + saved.id + "' has outage " +
                                     std::to_string(o) + ", this run's [network] has " +
                                     std::to_string(outages));
    }
  }
  return Status::Ok();
}

}  // namespace

SnapshotBarrier::SnapshotBarrier(int64_t every, std::string dir, size_t nodes)
    : every_(every), dir_(std::move(dir)), there_(nodes, false) {}

void SnapshotBarrier::PlanAfter(int64_t round, const std::vector<int64_t>& rounds) {
  next_ = -1;
  if (every_ <= 0) return;
  const int64_t next = round + every_;
  for (int64_t last : rounds) {
    if (next < last) {
      next_ = next;
      return;
    }
  }
}

bool SnapshotBarrier::Update(size_t i, bool finished, std::optional<int64_t> completed_round) {
  const bool there = next_ >= 0 && (finished || (completed_round && *completed_round >= next_));
  if (there != there_[i]) {
    there_[i] = there;
    if (there) {
      ++count_;
    } else {
      --count_;
    }
  }
  if (count_ != there_.size() || scheduled_) return false;
  scheduled_ = true;
  return true;
}

bool SnapshotBarrier::Take() {
  scheduled_ = false;
  return count_ == there_.size();
}

void SnapshotBarrier::Clear() {
  there_.assign(there_.size(), false);
  count_ = 0;
}

std::string SnapshotBarrier::RoundDir(int64_t round) const {
  return dir_ + "/round-" + std::to_string(round);
}

std::string SnapshotBarrier::SnapshotPath() const { return dir_ + "/" + kSnapshotFileName; }

void SnapshotBarrier::Begin(int64_t round) {
  round_dir_ = RoundDir(round);
  std::error_code ec;
  std::filesystem::create_directories(round_dir_, ec);  // a failure shows in KeepCheckpoint
}

Status SnapshotBarrier::KeepCheckpoint(const std::string& id,
                                       const std::string& checkpoint_path) const {
  return CopyCheckpoint(checkpoint_path, round_dir_ + "/" + KeptCheckpointName(id), round_dir_,
                        "copy", id);
}

Status SnapshotBarrier::Commit(const SimulationSnapshot& snapshot) const {
  Status saved = WriteFileAtomically(SnapshotPath(), SnapshotText(snapshot));
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (entry.is_directory() && entry.path() != round_dir_) {
      std::filesystem::remove_all(entry.path(), ec);
    }
  }
  return saved;
}

Result<SimulationSnapshot> SnapshotBarrier::Load(const std::vector<std::string>& ids,
                                                 size_t outages, std::mt19937_64& generator) const {
  const std::string path = SnapshotPath();
  auto text = ReadWholeFile(path);
  if (!text.ok()) {
    if (text.status().code() == ErrorCode::kNotFound) {
      return Status::NotFound(path +
                              ": no snapshot to resume from (a run takes one only with "
                              "snapshot_every > 0)");
    }
    return text.status();
  }
  auto snapshot = ParseSnapshot(*text, path);
  if (!snapshot.ok()) return snapshot.status();
  MESHLEARN_RETURN_IF_ERROR(CheckSameRun(*snapshot, path, every_, ids));
  std::istringstream generator_text(snapshot->generator);
  if (!(generator_text >> generator)) {
    return Status::Malformed(path + ": the network generator's state does not read back");
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    MESHLEARN_RETURN_IF_ERROR(CheckSameNode(snapshot->nodes[i], path, ids[i], outages));
  }
  return snapshot;
}

Status SnapshotBarrier::RestoreCheckpoint(int64_t round, const std::string& id,
                                          const std::string& checkpoint_path) const {
  const std::string round_dir = RoundDir(round);
  return CopyCheckpoint(round_dir + "/" + KeptCheckpointName(id), checkpoint_path, round_dir,
                        "restore", id);
}

NodeSnapshot SnapshotOf(const SimNode& n) {
  return {.id = n.config.id,
          .running = n.state == NodeState::kRunning,
          .generation = n.generation,
          .bytes_in = n.bytes_in_before,
          .bytes_out = n.bytes_out_before,
          .last_round = n.last_round,
          .last_val_loss = n.last_val_loss,
          .outages = n.outages,
          .failure = n.failure};
}

void RestoreFromSnapshot(const NodeSnapshot& saved, SimNode& n) {
  n.state = saved.running ? NodeState::kRunning : NodeState::kFinished;
  std::tie(n.generation, n.bytes_in_before, n.bytes_out_before, n.last_round, n.last_val_loss,
           n.outages, n.failure) =
      std::tie(saved.generation, saved.bytes_in, saved.bytes_out, saved.last_round,
               saved.last_val_loss, saved.outages, saved.failure);
}

}  // namespace meshlearn::sim
