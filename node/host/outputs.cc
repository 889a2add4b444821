#include "node/host/outputs.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "node/host/node_files.h"

namespace meshlearn::node {
namespace {

// Peer ids joined by ';', as one CSV field (base/csv.h).
std::string JoinPeers(const std::vector<std::string>& peers) {
  std::string joined;
  for (size_t i = 0; i < peers.size(); ++i) joined += (i ? ";" : "") + peers[i];
  return CsvField(joined);
}

// The rounds.csv row of `r`.
RoundRow RowOf(const RoundRecord& r, uint64_t bytes_in, uint64_t bytes_out) {
  const RoundOutcome& o = r.outcome;
  return {.round = r.round,
          .wall_s = r.wall_seconds,
          .train_loss = o.train_loss,
          .val_loss = o.val_loss,
          .val_acc = o.val_acc,
          .test_loss = o.test_loss,
          .test_acc = o.test_acc,
          .sampled = r.sampled,
          .answered = r.answered,
          .bytes_in = bytes_in,
          .bytes_out = bytes_out,
          .stopped = r.stopped,
          .train_s = o.train_seconds,
          .eval_s = o.eval_seconds,
          .temperature = o.temperature,
          .epsilon = o.epsilon,
          .peers = r.sampled_peers};
}

// The layout a node writes rounds.csv in: every column.
const CsvLayout& RoundsLayout() {
  static const CsvLayout kLayout = CurrentLayout<RoundRow>();
  return kLayout;
}

}  // namespace

std::string RoundsCsvHeader() { return RoundsLayout().Header(); }

Result<std::vector<RoundRow>> ReadRoundsCsv(const std::string& path) {
  auto table = ReadCsvFile<RoundRow>(path);
  if (!table.ok()) return table.status();
  return std::move(table->rows);
}

pid_t NodeFolderLockHolder(const std::string& dir) {
  return FileLock::Holder(dir + "/" + kNodeLockFile);
}

Status NodeOutputs::Lock() {
  lock_.reset();
  auto lock = FileLock::Acquire(dir_ + "/" + kNodeLockFile);
  if (!lock.ok()) {
    if (lock.status().code() != ErrorCode::kUnavailable) return lock.status();
    return Status::Unavailable(
        lock.status().message() +
        ": another node is writing to this folder, and two nodes writing one folder would mix "
        "their rounds and checkpoints; stop that node, or give this one another output_dir");
  }
  lock_ = std::move(*lock);
  return Status::Ok();
}

Status NodeOutputs::StartRoundsCsv() {
  const std::string path = dir_ + "/" + kRoundsFile;
  rounds_.close();
  MESHLEARN_RETURN_IF_ERROR(WriteFileAtomically(path, rounds_text_));
  rounds_.clear();
  rounds_.open(path, std::ios::app);
  struct stat info {};
  if (!rounds_ || ::stat(path.c_str(), &info) != 0) {
    return Status::IoError(path + ": cannot open for appending");
  }
  rounds_inode_ = info.st_ino;
  rounds_device_ = info.st_dev;
  return Status::Ok();
}

bool NodeOutputs::RoundsCsvIsOurs() const {
  struct stat info {};
  return ::stat((dir_ + "/" + kRoundsFile).c_str(), &info) == 0 && info.st_ino == rounds_inode_ &&
         info.st_dev == rounds_device_;
}

Result<NodeOutputs> NodeOutputs::Open(const std::string& dir, int64_t resume_round,
                                      std::shared_ptr<spdlog::logger> log, Mode mode,
                                      FileWriter write) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": cannot create the output folder: " + ec.message());
  NodeOutputs outputs(dir);
  outputs.log_ = std::move(log);
  outputs.buffered_ = mode == Mode::kBuffered;
  outputs.write_ = write ? std::move(write) : FileWriter(WriteFileAtomically);
  if (!outputs.buffered_) MESHLEARN_RETURN_IF_ERROR(outputs.Lock());
  std::string path = dir + "/" + kRoundsFile;
  outputs.rounds_text_ = RoundsCsvHeader() + "\n";
  if (resume_round >= 0) {
    auto old = ReadCsvFile<RoundRow>(path);
    if (!old.ok() && old.status().code() != ErrorCode::kNotFound) return old.status();
    for (const RoundRow& row : old.ok() ? old->rows : std::vector<RoundRow>()) {
      if (row.round <= resume_round) outputs.rounds_text_ += CsvRowText(row, RoundsLayout());
    }
  }
  if (outputs.buffered_) {
    outputs.rounds_unwritten_ = true;
  } else {
    MESHLEARN_RETURN_IF_ERROR(outputs.StartRoundsCsv());
  }
  return outputs;
}

