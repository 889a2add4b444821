#include "sim/simulation.h"

#include <spdlog/sinks/base_sink.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "base/atomic_file.h"
#include "base/stable_hash.h"
#include "node/config/logging.h"
#include "node/host/node_host.h"
#include "node/transport/simulated_network.h"
#include "protocol/codec.h"
#include "sim/scheduling.h"
#include "sim/snapshot.h"

namespace meshlearn::sim {
namespace {

using node::Clock;
using node::TimePoint;

Clock::duration VirtualSeconds(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// A node's log, kept in memory and appended to its node.log in batches, so that a simulated node
// holds no file open.
class BufferedFileSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit BufferedFileSink(std::string path) : path_(std::move(path)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    buffer_.append(formatted.data(), formatted.size());
    if (buffer_.size() >= kBatchBytes) flush_();
  }
  void flush_() override {
    if (buffer_.empty()) return;
    std::ofstream out(path_, std::ios::app | std::ios::binary);
    out << buffer_;
    buffer_.clear();
  }

 private:
  static constexpr size_t kBatchBytes = 16 * 1024;
  std::string path_;
  std::string buffer_;
};

enum class NodeState { kRunning, kPaused, kDead, kFinished };

// A learner job waiting for a worker.
struct QueuedJob {
  std::shared_ptr<node::Learner> learner;
  node::LearnerJob job;
  std::function<void(node::LearnerResult)> done;
};

class Simulator;

// The world of one simulated node (node/host/world.h): the simulation's clock, network, worker pool
// and buffered outputs.
class SimulatedWorld final : public node::World {
 public:
  SimulatedWorld(Simulator& sim, size_t index) : sim_(sim), index_(index) {}
  TimePoint Now() const override;
  Result<std::unique_ptr<node::Transport>> StartTransport(node::TransportOptions options,
                                                          node::InboundHandler on_request) override;
  void Post(std::function<void()> task) override;
  void RunJob(std::shared_ptr<node::Learner> learner, node::LearnerJob job,
              std::function<void(node::LearnerResult)> done) override;
  node::OutputKeeping outputs() const override { return node::OutputKeeping::kBuffered; }
  uint64_t Nonce(const std::string& node_id) override;

