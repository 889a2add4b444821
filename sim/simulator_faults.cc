// What goes wrong in a simulation (sim/simulator.h): the network's faults, outages, churn, and a
// restart after a death, with the storage's torn checkpoints.
#include "sim/simulator.h"

namespace meshlearn::sim::internal {

Status Simulator::CheckNetworkNames() {
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

Status Simulator::FlushOutputs(size_t i, bool crash) {
  SimNode& n = nodes_[i];
  storage_.BeginFlush(
      n.config.id, n.generation,
      std::chrono::duration_cast<std::chrono::nanoseconds>(Now() - TimePoint{}).count(), crash);
  Status written = n.host->Flush();
  storage_.EndFlush();
  return written;
}

Status Simulator::Restart(size_t i) {
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
  n.log->warn("restart refused its checkpoint: {}; kept as {}.torn, restarting clean from round 0",
              built.ToString(), path);
  return Build(i);
}

std::optional<Clock::duration> Simulator::Transit(node::LinkMessage m) {
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

void Simulator::TakeDueOutage(size_t i) {
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

void Simulator::Die(size_t i, double seconds, const char* why) {
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

void Simulator::EndOutage(size_t i) {
  SimNode& n = nodes_[i];
  if (n.state == NodeState::kPaused) {
    n.state = NodeState::kRunning;
    n.log->warn("[network] outage over: continuing");
    ScheduleTick(i);
    std::vector<std::function<void()>> deferred = std::move(n.deferred);
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

Status Simulator::PlanHeterogeneity() {
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

double Simulator::RoundComputeSeconds(size_t i) const {
  return options_.network.round_compute_s * profiles_[i].compute_factor;
}

bool Simulator::Leave(size_t i, const Away& away) {
  SimNode& n = nodes_[i];
  if (n.state == NodeState::kFinished) return false;
  if (n.state != NodeState::kRunning || !n.host || n.leaving) return true;
  if (n.last_round <= returned_after_[i]) return true;
  returned_after_[i] = n.last_round;
  Die(i, away.return_s - away.leave_s, "churn");
  return true;
}

}  // namespace meshlearn::sim::internal
