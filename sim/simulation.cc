#include "sim/simulation.h"

#include <spdlog/sinks/basic_file_sink.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <variant>

#include "base/stable_hash.h"
#include "node/checkpoint.h"
#include "node/learner_jobs.h"
#include "node/logging.h"
#include "node/node.h"
#include "node/node_recorder.h"
#include "protocol/codec.h"
#include "topology/sampler_factory.h"

namespace meshlearn::sim {
namespace {

using node::Actions;
using node::Clock;
using node::TimePoint;

constexpr auto kTickInterval = std::chrono::milliseconds(50);

Clock::duration VirtualSeconds(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// A fixed set of threads running learner jobs in the order they were queued.
class WorkerPool {
 public:
  explicit WorkerPool(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Loop(); });
  }
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  // Queues `job`; its result arrives in the returned future.
  std::shared_future<node::LearnerResult> Submit(std::function<node::LearnerResult()> job) {
    auto task = std::make_shared<std::packaged_task<node::LearnerResult()>>(std::move(job));
    std::shared_future<node::LearnerResult> result = task->get_future().share();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back([task] { (*task)(); });
    }
    wake_.notify_one();
    return result;
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (tasks_.empty()) return;  // stopping, with nothing left to run
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// What can happen to a node at a virtual time.
struct RequestArrives {
  size_t from = 0;
  uint64_t from_generation = 0;
  uint64_t request_id = 0;
  Message message;
  uint64_t bytes = 0;
};
struct ReplyArrives {
  uint64_t request_id = 0;
  Message message;
  uint64_t bytes = 0;
};
struct DeadlinePasses {
  uint64_t request_id = 0;
};
struct JobEnds {};
struct TickDue {};
struct OutageEnds {};
using Happening =
    std::variant<RequestArrives, ReplyArrives, DeadlinePasses, JobEnds, TickDue, OutageEnds>;

// An event for one incarnation (`generation`) of a node; a dead node's events never reach the
// node that restarts in its place.
struct Event {
  size_t node = 0;
  uint64_t generation = 0;
  Happening what;
};

enum class NodeState { kRunning, kPaused, kDead, kFinished };

// Who sent an inbound request, so that the reply goes back to it.
struct InboundFrom {
  size_t node = 0;
  uint64_t generation = 0;
  uint64_t request_id = 0;
};

// One simulated node: its logic, its learner, its files, and what it is waiting for.
struct SimNode {
  node::NodeConfig config;
  std::shared_ptr<spdlog::logger> log;
  std::shared_ptr<node::Learner> learner;  // shared with the job under way
  std::unique_ptr<node::NodeStateMachine> machine;
  std::optional<node::NodeRecorder> recorder;
  std::optional<node::Checkpoint> checkpoint;  // the last completed round's, in memory
  node::CheckpointIdentity identity;           // the run its checkpoints belong to
  node::LearnerState learner_state;
  NodeState state = NodeState::kRunning;
  uint64_t generation = 0;
  std::deque<node::LearnerJob> jobs;  // queued behind the running one
  std::optional<std::shared_future<node::LearnerResult>> running;
  std::deque<Happening> deferred;  // arrived while paused, in order
  std::map<node::InboundId, InboundFrom> inbound;
  node::InboundId last_inbound = 0;
  std::set<uint64_t> pending;  // our requests still waiting for a reply or their deadline
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  int64_t last_round = -1;
  double last_val_loss = NAN;
  std::vector<size_t> outages;  // indexes into the network's outages still to come
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
        loss_rng_(options.seed) {}

