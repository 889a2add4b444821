// The simulator's set-up, events, node hosts and learner jobs (sim/simulator.h), and Simulate()
// (sim/simulation.h).
#include "sim/simulation.h"

#include "sim/simulator.h"

namespace meshlearn::sim {
namespace internal {

Status Simulator::Prepare(const std::vector<node::NodeConfig>& configs) {
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

SimulationReport Simulator::Run() {
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

Result<std::unique_ptr<node::Transport>> Simulator::StartTransport(
    node::TransportOptions options, node::InboundHandler on_request) {
  // Rationale: idle connections are closed to free descriptors, which a simulated connection
  // does not hold; closing them would only add an event per idle connection.
  options.idle_connection_timeout = std::chrono::milliseconds::zero();
  return network_.Start(std::move(options), std::move(on_request));
}

uint64_t Simulator::Nonce(size_t i, const std::string& node_id) const {
  // Deterministic: a process draws its nonce at random; a simulated node derives it.
  return StableHash(node_id + "#" + std::to_string(nodes_[i].generation), options_.seed);
}

void Simulator::Deliver(size_t i, std::function<void()> task) {
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

Status Simulator::AddNodes(const std::vector<node::NodeConfig>& configs) {
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

std::vector<std::string> Simulator::NodeIds() const {
  std::vector<std::string> ids;
  for (const SimNode& n : nodes_) ids.push_back(n.config.id);
  return ids;
}

std::vector<int64_t> Simulator::LastRounds() const {
  std::vector<int64_t> rounds;
  for (const SimNode& n : nodes_) rounds.push_back(n.config.training.rounds);
  return rounds;
}

Status Simulator::Build(size_t i) {
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

void Simulator::StartAll() {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i].host) {
      UpdateBarrierPlace(i);
      continue;
    }
    Deliver(i, [this, i] { nodes_[i].host->Start(); });
    ScheduleTick(i);
  }
}

void Simulator::ScheduleTick(size_t i) {
  uint64_t generation = nodes_[i].generation;
  clock_->At(clock_->Now() + node::kTickInterval, [this, i, generation] {
    SimNode& n = nodes_[i];
    if (n.generation != generation || n.state != NodeState::kRunning) return;
    Deliver(i, [this, i] { nodes_[i].host->Tick(); });
    if (nodes_[i].state == NodeState::kRunning) ScheduleTick(i);
  });
}

void Simulator::AfterEvent(size_t i) {
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

void Simulator::NoteRound(size_t i) {
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

void Simulator::Retire(size_t i) {
  SimNode& n = nodes_[i];
  NodeState state = n.state;
  n.state = NodeState::kDead;  // nothing reaches a host being taken apart
  ++n.generation;
  n.jobs.clear();
  n.running.reset();  // a job under way finishes on its worker; its learner goes with it
  n.running_done = nullptr;
  n.leaving = false;
  if (turns_) turns_->Forget(i);
  const node::TransportStats bytes = n.host->transport_stats();
  n.bytes_in_before = bytes.bytes_in;
  n.bytes_out_before = bytes.bytes_out;
  n.host.reset();  // its transport stops: messages on their way to it are lost
  n.log->flush();
  n.state = state;
}

void Simulator::Close(size_t i) {
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

void Simulator::Fail(size_t i, const std::string& why) {
  SimNode& n = nodes_[i];
  n.log->error("{}", why);
  n.failure = why;
  n.state = NodeState::kFinished;
  Close(i);
}

void Simulator::StartNextJob(size_t i) {
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

void Simulator::EndJob(size_t i) {
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

SimulationProgress Simulator::Progress() const {
  return ProgressOf(nodes_, SimulatedSeconds(), progress_.real_seconds(), report_.events,
                    options_.with_status);
}

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

}  // namespace internal

Result<SimulationReport> Simulate(const std::vector<node::NodeConfig>& configs,
                                  const SimulationOptions& options) {
  if (configs.empty()) return Status::InvalidArgument("a simulation needs at least one node");
  internal::Simulator simulator(options, configs.size());
  MESHLEARN_RETURN_IF_ERROR(simulator.Prepare(configs));
  return simulator.Run();
}

}  // namespace meshlearn::sim
