// The simulator's scheduling (sim/simulation.h): the virtual clock and its events, the node hosts
// and their jobs, ticks and outages. The snapshot barrier's rules and folder are
// sim/snapshot_barrier.h's; the node logs and progress reports are sim/outputs.h's.
#include "sim/simulation.h"

#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include "base/stable_hash.h"
#include "base/unit_uniform.h"
#include "node/host/checkpoint.h"
#include "node/host/node_host.h"
#include "node/transport/simulated_network.h"
#include "protocol/codec.h"
#include "sim/exchange_turns.h"
#include "sim/heterogeneity.h"
#include "sim/outputs.h"
#include "sim/scheduling.h"
#include "sim/sim_node.h"
#include "sim/snapshot.h"
#include "sim/snapshot_barrier.h"
#include "sim/storage_faults.h"

namespace meshlearn::sim {
namespace {

using node::Clock;
using node::TimePoint;

Clock::duration VirtualSeconds(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

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
  Status WriteOutputFile(const std::string& path, std::string_view bytes) override;
  uint64_t Nonce(const std::string& node_id) override;

 private:
  Simulator& sim_;
  size_t index_;
};

class Simulator {
 public:
  // A simulation of `nodes` nodes with `options`.
  Simulator(const SimulationOptions& options, size_t nodes)
      : options_(options),
        threads_(options.threads > 0
                     ? options.threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
        pool_(threads_),
        clock_(std::make_shared<VirtualClock>()),
        network_(clock_, [this](node::LinkMessage m) { return Transit(m); }),
        loss_rng_(options.seed),
        storage_(options.network.storage, options.seed),
        barrier_(options.snapshot_every, options.snapshot_dir, nodes),
        progress_(options.on_progress) {}

  // Sets up the nodes of `configs` (resuming from the last snapshot with options.resume) and
  // assembles the hosts of those that run.
  Status Prepare(const std::vector<node::NodeConfig>& configs) {
    MESHLEARN_RETURN_IF_ERROR(AddNodes(configs));
    MESHLEARN_RETURN_IF_ERROR(CheckNetworkNames());
    if (options_.schedule == ExchangeSchedule::kSequential) {
      MESHLEARN_RETURN_IF_ERROR(CheckSequentialNodes(configs));
      turns_.emplace(options_.seed, nodes_, *clock_,
                     [this](size_t i, std::function<void()> task) { Deliver(i, std::move(task)); });
    }
    MESHLEARN_RETURN_IF_ERROR(PlanHeterogeneity());
    if ((options_.snapshot_every > 0 || options_.resume) && options_.snapshot_dir.empty()) {
      return Status::InvalidArgument("snapshots need a folder (SimulationOptions::snapshot_dir)");
    }
    int64_t from_round = 0;
    if (options_.resume) {
      auto round = Resume();
      if (!round.ok()) return round.status();
      from_round = *round;
      report_.resumed_from = from_round;
    }
    barrier_.PlanAfter(from_round, LastRounds());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].state != NodeState::kRunning) continue;  // finished before the snapshot
      MESHLEARN_RETURN_IF_ERROR(Build(i).WithContext("node " + nodes_[i].config.id));
    }
    return Status::Ok();
  }

  // Runs the events until every node finished, the interrupt is set, or a barrier stopped it.
  SimulationReport Run() {
    progress_.Start();
    StartAll();
    while (!stop_ && clock_->RunNext()) {
      ++report_.events;
      // With a snapshot barrier ahead the run goes on to it, takes the snapshot and stops there.
      if (options_.interrupt && options_.interrupt->load() && barrier_.next() < 0) {
        report_.interrupted = true;
        break;
      }
      if (progress_.Due(report_.events)) progress_.Report(Progress());
    }
    for (size_t i = 0; i < nodes_.size(); ++i) {
      SimNode& n = nodes_[i];
      if (n.running) n.running->wait();  // no job may outlive its node
      if (n.host) Close(i);              // interrupted: what it has so far
      n.log->flush();
      report_.failures.push_back(n.failure);
    }
    if (report_.interrupted) {  // how far it got
      report_.simulated_seconds = std::max(report_.simulated_seconds, SimulatedSeconds());
    }
    report_.real_seconds = progress_.real_seconds();
    report_.compute_seconds = static_cast<double>(compute_ns_.load()) * 1e-9;
    report_.exchange_compute_seconds = static_cast<double>(exchange_compute_ns_.load()) * 1e-9;
    report_.threads = threads_;
    for (const auto& [kind, count] : storage_.injected()) report_.faults[kind] += count;
    report_.ledger = network_.Ledger();
    if (progress_.wanted()) progress_.Report(Progress());
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
  SimulatedStorage& storage() { return storage_; }

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
  // ---- Setting up.

  // One node per config, each with its world and logger; two may not share an endpoint.
  Status AddNodes(const std::vector<node::NodeConfig>& configs) {
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
      n.log = MakeBufferedNodeLogger(n.config);
      n.world = std::make_unique<SimulatedWorld>(*this, i);
      ids_[n.config.id] = i;
      nodes_.push_back(std::move(n));
    }
    return Status::Ok();
  }