  Status Prepare(const std::vector<node::NodeConfig>& configs) {
    for (size_t i = 0; i < configs.size(); ++i) {
      SimNode n;
      n.config = configs[i];
      n.identity = node::IdentityOf(n.config);
      if (!index_.emplace(n.config.listen, i).second) {
        return Status::InvalidArgument("nodes '" + nodes_[index_[n.config.listen]].config.id +
                                       "' and '" + n.config.id + "' listen at the same endpoint " +
                                       n.config.listen);
      }
      auto sink =
          std::make_shared<spdlog::sinks::basic_file_sink_mt>(n.config.output_dir + "/node.log");
      n.log = MakeNodeLogger(n.config.id, n.config.log_level, sink);
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
    for (size_t i = 0; i < nodes_.size(); ++i) {
      MESHLEARN_RETURN_IF_ERROR(
          Build(i, /*resume=*/false).WithContext("node " + nodes_[i].config.id));
    }
    return Status::Ok();
  }

  SimulationReport Run() {
    auto real_start = std::chrono::steady_clock::now();
    auto last_progress = real_start;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      Execute(i, nodes_[i].machine->Start(now_));
      TakeDueOutage(i);
      Schedule(now_ + kTickInterval, i, TickDue{});
    }
    while (!queue_.empty()) {
      if (options_.interrupt && options_.interrupt->load()) {
        report_.interrupted = true;
        break;
      }
      auto first = queue_.begin();
      now_ = first->first.first;
      Event event = std::move(first->second);
      queue_.erase(first);
      ++report_.events;
      Dispatch(event);
      if (options_.on_progress && report_.events % 256 == 0) {
        auto real_now = std::chrono::steady_clock::now();
        if (real_now - last_progress >= std::chrono::seconds(1)) {
          last_progress = real_now;
          options_.on_progress(Progress(real_start));
        }
      }
    }
    for (SimNode& n : nodes_) {
      if (n.running) n.running->wait();  // no job may outlive its learner's node
      report_.failures.push_back(n.failure);
    }
    report_.real_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - real_start).count();
    report_.compute_seconds = static_cast<double>(compute_ns_.load()) * 1e-9;
    report_.exchange_compute_seconds = static_cast<double>(exchange_compute_ns_.load()) * 1e-9;
    report_.threads = threads_;
    if (options_.on_progress) options_.on_progress(Progress(real_start));
    return report_;
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
    p.simulated_seconds = node::Seconds(now_ - TimePoint{});
    p.real_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - real_start).count();
    p.events = report_.events;
    if (options_.with_status) {
      for (const SimNode& n : nodes_) {
        if (!n.machine) {  // dead: what it had
          node::NodeStatus dead;
          dead.id = n.config.id;
          dead.endpoint = n.config.listen;
          dead.round = n.last_round;
          dead.rounds = n.config.rounds;
          dead.val_loss = n.last_val_loss;
          p.statuses.push_back(std::move(dead));
          continue;
        }
        node::TransportStats bytes;
        bytes.bytes_in = n.bytes_in;
        bytes.bytes_out = n.bytes_out;
        node::NodeStatus status = node::TakeNodeStatus(
            *n.machine, bytes, n.config.id, n.config.listen, n.config.rounds,
            std::string(NameOf(similarity::MetricKindNames(), n.config.metric)), now_);
        status.val_loss = n.last_val_loss;
        p.statuses.push_back(std::move(status));
      }
    }
    return p;
  }

