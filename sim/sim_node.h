#pragma once
// One node as the simulator (sim/simulation.h) keeps it: its host while it runs, and what outlives
// the host: its state, its counters and the round it reached. Shared by the simulator's parts,
// which each read or write their own fields:
// - the simulator (sim/simulator.h): the host, the state, the job queue, deferred tasks, outages;
// - the snapshot barrier (sim/snapshot_barrier.h): the barrier place, and the fields a snapshot
//   keeps (NodeSnapshot: generation, bytes of earlier incarnations, last round, failure);
// - outputs and progress (sim/outputs.h): the logger and the last round and loss.
// Not thread-safe: only the simulation thread touches a SimNode.

#include <cmath>
#include <cstdint>
#include <functional>
#include <future>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "node/config/config.h"
#include "node/host/node_host.h"
#include "node/host/status_document.h"
#include "node/host/world.h"
#include "node/logic/learner_jobs.h"

namespace meshlearn::sim {

// Where a simulated node is in its life.
enum class NodeState {
  kRunning,   // its host takes events
  kPaused,    // an outage: its events wait until the outage ends
  kDead,      // an outage: no host; it restarts from its checkpoint when the outage ends
  kFinished,  // all rounds done, or failed: no host any more
};

// A learner job waiting for a worker.
struct QueuedJob {
  std::shared_ptr<node::Learner> learner;
  node::LearnerJob job;
  std::function<void(node::LearnerResult)> done;
};

// One simulated node: its host, what it is doing and waiting for.
struct SimNode {
  node::NodeConfig config;
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<node::World> world;
  std::unique_ptr<node::NodeHost> host;  // null while dead, after finishing, between barriers
  NodeState state = NodeState::kRunning;
  uint64_t generation = 0;  // its incarnation: events of an earlier one are dropped
  bool in_event = false;    // a task of this node is running
  bool leaving = false;
  uint64_t bytes_in_before = 0;   // received by its earlier incarnations (barriers, deaths)
  uint64_t bytes_out_before = 0;  // sent by them
  // Queued behind the running one. A list and a vector: an empty libstdc++ deque holds about
  // 600 B, and most of a large mesh's nodes have neither jobs queued nor tasks deferred.
  std::list<QueuedJob> jobs;
  std::optional<std::shared_future<node::LearnerResult>> running;
  std::function<void(node::LearnerResult)> running_done;
  std::vector<std::function<void()>> deferred;  // arrived while paused, in order
  int64_t last_round = -1;
  double last_val_loss = NAN;
  std::optional<node::NodeStatus> final_status;  // once its host is gone
  std::vector<size_t> outages;                   // indexes into the network's outages still to come
  std::optional<size_t> outage_due;
  std::optional<std::string> failure;
};

}  // namespace meshlearn::sim