 private:
  Simulator& sim_;
  size_t index_;
};

// One simulated node: its host, what it is doing and waiting for.
struct SimNode {
  node::NodeConfig config;
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<SimulatedWorld> world;
  std::unique_ptr<node::NodeHost> host;
  NodeState state = NodeState::kRunning;
  uint64_t generation = 0;
  bool in_event = false;  // a task of this node is running
  bool leaving = false;
  bool at_barrier = false;        // waits at the snapshot barrier (or finished)
  uint64_t bytes_in_before = 0;   // received by its earlier incarnations (snapshot barriers)
  uint64_t bytes_out_before = 0;  // sent by them
  std::deque<QueuedJob> jobs;     // queued behind the running one
  std::optional<std::shared_future<node::LearnerResult>> running;
  std::function<void(node::LearnerResult)> running_done;
  std::deque<std::function<void()>> deferred;  // arrived while paused, in order
  int64_t last_round = -1;
  double last_val_loss = NAN;
  std::optional<node::NodeStatus> final_status;  // once its host is gone
  std::vector<size_t> outages;                   // indexes into the network's outages still to come
  std::optional<size_t> outage_due;
  std::optional<std::string> failure;
};

class Simulator {
 public:
  explicit Simulator(const SimulationOptions& options)
      : options_(options),
        threads_(options.threads > 0
                     ? options.threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
        pool_(threads_),
        clock_(std::make_shared<VirtualClock>()),
        network_(clock_, [this](node::LinkMessage m) { return Transit(m); }),
        loss_rng_(options.seed) {}

  Status Prepare(const std::vector<node::NodeConfig>& configs) {
    std::map<std::string, size_t> endpoints;
    nodes_.reserve(configs.size());
    for (size_t i = 0; i < configs.size(); ++i) {
      SimNode n;
      n.config = configs[i];
      if (!endpoints.emplace(n.config.listen, i).second) {
        return Status::InvalidArgument("nodes '" + nodes_[endpoints[n.config.listen]].config.id +
                                       "' and '" + n.config.id + "' listen at the same endpoint " +
                                       n.config.listen);
      }
      n.log = MakeNodeLogger(n.config.id, n.config.log_level,
                             std::make_shared<BufferedFileSink>(n.config.output_dir + "/node.log"));
      // A process flushes every line so that node.log survives its death; a simulated node's log
      // is written where the simulation writes its other outputs (Close, Retire, the end).
      n.log->flush_on(spdlog::level::off);
      n.world = std::make_unique<SimulatedWorld>(*this, i);
      ids_[n.config.id] = i;
      nodes_.push_back(std::move(n));
    }
    for (size_t o = 0; o < options_.network.outages.size(); ++o) {
      const Outage& outage = options_.network.outages[o];
      auto it = ids_.find(outage.node);
      if (it == ids_.end()) {
        return Status::InvalidArgument("[network] outage names node '" + outage.node +
                                       "', which is not a node of this run");
      }
      nodes_[it->second].outages.push_back(o);
    }
    for (const Partition& p : options_.network.partitions) {
      for (const auto& group : p.groups) {
        for (const std::string& id : group) {
          if (!ids_.count(id)) {
            return Status::InvalidArgument("[network] partition names node '" + id +
                                           "', which is not a node of this run");
          }
        }
      }
    }
    if ((options_.snapshot_every > 0 || options_.resume) && options_.snapshot_dir.empty()) {
      return Status::InvalidArgument("snapshots need a folder (SimulationOptions::snapshot_dir)");
    }
    int64_t from_round = 0;
    if (options_.resume) {
      auto round = RestoreSnapshot();
      if (!round.ok()) return round.status();
      from_round = *round;
      report_.resumed_from = from_round;
    }
    next_barrier_ = NextBarrier(from_round);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].state != NodeState::kRunning) continue;  // finished before the snapshot
      MESHLEARN_RETURN_IF_ERROR(Build(i).WithContext("node " + nodes_[i].config.id));
    }
    return Status::Ok();
  }

