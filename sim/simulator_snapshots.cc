// The simulator's snapshot barriers and resuming from them (sim/simulator.h,
// sim/snapshot_barrier.h).
#include "sim/simulator.h"

namespace meshlearn::sim::internal {

Result<int64_t> Simulator::Resume() {
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

void Simulator::UpdateBarrierPlace(size_t i) {
  const SimNode& n = nodes_[i];
  std::optional<int64_t> completed;
  if (n.state == NodeState::kRunning && n.host) completed = n.host->completed_round();
  if (barrier_.Update(i, n.state == NodeState::kFinished, completed)) {
    clock_->At(clock_->Now(), [this] { Barrier(); });
  }
}

void Simulator::Barrier() {
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

void Simulator::SnapshotNode(size_t i, int64_t round) {
  SimNode& n = nodes_[i];
  Status written = FlushOutputs(i, /*crash=*/false);
  n.log->flush();
  if (written.ok()) {
    written = barrier_.KeepCheckpoint(n.config.id, node::CheckpointPathOf(n.config));
  }
  if (!written.ok()) {
    return Fail(i, "cannot write the snapshot of round " + std::to_string(round) + ": " +
                       written.ToString());
  }
  n.last_round = n.host->completed_round();
  n.last_val_loss = n.host->last_val_loss();
  Retire(i);
}

SimulationSnapshot Simulator::TakeSnapshot(int64_t round) const {
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

}  // namespace meshlearn::sim::internal