  // Creates node `i`'s learner, state machine and output files; with `resume`, from its
  // in-memory checkpoint (a restart after a death).
  Status Build(size_t i, bool resume) {
    SimNode& n = nodes_[i];
    auto learner = node::CreateLearner(n.config);
    if (!learner.ok()) return learner.status();
    n.learner = std::shared_ptr<node::Learner>(std::move(*learner));
    auto sampler = topology::MakePeerSampler(node::SamplerConfigOf(n.config));
    if (!sampler.ok()) return sampler.status().WithContext("[learning]");
    std::optional<node::NodeKeys> keys;
    if (n.config.security) {
      auto loaded = node::LoadNodeKeys(n.config);
      if (!loaded.ok()) return loaded.status();
      keys = std::move(*loaded);
    }
    // Deterministic: a process draws its nonce at random; a simulated node derives it.
    uint64_t nonce = StableHash(n.config.id + "#" + std::to_string(n.generation), options_.seed);
    n.machine = std::make_unique<node::NodeStateMachine>(
        node::MachineConfigOf(n.config, *n.learner, n.config.listen, keys, nonce),
        std::move(*sampler), n.log);
    int64_t resume_round = -1;
    if (resume && n.checkpoint) {
      const node::Checkpoint& c = *n.checkpoint;
      MESHLEARN_RETURN_IF_ERROR(n.learner->Restore(c.learner));
      FloatArray served = FloatArray::Own(c.stopped ? c.learner.best_weights : c.learner.weights);
      MESHLEARN_RETURN_IF_ERROR(n.machine->Resume(c.machine, std::move(served), c.stopped));
      n.learner_state = c.learner;
      resume_round = c.round;
    }
    n.recorder.reset();  // closes rounds.csv before it is opened again
    auto outputs = node::NodeOutputs::Open(n.config.output_dir, resume_round, n.log);
    if (!outputs.ok()) return outputs.status();
    n.recorder.emplace(std::move(*outputs), n.config.emd_enabled);
    return Status::Ok();
  }

  void Schedule(TimePoint at, size_t node, Happening what) {
    queue_.emplace(std::make_pair(at, next_seq_++),
                   Event{node, nodes_[node].generation, std::move(what)});
  }

  void Dispatch(Event& event) {
    SimNode& n = nodes_[event.node];
    if (event.generation != n.generation) return;  // meant for a node that has died since
    if (std::holds_alternative<OutageEnds>(event.what)) return EndOutage(event.node);
    if (n.state == NodeState::kPaused) {
      if (!std::holds_alternative<TickDue>(event.what)) n.deferred.push_back(std::move(event.what));
      return;
    }
    if (n.state != NodeState::kRunning) return;  // finished or dead: nothing reaches it
    Happen(event.node, event.what);
  }

  void Happen(size_t i, Happening& what) {
    SimNode& n = nodes_[i];
    if (auto* request = std::get_if<RequestArrives>(&what)) {
      n.bytes_in += request->bytes;
      node::InboundId id = ++n.last_inbound;
      n.inbound[id] = {request->from, request->from_generation, request->request_id};
      Execute(i, n.machine->OnInbound(id, request->message, now_));
    } else if (auto* reply = std::get_if<ReplyArrives>(&what)) {
      if (!n.pending.erase(reply->request_id)) return;  // after its deadline
      n.bytes_in += reply->bytes;
      Execute(i, n.machine->OnReply(reply->request_id, reply->message, now_));
    } else if (auto* deadline = std::get_if<DeadlinePasses>(&what)) {
      if (!n.pending.erase(deadline->request_id)) return;  // answered in time
      Execute(i, n.machine->OnReply(
                     deadline->request_id,
                     Status::Timeout("no reply to request " + std::to_string(deadline->request_id) +
                                     " before its deadline"),
                     now_));
    } else if (std::holds_alternative<JobEnds>(what)) {
      EndJob(i);
    } else if (std::holds_alternative<TickDue>(what)) {
      Execute(i, n.machine->OnTick(now_));
      if (n.state == NodeState::kRunning) Schedule(now_ + kTickInterval, i, TickDue{});
    }
    TakeDueOutage(i);
  }