  SimulationReport Run() {
    real_start_ = std::chrono::steady_clock::now();
    const auto real_start = real_start_;
    auto last_progress = real_start;
    StartAll();
    while (!stop_ && clock_->RunNext()) {
      ++report_.events;
      // With a snapshot barrier ahead the run goes on to it, takes the snapshot and stops there.
      if (options_.interrupt && options_.interrupt->load() && next_barrier_ < 0) {
        report_.interrupted = true;
        break;
      }
      if (options_.on_progress && report_.events % 256 == 0) {
        auto real_now = std::chrono::steady_clock::now();
        if (real_now - last_progress >= std::chrono::seconds(1)) {
          last_progress = real_now;
          options_.on_progress(Progress(real_start));
        }
      }
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      SimNode& n = nodes_[i];
      if (n.running) n.running->wait();  // no job may outlive its node
      if (n.host) Close(i);              // interrupted: what it has so far
      n.log->flush();
      report_.failures.push_back(n.failure);
    }
    if (report_.interrupted) {  // how far it got
      report_.simulated_seconds =
          std::max(report_.simulated_seconds, node::Seconds(clock_->Now() - TimePoint{}));
    }
    report_.real_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - real_start).count();
    report_.compute_seconds = static_cast<double>(compute_ns_.load()) * 1e-9;
    report_.exchange_compute_seconds = static_cast<double>(exchange_compute_ns_.load()) * 1e-9;
    report_.threads = threads_;
    if (options_.on_progress) options_.on_progress(Progress(real_start));
    return report_;
  }

  // SimulatedWorld's side of the simulation.
  TimePoint Now() const { return clock_->Now(); }
  Result<std::unique_ptr<node::Transport>> StartTransport(node::TransportOptions options,
                                                          node::InboundHandler on_request) {
    // Rationale: idle connections are closed to free descriptors, which a simulated connection
    // does not hold; closing them would only add an event per idle connection.
    options.idle_connection_timeout = std::chrono::milliseconds::zero();
    return network_.Start(std::move(options), std::move(on_request));
  }
  uint64_t Nonce(size_t i, const std::string& node_id) const {
    // Deterministic: a process draws its nonce at random; a simulated node derives it.
    return StableHash(node_id + "#" + std::to_string(nodes_[i].generation), options_.seed);
  }
  void Queue(size_t i, QueuedJob job) { nodes_[i].jobs.push_back(std::move(job)); }

  // Runs `task` for node `i` now, as one event of that node: at once while it runs (then what
  // follows every event: its next job, its round's bookkeeping, its outages), later when it is
  // paused, never when it is dead or finished.
  void Deliver(size_t i, std::function<void()> task) {
    SimNode& n = nodes_[i];
    if (n.state == NodeState::kPaused) {
      n.deferred.push_back(std::move(task));
      return;
    }
    if (n.state != NodeState::kRunning || !n.host) return;
    if (n.in_event) return task();  // posted by the event under way: part of it
    n.in_event = true;
    task();
    n.in_event = false;
    AfterEvent(i);
  }

 private:
  SimulationProgress Progress(std::chrono::steady_clock::time_point real_start) const {
    SimulationProgress p;
    double sum = 0;
    int count = 0;
    for (const SimNode& n : nodes_) {
      p.reached.push_back(n.last_round);
      if (n.last_round >= 0 && std::isfinite(n.last_val_loss)) {
        sum += n.last_val_loss;
        ++count;
      }
    }
    p.mean_val_loss = count ? sum / count : NAN;
    p.simulated_seconds = node::Seconds(clock_->Now() - TimePoint{});
    p.real_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - real_start).count();
    p.events = report_.events;
    if (options_.with_status) {
      for (const SimNode& n : nodes_) {
        if (n.host) {
          p.statuses.push_back(n.host->TakeStatus());
        } else if (n.final_status) {
          p.statuses.push_back(*n.final_status);
        } else {  // dead: what it had
          node::NodeStatus dead;
          dead.id = n.config.id;
          dead.endpoint = n.config.listen;
          dead.round = n.last_round;
          dead.rounds = n.config.training.rounds;
          dead.val_loss = n.last_val_loss;
          p.statuses.push_back(std::move(dead));
        }
      }
    }
    return p;
  }

  // Assembles node `i`'s host in its world; it resumes from its checkpoint when its folder has
  // one (a restart after a death).
  Status Build(size_t i) {
    SimNode& n = nodes_[i];
    node::HostOptions host_options;
    host_options.logger = n.log;
    host_options.bytes_in_before = n.bytes_in_before;
    host_options.bytes_out_before = n.bytes_out_before;
    if (next_barrier_ >= 0 && next_barrier_ < n.config.training.rounds) {
      host_options.hold_before = next_barrier_ + 1;
    }
    auto host = node::NodeHost::Create(n.config, *n.world, std::move(host_options));
    if (!host.ok()) return host.status();
    n.host = std::move(*host);
    return Status::Ok();
  }

  // How long a message takes on its link (sim/network_model.h), or nullopt when it is lost.
  std::optional<Clock::duration> Transit(node::LinkMessage m) {
    ++report_.messages;
    if (options_.network.loss > 0) {
      double draw = static_cast<double>(loss_rng_() >> 11) * 0x1.0p-53;
      if (draw < options_.network.loss) return std::nullopt;
    }
    const SimNode& sender = nodes_[ids_.at(m.from)];
    int64_t round = sender.host ? sender.host->completed_round() + 1 : sender.last_round + 1;
    if (options_.network.Cut(m.from, m.to, round)) return std::nullopt;
    options_.network.Damage(m.frames, loss_rng_);
    return VirtualSeconds(options_.network.TransferSeconds(TotalBytes(m.frames)));
  }

  void ScheduleTick(size_t i) {
    uint64_t generation = nodes_[i].generation;
    clock_->At(clock_->Now() + node::kTickInterval, [this, i, generation] {
      SimNode& n = nodes_[i];
      if (n.generation != generation || n.state != NodeState::kRunning) return;
      Deliver(i, [this, i] { nodes_[i].host->Tick(); });
      if (nodes_[i].state == NodeState::kRunning) ScheduleTick(i);
    });
  }

  // What follows every event of node `i`.
  void AfterEvent(size_t i) {
    SimNode& n = nodes_[i];
    if (n.state != NodeState::kRunning || !n.host) return;
    StartNextJob(i);
    if (n.host->completed_round() > n.last_round) NoteRound(i);
    if (!n.host->failure().ok()) return Fail(i, n.host->failure().ToString());
    if (n.host->finished() && !n.leaving) {
      n.leaving = true;
      report_.simulated_seconds =
          std::max(report_.simulated_seconds, node::Seconds(clock_->Now() - TimePoint{}));
      n.host->Leave("finished its rounds");
    }
    if (n.host->done()) {
      n.state = NodeState::kFinished;
      Close(i);
    } else {
      TakeDueOutage(i);
    }
    UpdateBarrierFlag(i);
  }

  // Starts every node that runs (at the start, after a barrier, or on resuming).
  void StartAll() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!nodes_[i].host) {
        UpdateBarrierFlag(i);
        continue;
      }
      Deliver(i, [this, i] { nodes_[i].host->Start(); });
      ScheduleTick(i);
    }
  }

  // The round of the first snapshot barrier after round `round` (-1: none before the last round
  // of every node).
  int64_t NextBarrier(int64_t round) const {
    if (options_.snapshot_every <= 0) return -1;
    int64_t next = round + options_.snapshot_every;
    for (const SimNode& n : nodes_) {
      if (next < n.config.training.rounds) return next;
    }
    return -1;
  }

  // Keeps node `i`'s place at the barrier up to date; the barrier comes once every node is there.
  void UpdateBarrierFlag(size_t i) {
    SimNode& n = nodes_[i];
    bool there = next_barrier_ >= 0 &&
                 (n.state == NodeState::kFinished || (n.state == NodeState::kRunning && n.host &&
                                                      n.host->completed_round() >= next_barrier_));
    if (there != n.at_barrier) {
      n.at_barrier = there;
      if (there) {
        ++at_barrier_;
      } else {
        --at_barrier_;
      }
    }
    if (at_barrier_ == nodes_.size() && !barrier_scheduled_) {
      barrier_scheduled_ = true;
      clock_->At(clock_->Now(), [this] { Barrier(); });
    }
  }

  // Every node waits after round next_barrier_: snapshot, then stop or restart them all.
  void Barrier() {
    barrier_scheduled_ = false;
    if (at_barrier_ != nodes_.size()) return;  // someone left the barrier since (an outage)
    const int64_t round = next_barrier_;
    const std::string round_dir = options_.snapshot_dir + "/round-" + std::to_string(round);
    std::error_code ec;
    std::filesystem::create_directories(round_dir, ec);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      SimNode& n = nodes_[i];
      if (!n.host) continue;
      node::TransportStats bytes = n.host->transport_stats();
      Status written = n.host->Flush();
      n.log->flush();
      if (written.ok()) {
        std::filesystem::copy_file(n.config.output_dir + "/checkpoint.bin",
                                   round_dir + "/" + n.config.id + ".checkpoint.bin",
                                   std::filesystem::copy_options::overwrite_existing, ec);
        if (ec)
          written = Status::IoError(round_dir + ": cannot copy the checkpoint of node " +
                                    n.config.id + ": " + ec.message());
      }
      if (!written.ok()) {
        Fail(i, "cannot write the snapshot of round " + std::to_string(round) + ": " +
                    written.ToString());
        continue;
      }
      n.bytes_in_before = bytes.bytes_in;
      n.bytes_out_before = bytes.bytes_out;
      n.last_round = n.host->completed_round();
      n.last_val_loss = n.host->last_val_loss();
      Retire(i);
    }
    Status saved = WriteFileAtomically(options_.snapshot_dir + "/snapshot.txt",
                                       SnapshotText(TakeSnapshot(round)));
    if (!saved.ok()) {
      for (SimNode& n : nodes_) n.log->error("cannot write the snapshot: {}", saved.ToString());
    }
    for (const auto& entry : std::filesystem::directory_iterator(options_.snapshot_dir, ec)) {
      if (entry.is_directory() && entry.path() != round_dir) {
        std::filesystem::remove_all(entry.path(), ec);
      }
    }
    report_.snapshot_round = round;
    for (SimNode& n : nodes_) n.at_barrier = false;
    at_barrier_ = 0;
    if (options_.interrupt && options_.interrupt->load()) {
      report_.interrupted = true;
      stop_ = true;
      return;
    }
    next_barrier_ = NextBarrier(round);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].state != NodeState::kRunning) continue;
      Status built = Build(i);
      if (!built.ok()) Fail(i, "cannot restart after the snapshot: " + built.ToString());
    }
    StartAll();
  }

  // Takes node `i`'s host apart (its state stays); every event of this incarnation is dropped.
  void Retire(size_t i) {
    SimNode& n = nodes_[i];
    NodeState state = n.state;
    n.state = NodeState::kDead;  // nothing reaches a host being taken apart
    ++n.generation;
    n.jobs.clear();
    n.running.reset();  // a job under way finishes on its worker; its learner goes with it
    n.running_done = nullptr;
    n.leaving = false;
    n.host.reset();  // its transport stops: messages on their way to it are lost
    n.log->flush();
    n.state = state;
  }

  // The simulation's state at the barrier after round `round` (sim/snapshot.h).
  SimulationSnapshot TakeSnapshot(int64_t round) const {
    SimulationSnapshot s;
    s.round = round;
    s.every = options_.snapshot_every;
    s.virtual_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_->Now() - TimePoint{}).count();
    s.simulated_seconds = report_.simulated_seconds;
    s.real_seconds =
        report_.earlier_real_seconds +
        std::chrono::duration<double>(std::chrono::steady_clock::now() - real_start_).count();
    s.compute_seconds =
        report_.earlier_compute_seconds + static_cast<double>(compute_ns_.load()) * 1e-9;
    std::ostringstream generator;
    generator << loss_rng_;
    s.generator = generator.str();
    for (const SimNode& n : nodes_) {
      s.nodes.push_back({n.config.id, n.state == NodeState::kRunning, n.generation,
                         n.bytes_in_before, n.bytes_out_before, n.last_round, n.last_val_loss,
                         n.outages, n.failure});
    }
    return s;
  }

  // Reads the last snapshot, puts its checkpoints back into the node folders and restores the
  // simulation's state; the round it was taken after.
  Result<int64_t> RestoreSnapshot() {
    const std::string path = options_.snapshot_dir + "/snapshot.txt";
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
    const SimulationSnapshot& s = *snapshot;
    if (s.every != options_.snapshot_every) {
      return Status::InvalidArgument(
          path + ": taken with a snapshot every " + std::to_string(s.every) +
          " rounds; resume with the same setting (snapshot_every, --snapshot-every " +
          std::to_string(s.every) + "), since the snapshots are part of what the run computes");
    }
    if (s.nodes.size() != nodes_.size()) {
      return Status::InvalidArgument(path + ": the snapshot holds " +
                                     std::to_string(s.nodes.size()) + " nodes, this run " +
                                     std::to_string(nodes_.size()));
    }
    std::istringstream generator(s.generator);
    if (!(generator >> loss_rng_)) {
      return Status::Malformed(path + ": the network generator's state does not read back");
    }
    report_.simulated_seconds = s.simulated_seconds;
    report_.earlier_real_seconds = s.real_seconds;
    report_.earlier_compute_seconds = s.compute_seconds;
    const std::string round_dir = options_.snapshot_dir + "/round-" + std::to_string(s.round);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      SimNode& n = nodes_[i];
      const NodeSnapshot& saved = s.nodes[i];
      if (saved.id != n.config.id) {
        return Status::InvalidArgument(path + ": node '" + saved.id + "' where this run has '" +
                                       n.config.id + "'");
      }
      for (size_t o : saved.outages) {
        if (o >= options_.network.outages.size()) {
          return Status::InvalidArgument(path + ": node '" + saved.id + "' has outage " +
                                         std::to_string(o) + ", this run's [network] has " +
                                         std::to_string(options_.network.outages.size()));
        }
      }
      n.state = saved.running ? NodeState::kRunning : NodeState::kFinished;
      std::tie(n.generation, n.bytes_in_before, n.bytes_out_before, n.last_round, n.last_val_loss,
               n.outages, n.failure) =
          std::tie(saved.generation, saved.bytes_in, saved.bytes_out, saved.last_round,
                   saved.last_val_loss, saved.outages, saved.failure);
      if (!saved.running) continue;
      std::error_code ec;
      std::filesystem::copy_file(round_dir + "/" + n.config.id + ".checkpoint.bin",
                                 n.config.output_dir + "/checkpoint.bin",
                                 std::filesystem::copy_options::overwrite_existing, ec);
      if (ec) {
        return Status::IoError(round_dir + ": cannot restore the checkpoint of node " +
                               n.config.id + ": " + ec.message());
      }
    }
    clock_->StartAt(TimePoint{} + std::chrono::nanoseconds(s.virtual_ns));
    return s.round;
  }

  void NoteRound(size_t i) {
    SimNode& n = nodes_[i];
    n.last_round = n.host->completed_round();
    n.last_val_loss = n.host->last_val_loss();
    for (size_t k = 0; k < n.outages.size(); ++k) {
      if (n.last_round >= options_.network.outages[n.outages[k]].after_round) {
        n.outage_due = n.outages[k];
        n.outages.erase(n.outages.begin() + static_cast<long>(k));
        break;
      }
    }
  }

  void StartNextJob(size_t i) {
    SimNode& n = nodes_[i];
    if (n.running || n.jobs.empty() || n.state != NodeState::kRunning) return;
    QueuedJob queued = std::move(n.jobs.front());
    n.jobs.pop_front();
    const bool round_job = std::holds_alternative<node::RoundJob>(queued.job);
    double cost = round_job ? options_.network.round_compute_s : 0.0;
    n.running = pool_.Submit([this, learner = std::move(queued.learner), round_job,
                              job = std::move(queued.job)]() mutable {
      auto start = std::chrono::steady_clock::now();
      node::LearnerResult result = node::RunLearnerJob(*learner, std::move(job));
      const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count();
      compute_ns_ += ns;
      if (!round_job) exchange_compute_ns_ += ns;
      return result;
    });
    n.running_done = std::move(queued.done);
    ++report_.jobs;
    uint64_t generation = n.generation;
    clock_->At(clock_->Now() + VirtualSeconds(cost), [this, i, generation] {
      if (nodes_[i].generation != generation) return;
      Deliver(i, [this, i] { EndJob(i); });
    });
  }

  void EndJob(size_t i) {
    SimNode& n = nodes_[i];
    node::LearnerResult result = n.running->get();  // waits for the worker
    n.running.reset();
    if (auto* round = std::get_if<node::RoundDone>(&result); round && round->outcome.ok()) {
      // Virtual timings: the real ones would make outputs depend on the machine's load.
      round->outcome->train_seconds = options_.network.round_compute_s;
      round->outcome->eval_seconds = 0;
    }
    auto done = std::move(n.running_done);
    done(std::move(result));
  }

  // Writes node `i`'s outputs and lets its host go (it finished, failed, or the run ends).
  void Close(size_t i) {
    SimNode& n = nodes_[i];
    if (!n.host) return;
    NodeState state = n.state;
    n.state = NodeState::kFinished;  // nothing reaches a host being taken apart
    Status written = n.host->Flush();
    if (!written.ok() && !n.failure) n.failure = "cannot write outputs: " + written.ToString();
    n.host->LogStopped();
    n.last_round = n.host->completed_round();
    if (options_.with_status) n.final_status = n.host->TakeStatus();
    n.host.reset();
    n.log->flush();
    if (state == NodeState::kPaused || state == NodeState::kDead) n.state = state;
  }

  void Fail(size_t i, const std::string& why) {
    SimNode& n = nodes_[i];
    n.log->error("{}", why);
    n.failure = why;
    n.state = NodeState::kFinished;
    Close(i);
  }

  // Starts the outage node `i` has due after its last round, if any.
  void TakeDueOutage(size_t i) {
    SimNode& n = nodes_[i];
    if (!n.outage_due || n.state != NodeState::kRunning) return;
    const Outage& outage = options_.network.outages[*n.outage_due];
    n.outage_due.reset();
    if (outage.kind == OutageKind::kPause) {
      n.log->warn("[network] outage: paused for {:.1f} s", outage.seconds);
      n.state = NodeState::kPaused;
      clock_->At(clock_->Now() + VirtualSeconds(outage.seconds), [this, i] { EndOutage(i); });
      return;
    }
    n.log->warn("[network] outage: died; restarting from its checkpoint in {:.1f} s",
                outage.seconds);
    // What a process had on disk when it died: its rows, tables and last checkpoint.
    Status written = n.host->Flush();
    if (!written.ok()) return Fail(i, "cannot write outputs: " + written.ToString());
    n.state = NodeState::kDead;
    Retire(i);
    clock_->At(clock_->Now() + VirtualSeconds(outage.seconds), [this, i] { EndOutage(i); });
  }

  void EndOutage(size_t i) {
    SimNode& n = nodes_[i];
    if (n.state == NodeState::kPaused) {
      n.state = NodeState::kRunning;
      n.log->warn("[network] outage over: continuing");
      ScheduleTick(i);
      std::deque<std::function<void()>> deferred = std::move(n.deferred);
      n.deferred.clear();
      for (std::function<void()>& task : deferred) {
        if (n.state != NodeState::kRunning) break;
        Deliver(i, std::move(task));
      }
      return;
    }
    if (n.state != NodeState::kDead) return;
    n.state = NodeState::kRunning;
    Status built = Build(i);
    if (!built.ok()) {
      n.state = NodeState::kFinished;
      n.failure = "cannot restart: " + built.ToString();
      n.log->error("{}", *n.failure);
      UpdateBarrierFlag(i);
      return;
    }
    n.log->warn("[network] outage over: restarted");
    Deliver(i, [this, i] { nodes_[i].host->Start(); });
    ScheduleTick(i);
  }

  const SimulationOptions& options_;
  std::chrono::steady_clock::time_point real_start_;  // when this launch's Run() began
  std::atomic<int64_t> compute_ns_{0};                // written by the workers
  std::atomic<int64_t> exchange_compute_ns_{0};       // the part in jobs other than rounds
  int threads_;
  WorkerPool pool_;
  std::shared_ptr<VirtualClock> clock_;
  node::SimulatedNetwork network_;
  std::mt19937_64 loss_rng_;
  std::vector<SimNode> nodes_;
  std::unordered_map<std::string, size_t> ids_;  // node id -> node
  SimulationReport report_;
  int64_t next_barrier_ = -1;  // the round after which the next snapshot is taken (-1: none)
  size_t at_barrier_ = 0;      // nodes whose at_barrier is set
  bool barrier_scheduled_ = false;
  bool stop_ = false;  // stopped at a barrier
};

TimePoint SimulatedWorld::Now() const { return sim_.Now(); }

Result<std::unique_ptr<node::Transport>> SimulatedWorld::StartTransport(
    node::TransportOptions options, node::InboundHandler on_request) {
  return sim_.StartTransport(std::move(options), std::move(on_request));
}

void SimulatedWorld::Post(std::function<void()> task) { sim_.Deliver(index_, std::move(task)); }

void SimulatedWorld::RunJob(std::shared_ptr<node::Learner> learner, node::LearnerJob job,
                            std::function<void(node::LearnerResult)> done) {
  sim_.Queue(index_, QueuedJob{std::move(learner), std::move(job), std::move(done)});
}

uint64_t SimulatedWorld::Nonce(const std::string& node_id) { return sim_.Nonce(index_, node_id); }

}  // namespace

Result<SimulationReport> Simulate(const std::vector<node::NodeConfig>& configs,
                                  const SimulationOptions& options) {
  if (configs.empty()) return Status::InvalidArgument("a simulation needs at least one node");
  Simulator simulator(options);
  MESHLEARN_RETURN_IF_ERROR(simulator.Prepare(configs));
  return simulator.Run();
}

}  // namespace meshlearn::sim