  // Gives each node its outages; every node the [network] names must be one of the run.
  Status CheckNetworkNames() {
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
    return Status::Ok();
  }

  // Restores the simulation and the nodes' checkpoints from the last snapshot
  // (sim/snapshot_barrier.h); the round it was taken after.
  Result<int64_t> Resume() {
    auto snapshot = barrier_.Load(NodeIds(), options_.network.outages.size(), loss_rng_);
    if (!snapshot.ok()) return snapshot.status();
    const SimulationSnapshot& s = *snapshot;
    report_.simulated_seconds = s.simulated_seconds;
    report_.earlier_real_seconds = s.real_seconds;
    report_.earlier_compute_seconds = s.compute_seconds;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      SimNode& n = nodes_[i];
      RestoreFromSnapshot(s.nodes[i], n);
      if (n.state != NodeState::kRunning) continue;
      MESHLEARN_RETURN_IF_ERROR(
          barrier_.RestoreCheckpoint(s.round, n.config.id, node::CheckpointPathOf(n.config)));
    }
    clock_->StartAt(TimePoint{} + std::chrono::nanoseconds(s.virtual_ns));
    return s.round;
  }

  // Each node's id, in config order.
  std::vector<std::string> NodeIds() const {
    std::vector<std::string> ids;
    for (const SimNode& n : nodes_) ids.push_back(n.config.id);
    return ids;
  }

  // Each node's number of rounds, in config order.
  std::vector<int64_t> LastRounds() const {
    std::vector<int64_t> rounds;
    for (const SimNode& n : nodes_) rounds.push_back(n.config.training.rounds);
    return rounds;
  }

  // ---- Node hosts.

  // Assembles node `i`'s host in its world; it resumes from its checkpoint when its folder has
  // one (a restart after a death).
  Status Build(size_t i) {
    SimNode& n = nodes_[i];
    node::HostOptions host_options;
    if (turns_) host_options.turns = turns_->KeeperOf(i);
    if (options_.make_learner) {
      auto learner = options_.make_learner(n.config);
      if (!learner.ok()) return learner.status();
      host_options.learner = std::move(*learner);
    }
    host_options.logger = n.log;
    host_options.bytes_in_before = n.bytes_in_before;
    host_options.bytes_out_before = n.bytes_out_before;
    if (barrier_.next() >= 0 && barrier_.next() < n.config.training.rounds) {
      host_options.hold_before = barrier_.next() + 1;
    }
    auto host = node::NodeHost::Create(n.config, *n.world, std::move(host_options));
    if (!host.ok()) return host.status();
    n.host = std::move(*host);
    return Status::Ok();
  }

  // Writes node `i`'s outputs through the simulated storage (`crash`: it is dying).
  Status FlushOutputs(size_t i, bool crash) {
    SimNode& n = nodes_[i];
    storage_.BeginFlush(
        n.config.id, n.generation,
        std::chrono::duration_cast<std::chrono::nanoseconds>(Now() - TimePoint{}).count(), crash);
    Status written = n.host->Flush();
    storage_.EndFlush();
    return written;
  }

  // Assembles node `i`'s host again after a death. A checkpoint the storage tore is refused by
  // the host with its checksum error; it is moved aside and the node restarts clean, saying so.
  // A torn one that loads is counted as "torn_loaded" (the fuzzer's checkpoint-agrees fails).
  Status Restart(size_t i) {
    SimNode& n = nodes_[i];
    const std::string path = node::CheckpointPathOf(n.config);
    const bool torn = storage_.Torn(path);
    Status built = Build(i);
    if (torn && built.ok()) {
      ++report_.faults["torn_loaded"];
      n.log->error("restarted from the torn checkpoint {} as if it were whole", path);
    }
    if (!torn || built.ok() || built.code() != ErrorCode::kMalformed) return built;
    std::error_code ec;
    std::filesystem::rename(path, path + ".torn", ec);
    if (ec) return built;
    storage_.Forget(path);
    ++report_.faults["torn_refused"];
    n.log->warn(
        "restart refused its checkpoint: {}; kept as {}.torn, restarting clean from round 0",
        built.ToString(), path);
    return Build(i);
  }

  // Starts every node that runs (at the start, after a barrier, or on resuming).
  void StartAll() {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (!nodes_[i].host) {
        UpdateBarrierPlace(i);
        continue;
      }
      Deliver(i, [this, i] { nodes_[i].host->Start(); });
      ScheduleTick(i);
    }
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
      report_.simulated_seconds = std::max(report_.simulated_seconds, SimulatedSeconds());
      n.host->Leave("finished its rounds");
    }
    if (n.host->done()) {
      n.state = NodeState::kFinished;
      Close(i);
    } else {
      TakeDueOutage(i);
    }
    UpdateBarrierPlace(i);
    if (turns_) turns_->Poke();
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
    if (turns_) turns_->Forget(i);
    n.host.reset();  // its transport stops: messages on their way to it are lost
    n.log->flush();
    n.state = state;
  }

  // Writes node `i`'s outputs and lets its host go (it finished, failed, or the run ends).
  void Close(size_t i) {
    SimNode& n = nodes_[i];
    if (!n.host) return;
    NodeState state = n.state;
    n.state = NodeState::kFinished;  // nothing reaches a host being taken apart
    Status written = FlushOutputs(i, /*crash=*/false);
    if (!written.ok() && !n.failure) n.failure = "cannot write outputs: " + written.ToString();
    n.host->LogStopped();
    n.last_round = n.host->completed_round();
    if (options_.with_status) n.final_status = n.host->TakeStatus();
    if (turns_) turns_->Forget(i);
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

  // ---- Learner jobs.

  void StartNextJob(size_t i) {
    SimNode& n = nodes_[i];
    if (n.running || n.jobs.empty() || n.state != NodeState::kRunning) return;
    QueuedJob queued = std::move(n.jobs.front());
    n.jobs.pop_front();
    const bool round_job = std::holds_alternative<node::RoundJob>(queued.job);
    double cost = round_job ? RoundComputeSeconds(i) : 0.0;
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
      round->outcome->train_seconds = RoundComputeSeconds(i);
      round->outcome->eval_seconds = 0;
    }
    auto done = std::move(n.running_done);
    done(std::move(result));
  }

  // ---- The network and outages.

  // How long a message takes on its link (sim/network_model.h), or nullopt when it is lost.
  std::optional<Clock::duration> Transit(node::LinkMessage m) {
    ++report_.messages;
    if (options_.network.loss > 0) {
      if (UnitUniform(loss_rng_) < options_.network.loss) {
        ++report_.faults["lost"];
        return std::nullopt;
      }
    }
    const SimNode& sender = nodes_[ids_.at(m.from)];
    int64_t round = sender.host ? sender.host->completed_round() + 1 : sender.last_round + 1;
    if (options_.network.Cut(m.from, m.to, round)) {
      ++report_.faults["cut"];
      return std::nullopt;
    }
    Damaged damaged = options_.network.Damage(m.frames, loss_rng_);
    report_.faults["corrupted"] += damaged.corrupted;
    report_.faults["truncated"] += damaged.truncated;
    const Clock::duration transit = VirtualSeconds(
        LinkSeconds(profiles_[ids_.at(m.from)], profiles_[ids_.at(m.to)], TotalBytes(m.frames)));
    if (options_.network.Duplicates(loss_rng_)) {
      ++report_.faults["duplicated"];
      m.duplicate = 2 * transit;
    }
    return transit;
  }

  // Starts the outage node `i` has due after its last round, if any.
  void TakeDueOutage(size_t i) {
    SimNode& n = nodes_[i];
    if (!n.outage_due || n.state != NodeState::kRunning) return;
    const Outage& outage = options_.network.outages[*n.outage_due];
    n.outage_due.reset();
    if (outage.kind == OutageKind::kPause) {
      n.log->warn("[network] outage: paused for {:.1f} s", outage.seconds);
      ++report_.faults["pause"];
      n.state = NodeState::kPaused;
      clock_->At(clock_->Now() + VirtualSeconds(outage.seconds), [this, i] { EndOutage(i); });
      return;
    }
    Die(i, outage.seconds, "outage");
  }

  // Node `i` dies now (an outage or churn) and restarts from its checkpoint in `seconds`.
  void Die(size_t i, double seconds, const char* why) {
    SimNode& n = nodes_[i];
    n.log->warn("[network] {}: died; restarting from its checkpoint in {:.1f} s", why, seconds);
    // What a process had on disk when it died: its rows, tables and last checkpoint.
    ++report_.faults["death"];
    Status written = FlushOutputs(i, /*crash=*/true);
    if (!written.ok()) return Fail(i, "cannot write outputs: " + written.ToString());
    n.state = NodeState::kDead;
    Retire(i);
    clock_->At(clock_->Now() + VirtualSeconds(seconds), [this, i] { EndOutage(i); });
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
    Status built = Restart(i);
    if (!built.ok()) {
      n.state = NodeState::kFinished;
      n.failure = "cannot restart: " + built.ToString();
      n.log->error("{}", *n.failure);
      UpdateBarrierPlace(i);
      return;
    }
    n.log->warn("[network] outage over: restarted");
    Deliver(i, [this, i] { nodes_[i].host->Start(); });
    ScheduleTick(i);
  }

  // ---- Heterogeneity and churn (sim/heterogeneity.h).

  // Draws every node's profile and schedules its churn (not combined with snapshots).
  Status PlanHeterogeneity() {
    auto plan = PlanMesh(options_.network, NodeIds(), options_.seed);
    if (!plan.ok()) return plan.status();
    profiles_ = std::move(plan->profiles);
    if (plan->churn.Churns() && (options_.snapshot_every > 0 || options_.resume)) {
      return Status::InvalidArgument("[network] churn cannot be combined with snapshots");
    }
    returned_after_.assign(nodes_.size(), -1);
    ScheduleChurn(*clock_, std::move(plan->churn),
                  [this](size_t i, const Away& away) { return Leave(i, away); });
    return Status::Ok();
  }

  double RoundComputeSeconds(size_t i) const {
    return options_.network.round_compute_s * profiles_[i].compute_factor;
  }

  // Node `i` leaves for `away` (churn) if it runs and completed a round since it last returned,
  // so that every node progresses and every run ends; false once it finished.
  bool Leave(size_t i, const Away& away) {
    SimNode& n = nodes_[i];
    if (n.state == NodeState::kFinished) return false;
    if (n.state != NodeState::kRunning || !n.host || n.leaving) return true;
    if (n.last_round <= returned_after_[i]) return true;
    returned_after_[i] = n.last_round;
    Die(i, away.return_s - away.leave_s, "churn");
    return true;
  }

  // ---- Snapshot barriers (sim/snapshot_barrier.h).

  // Tells the barrier where node `i` is; schedules the barrier when that makes it due.
  void UpdateBarrierPlace(size_t i) {
    const SimNode& n = nodes_[i];
    std::optional<int64_t> completed;
    if (n.state == NodeState::kRunning && n.host) completed = n.host->completed_round();
    if (barrier_.Update(i, n.state == NodeState::kFinished, completed)) {
      clock_->At(clock_->Now(), [this] { Barrier(); });
    }
  }

  // Every node waits after round barrier_.next(): snapshot, then stop or restart them all.
  void Barrier() {
    if (!barrier_.Take()) return;  // someone left the barrier since (an outage)
    const int64_t round = barrier_.next();
    barrier_.Begin(round);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].host) SnapshotNode(i, round);
    }
    Status saved = barrier_.Commit(TakeSnapshot(round));
    if (!saved.ok()) {
      for (SimNode& n : nodes_) n.log->error("cannot write the snapshot: {}", saved.ToString());
    }
    report_.snapshot_round = round;
    barrier_.Clear();
    if (turns_) turns_->Reset();  // every node restarts, as in a resumed run
    if (options_.interrupt && options_.interrupt->load()) {
      report_.interrupted = true;
      stop_ = true;
      return;
    }
    barrier_.PlanAfter(round, LastRounds());
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].state != NodeState::kRunning) continue;
      Status built = Build(i);
      if (!built.ok()) Fail(i, "cannot restart after the snapshot: " + built.ToString());
    }
    StartAll();
  }

  // Writes node `i`'s outputs, keeps its checkpoint in the snapshot of barrier `round` and takes
  // its host apart; a node whose snapshot cannot be written fails.
  void SnapshotNode(size_t i, int64_t round) {
    SimNode& n = nodes_[i];
    node::TransportStats bytes = n.host->transport_stats();
    Status written = FlushOutputs(i, /*crash=*/false);
    n.log->flush();
    if (written.ok()) {
      written = barrier_.KeepCheckpoint(n.config.id, node::CheckpointPathOf(n.config));
    }
    if (!written.ok()) {
      return Fail(i, "cannot write the snapshot of round " + std::to_string(round) + ": " +
                         written.ToString());
    }
    n.bytes_in_before = bytes.bytes_in;
    n.bytes_out_before = bytes.bytes_out;
    n.last_round = n.host->completed_round();
    n.last_val_loss = n.host->last_val_loss();
    Retire(i);
  }

  // The simulation's state at the barrier after round `round` (sim/snapshot.h).
  SimulationSnapshot TakeSnapshot(int64_t round) const {
    SimulationSnapshot s;
    s.round = round;
    s.every = options_.snapshot_every;
    s.virtual_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_->Now() - TimePoint{}).count();
    s.simulated_seconds = report_.simulated_seconds;
    s.real_seconds = report_.earlier_real_seconds + progress_.real_seconds();
    s.compute_seconds =
        report_.earlier_compute_seconds + static_cast<double>(compute_ns_.load()) * 1e-9;
    std::ostringstream generator;
    generator << loss_rng_;
    s.generator = generator.str();
    for (const SimNode& n : nodes_) s.nodes.push_back(SnapshotOf(n));
    return s;
  }

  // ---- Progress.

  double SimulatedSeconds() const { return node::Seconds(clock_->Now() - TimePoint{}); }

  SimulationProgress Progress() const {
    return ProgressOf(nodes_, SimulatedSeconds(), progress_.real_seconds(), report_.events,
                      options_.with_status);
  }

  const SimulationOptions& options_;
  std::atomic<int64_t> compute_ns_{0};           // written by the workers
  std::atomic<int64_t> exchange_compute_ns_{0};  // the part in jobs other than rounds
  int threads_;
  WorkerPool pool_;
  std::shared_ptr<VirtualClock> clock_;
  node::SimulatedNetwork network_;
  std::mt19937_64 loss_rng_;
  SimulatedStorage storage_;
  std::vector<SimNode> nodes_;
  std::unordered_map<std::string, size_t> ids_;  // node id -> node
  SimulationReport report_;
  SnapshotBarrier barrier_;
  ProgressReports progress_;
  bool stop_ = false;                    // stopped at a barrier
  std::optional<SimulatedTurns> turns_;  // the sequential schedule's
  std::vector<NodeProfile> profiles_;    // per node: compute factor and access link
  std::vector<int64_t> returned_after_;  // per node: its last round when it last left (churn)
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

Status SimulatedWorld::WriteOutputFile(const std::string& path, std::string_view bytes) {
  return sim_.storage().Write(path, bytes);
}

}  // namespace

Result<SimulationReport> Simulate(const std::vector<node::NodeConfig>& configs,
                                  const SimulationOptions& options) {
  if (configs.empty()) return Status::InvalidArgument("a simulation needs at least one node");
  Simulator simulator(options, configs.size());
  MESHLEARN_RETURN_IF_ERROR(simulator.Prepare(configs));
  return simulator.Run();
}

}  // namespace meshlearn::sim