  // Carries out node `i`'s actions at the current time.
  void Execute(size_t i, Actions actions) {
    SimNode& n = nodes_[i];
    for (node::Action& action : actions) {
      if (std::optional<node::LearnerJob> job = node::JobOf(action)) {
        n.jobs.push_back(std::move(*job));
      } else if (auto* request = std::get_if<node::SendRequest>(&action)) {
        n.pending.insert(request->request_id);
        Schedule(request->deadline, i, DeadlinePasses{request->request_id});
        auto to = index_.find(request->endpoint);
        if (to == index_.end()) continue;  // nobody listens there: the deadline will tell
        uint64_t bytes = TotalBytes(Encode(request->message));
        RequestArrives arrives{i, n.generation, request->request_id, std::move(request->message),
                               bytes};
        Send(i, to->second, nodes_[to->second].generation, std::move(arrives), bytes);
      } else if (auto* reply = std::get_if<node::SendReply>(&action)) {
        auto from = n.inbound.find(reply->inbound);
        if (from == n.inbound.end()) continue;
        InboundFrom requester = from->second;
        n.inbound.erase(from);
        uint64_t bytes = TotalBytes(Encode(reply->message));
        Send(i, requester.node, requester.generation,
             ReplyArrives{requester.request_id, std::move(reply->message), bytes}, bytes);
      } else if (auto* completed = std::get_if<node::RoundCompleted>(&action)) {
        Record(i, completed->record);
      } else if (std::holds_alternative<node::Finished>(action)) {
        Finish(i);
      }
    }
    StartNextJob(i);
  }

  // Sends `what` from node `from` to node `to` (incarnation `generation`): lost, cut by a
  // partition, or delivered after the link's latency and transfer time.
  void Send(size_t from, size_t to, uint64_t generation, Happening what, uint64_t bytes) {
    SimNode& sender = nodes_[from];
    sender.bytes_out += bytes;
    ++report_.messages;
    if (options_.network.loss > 0) {
      double draw = static_cast<double>(loss_rng_() >> 11) * 0x1.0p-53;
      if (draw < options_.network.loss) return;
    }
    int64_t round = sender.machine->completed_round() + 1;
    if (options_.network.Cut(sender.config.id, nodes_[to].config.id, round)) return;
    TimePoint at = now_ + VirtualSeconds(options_.network.TransferSeconds(bytes));
    queue_.emplace(std::make_pair(at, next_seq_++), Event{to, generation, std::move(what)});
  }

  void StartNextJob(size_t i) {
    SimNode& n = nodes_[i];
    if (n.running || n.jobs.empty() || n.state != NodeState::kRunning) return;
    node::LearnerJob job = std::move(n.jobs.front());
    n.jobs.pop_front();
    const bool round_job = std::holds_alternative<node::RoundJob>(job);
    double cost = round_job ? options_.network.round_compute_s : 0.0;
    std::shared_ptr<node::Learner> learner = n.learner;
    n.running = pool_.Submit([this, learner, round_job, job = std::move(job)]() mutable {
      auto start = std::chrono::steady_clock::now();
      node::LearnerResult result = node::RunLearnerJob(*learner, std::move(job));
      const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count();
      compute_ns_ += ns;
      if (!round_job) exchange_compute_ns_ += ns;
      return result;
    });
    ++report_.jobs;
    Schedule(now_ + VirtualSeconds(cost), i, JobEnds{});
  }

  void EndJob(size_t i) {
    SimNode& n = nodes_[i];
    node::LearnerResult result = n.running->get();  // waits for the worker
    n.running.reset();
    if (auto* round = std::get_if<node::RoundDone>(&result)) {
      n.learner_state = round->state;
      if (round->outcome.ok()) {
        // Virtual timings: the real ones would make outputs depend on the machine's load.
        round->outcome->train_seconds = options_.network.round_compute_s;
        round->outcome->eval_seconds = 0;
      }
    }
    Execute(i, node::DeliverResult(*n.machine, result, now_));
  }