Status NodeOutputs::Flush() {
  if (rounds_unwritten_) {
    MESHLEARN_RETURN_IF_ERROR(write_(dir_ + "/" + kRoundsFile, rounds_text_));
    rounds_unwritten_ = false;
  }
  for (const auto& [name, bytes] : unwritten_) {
    MESHLEARN_RETURN_IF_ERROR(write_(dir_ + "/" + name, bytes));
  }
  unwritten_.clear();
  return Status::Ok();
}

Status NodeOutputs::RecreateIfGone() {
  if (RoundsCsvIsOurs()) return Status::Ok();
  size_t rows = static_cast<size_t>(std::count(rounds_text_.begin(), rounds_text_.end(), '\n') - 1);
  if (log_) {
    log_->warn(
        "{}/rounds.csv is gone (deleted while the node ran?): recreating {} with rounds.csv and "
        "its {} rows so far; the checkpoint and the other tables follow",
        dir_, dir_, rows);
  }
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return Status::IoError(dir_ + ": cannot recreate the output folder: " + ec.message());
  MESHLEARN_RETURN_IF_ERROR(Lock());
  return StartRoundsCsv();
}

Status NodeOutputs::AppendRound(const RoundRecord& r, uint64_t bytes_in, uint64_t bytes_out) {
  if (!buffered_) MESHLEARN_RETURN_IF_ERROR(RecreateIfGone());
  const std::string row = CsvRowText(RowOf(r, bytes_in, bytes_out), RoundsLayout());
  if (buffered_) {
    rounds_text_ += row;
    rounds_unwritten_ = true;
    return Status::Ok();
  }
  rounds_ << row;
  rounds_.flush();
  if (!rounds_) return Status::IoError(dir_ + "/rounds.csv: write failed");
  rounds_text_ += row;
  // Deleted while the row was written: the row went with the old file, and comes back now.
  return RecreateIfGone();
}

Status NodeOutputs::Replace(const std::string& name, std::string_view bytes) {
  if (buffered_) {
    unwritten_[name] = std::string(bytes);
    return Status::Ok();
  }
  MESHLEARN_RETURN_IF_ERROR(RecreateIfGone());
  Status written = WriteFileAtomically(dir_ + "/" + name, bytes);
  if (!written.ok() && !RoundsCsvIsOurs()) {
    // The folder went while the file was written: once more, in the recreated folder.
    MESHLEARN_RETURN_IF_ERROR(RecreateIfGone());
    written = WriteFileAtomically(dir_ + "/" + name, bytes);
  }
  MESHLEARN_RETURN_IF_ERROR(written);
  return RecreateIfGone();
}

Status NodeOutputs::WriteCluster(const std::vector<std::pair<std::string, int>>& partition,
                                 int64_t round) {
  std::vector<ClusterLabelRow> rows;
  for (const auto& [node, label] : partition) rows.push_back({node, label, round});
  return Replace(kClusterFile, RenderCsv<ClusterLabelRow>(rows));
}

Status NodeOutputs::WriteEmd(const std::vector<EmdRow>& rows) {
  std::ostringstream csv;
  csv << "peer,emd,ref,accepted,peer_accepted,mutual,witness,threshold,measured_round,measured_s\n";
  auto flag = [](const std::optional<bool>& b) { return b ? (*b ? "1" : "0") : ""; };
  for (const EmdRow& r : rows) {
    csv << JoinPeers({r.peer}) << ',' << ExactNumber(r.emd) << ',' << ExactNumber(r.reference)
        << ',' << flag(r.accepted) << ',' << flag(r.peer_accepted) << ',' << (r.mutual() ? 1 : 0)
        << ',' << (r.witness.empty() ? "" : JoinPeers({r.witness})) << ','
        << ExactNumber(r.threshold) << ','
        << (r.measured_round ? std::to_string(*r.measured_round) : "") << ','
        << ExactNumber(r.measured_seconds) << '\n';
  }
  return Replace(kEmdFile, csv.str());
}

Status NodeOutputs::WriteSignatures(const std::vector<SignatureRow>& rows) {
  std::ostringstream csv;
  csv << "peer,distance,related\n";
  for (const SignatureRow& r : rows) {
    csv << JoinPeers({r.peer}) << ',' << ExactNumber(r.distance) << ',' << (r.related ? 1 : 0)
        << '\n';
  }
  return Replace(kSignatureFile, csv.str());
}

Status NodeOutputs::WriteCommAndScores(const std::vector<topology::CommRow>& comm,
                                       const std::vector<topology::PeerRecord>& scores) {
  MESHLEARN_RETURN_IF_ERROR(Replace(kCommFile, topology::CommCsv(comm)));
  return Replace(kScoresFile, topology::ScoresCsv(scores));
}

}  // namespace meshlearn::node
