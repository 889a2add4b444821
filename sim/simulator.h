#pragma once
// The simulator behind sim/simulation.h's Simulate(), internal to sim/: one Simulator runs the
// node hosts of a simulation on the virtual clock, each in its SimulatedWorld. Its work is split
// by job:
// - sim/simulation.cc: setting up, the events, the nodes' hosts and their learner jobs;
// - sim/simulator_faults.cc: what goes wrong: the network's faults, outages, churn, and a
//   restart after a death (storage faults included);
// - sim/simulator_snapshots.cc: snapshot barriers and resuming from them.
// The snapshot barrier's rules and folder are sim/snapshot_barrier.h's; the node logs and progress
// reports are sim/outputs.h's.

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
#include "sim/simulation.h"
#include "sim/snapshot.h"
#include "sim/snapshot_barrier.h"
#include "sim/storage_faults.h"

namespace meshlearn::sim::internal {

using node::Clock;
using node::TimePoint;

// `seconds` of virtual time.
inline Clock::duration VirtualSeconds(double seconds) {
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
// One simulation: its clock, network, storage, worker pool and nodes.
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
  Status Prepare(const std::vector<node::NodeConfig>& configs);

  // Runs the events until every node finished, the interrupt is set, or a barrier stopped it.
  SimulationReport Run();

  // SimulatedWorld's side of the simulation.
  TimePoint Now() const { return clock_->Now(); }
  Result<std::unique_ptr<node::Transport>> StartTransport(node::TransportOptions options,
                                                          node::InboundHandler on_request);
  uint64_t Nonce(size_t i, const std::string& node_id) const;
  void Queue(size_t i, QueuedJob job) { nodes_[i].jobs.push_back(std::move(job)); }
  SimulatedStorage& storage() { return storage_; }

  // Runs `task` for node `i` now, as one event of that node: at once while it runs (then what
  // follows every event: its next job, its round's bookkeeping, its outages), later when it is
  // paused, never when it is dead or finished.
  void Deliver(size_t i, std::function<void()> task);

 private:
  // ---- Setting up.

  // One node per config, each with its world and logger; two may not share an endpoint.
  Status AddNodes(const std::vector<node::NodeConfig>& configs);

  // Gives each node its outages; every node the [network] names must be one of the run.
  Status CheckNetworkNames();

  // Restores the simulation and the nodes' checkpoints from the last snapshot
  // (sim/snapshot_barrier.h); the round it was taken after.
  Result<int64_t> Resume();

  // Each node's id, in config order.
  std::vector<std::string> NodeIds() const;

  // Each node's number of rounds, in config order.
  std::vector<int64_t> LastRounds() const;

  // ---- Node hosts.

  // Assembles node `i`'s host in its world; it resumes from its checkpoint when its folder has
  // one (a restart after a death).
  Status Build(size_t i);

  // Writes node `i`'s outputs through the simulated storage (`crash`: it is dying).
  Status FlushOutputs(size_t i, bool crash);

  // Assembles node `i`'s host again after a death. A checkpoint the storage tore is refused by
  // the host with its checksum error; it is moved aside and the node restarts clean, saying so.
  // A torn one that loads is counted as "torn_loaded" (the fuzzer's checkpoint-agrees fails).
  Status Restart(size_t i);

  // Starts every node that runs (at the start, after a barrier, or on resuming).
  void StartAll();

  // Schedules node `i`'s next Tick(), for this incarnation, while it runs.
  void ScheduleTick(size_t i);

  // What follows every event of node `i`.
  void AfterEvent(size_t i);

  // Records the round node `i` completed and makes the outage due after it, if any.
  void NoteRound(size_t i);

  // Takes node `i`'s host apart (its state stays); every event of this incarnation is dropped.
  // Its byte totals so far stay, for the next incarnation to count on from.
  void Retire(size_t i);

  // Writes node `i`'s outputs and lets its host go (it finished, failed, or the run ends).
  void Close(size_t i);

  // Node `i` fails with `why` (logged, in the report) and is closed.
  void Fail(size_t i, const std::string& why);

  // ---- Learner jobs.

  // Hands node `i`'s next queued learner job to the pool, if none runs; it ends after its
  // virtual cost (a round's compute seconds; 0 for other jobs).
  void StartNextJob(size_t i);

  // Gives node `i`'s finished job its result, with virtual timings.
  void EndJob(size_t i);

  // ---- The network and outages.

  // How long a message takes on its link (sim/network_model.h), or nullopt when it is lost.
  std::optional<Clock::duration> Transit(node::LinkMessage m);

  // Starts the outage node `i` has due after its last round, if any.
  void TakeDueOutage(size_t i);

  // Node `i` dies now (an outage or churn) and restarts from its checkpoint in `seconds`.
  void Die(size_t i, double seconds, const char* why);

  // Node `i`'s outage ends: a paused node continues with its deferred events; a dead one
  // restarts from its checkpoint.
  void EndOutage(size_t i);

  // ---- Heterogeneity and churn (sim/heterogeneity.h).

  // Draws every node's profile and schedules its churn (not combined with snapshots).
  Status PlanHeterogeneity();

  // Node `i`'s virtual seconds per round: round_compute_s times its compute factor.
  double RoundComputeSeconds(size_t i) const;

  // Node `i` leaves for `away` (churn) if it runs and completed a round since it last returned,
  // so that every node progresses and every run ends; false once it finished.
  bool Leave(size_t i, const Away& away);

  // ---- Snapshot barriers (sim/snapshot_barrier.h).

  // Tells the barrier where node `i` is; schedules the barrier when that makes it due.
  void UpdateBarrierPlace(size_t i);

  // Every node waits after round barrier_.next(): snapshot, then stop or restart them all.
  void Barrier();

  // Writes node `i`'s outputs, keeps its checkpoint in the snapshot of barrier `round` and takes
  // its host apart; a node whose snapshot cannot be written fails.
  void SnapshotNode(size_t i, int64_t round);

  // The simulation's state at the barrier after round `round` (sim/snapshot.h).
  SimulationSnapshot TakeSnapshot(int64_t round) const;

  // ---- Progress.

  double SimulatedSeconds() const { return node::Seconds(clock_->Now() - TimePoint{}); }

  SimulationProgress Progress() const;

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

}  // namespace meshlearn::sim::internal