  void Record(size_t i, const node::RoundRecord& record) {
    SimNode& n = nodes_[i];
    Status written = n.recorder->AppendRound(record, n.bytes_in, n.bytes_out);
    if (!written.ok())
      return Fail(i, "cannot write outputs of round " + std::to_string(record.round) + ": " +
                         written.ToString());
    n.checkpoint = node::Checkpoint{record.round, record.stopped, n.learner_state,
                                    n.machine->ExportState(), n.identity};
    n.last_round = record.round;
    n.last_val_loss = record.outcome.val_loss;
    for (size_t k = 0; k < n.outages.size(); ++k) {
      if (record.round >= options_.network.outages[n.outages[k]].after_round) {
        n.outage_due = n.outages[k];
        n.outages.erase(n.outages.begin() + static_cast<long>(k));
        break;
      }
    }
  }

  void Finish(size_t i) {
    SimNode& n = nodes_[i];
    n.state = NodeState::kFinished;
    report_.simulated_seconds =
        std::max(report_.simulated_seconds, node::Seconds(now_ - TimePoint{}));
    Status written = n.recorder->WriteTables(*n.machine);
    if (written.ok() && n.checkpoint) {
      written = n.recorder->WriteCheckpoint(*n.checkpoint);
    }
    if (!written.ok()) n.failure = "cannot write outputs: " + written.ToString();
    n.log->info("stopped after round {}", n.machine->completed_round());
  }

  void Fail(size_t i, const std::string& why) {
    SimNode& n = nodes_[i];
    n.log->error("{}", why);
    n.failure = why;
    n.state = NodeState::kFinished;
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
      Schedule(now_ + VirtualSeconds(outage.seconds), i, OutageEnds{});
      return;
    }
    n.log->warn("[network] outage: died; restarting from its checkpoint in {:.1f} s",
                outage.seconds);
    n.state = NodeState::kDead;
    ++n.generation;  // every event of the dead incarnation is dropped
    n.pending.clear();
    n.inbound.clear();
    n.jobs.clear();
    n.running.reset();  // a job under way finishes on its worker; its learner goes with it
    n.machine.reset();
    n.learner.reset();
    n.recorder.reset();
    Schedule(now_ + VirtualSeconds(outage.seconds), i, OutageEnds{});
  }

  void EndOutage(size_t i) {
    SimNode& n = nodes_[i];
    if (n.state == NodeState::kPaused) {
      n.state = NodeState::kRunning;
      n.log->warn("[network] outage over: continuing");
      Schedule(now_ + kTickInterval, i, TickDue{});
      std::deque<Happening> deferred = std::move(n.deferred);
      n.deferred.clear();
      for (Happening& what : deferred) {
        if (n.state != NodeState::kRunning) break;
        Happen(i, what);
      }
      return;
    }
    if (n.state != NodeState::kDead) return;
    Status built = Build(i, /*resume=*/true);
    if (!built.ok()) return Fail(i, "cannot restart: " + built.ToString());
    n.state = NodeState::kRunning;
    n.log->warn("[network] outage over: restarted");
    Execute(i, n.machine->Start(now_));
    Schedule(now_ + kTickInterval, i, TickDue{});
  }

  const SimulationOptions& options_;
  std::atomic<int64_t> compute_ns_{0};           // written by the workers
  std::atomic<int64_t> exchange_compute_ns_{0};  // the part in jobs other than rounds
  int threads_;
  WorkerPool pool_;
  std::mt19937_64 loss_rng_;
  std::vector<SimNode> nodes_;
  std::map<std::string, size_t> index_;  // listen endpoint -> node
  std::map<std::string, size_t> ids_;    // node id -> node
  std::map<std::pair<TimePoint, uint64_t>, Event> queue_;
  uint64_t next_seq_ = 0;
  TimePoint now_{};
  SimulationReport report_;
};

}  // namespace

Result<SimulationReport> Simulate(const std::vector<node::NodeConfig>& configs,
                                  const SimulationOptions& options) {
  if (configs.empty()) return Status::InvalidArgument("a simulation needs at least one node");
  Simulator simulator(options);
  MESHLEARN_RETURN_IF_ERROR(simulator.Prepare(configs));
  return simulator.Run();
}

}  // namespace meshlearn::sim
