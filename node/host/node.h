#pragma once
// A node process: the node host (node/host/node_host.h) in the process world: a transport (ZeroMQ's
// by default, node/transport/transport.h), a learner on its worker thread
// (node/learner/learner_worker.h), the steady clock, durable outputs, and the optional HTTP status
// endpoint (node/host/status_document.h).
//
// Threads: the transport's I/O thread moves bytes; the event thread (the caller of Run()) runs the
// host, which decodes messages and drives the state machine, so serving GetModel never waits for
// training; the worker thread runs the learner's jobs. Several Nodes may run in one process
// (in-process mode); they share nothing but the log sink and, with a simulated network, its
// medium.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/logger.h>

#include "base/status.h"
#include "node/config/config.h"
#include "node/host/node_host.h"
#include "node/host/status_document.h"
#include "node/logic/learner.h"
#include "node/logic/state_machine.h"
#include "node/transport/transport.h"
#include "protocol/messages.h"

namespace meshlearn::node {

// Live figures of a node, for /status, /metrics and tests.
struct NodeProgress {
  int64_t completed_round = -1;
  bool finished = false;
  bool stopped = false;  // early stopping fired
  double last_val_loss = 0;
  double last_epsilon = 0;  // [privacy]: ε spent after the last completed round; NaN without DP
};

// What a caller may give a node instead of the defaults (tests and simulators inject them).
struct NodeOptions {
  // Receives the node's log lines; default: a stderr logger named after the node at
  // config.log_level.
  std::shared_ptr<spdlog::logger> logger;
  // Sees every received message (see MessageObserver); default: none.
  MessageObserver observer;
  // Does the node's learning; default: CreateLearner(config).
  std::unique_ptr<Learner> learner;
  // Starts the node's transport; default: ZeroMQ (node/transport/zmq_transport.h).
  TransportFactory transport;
};

// One meshlearn node.
class Node {
 public:
  // Builds the node of `config`: loads its shard and model (unless `options` brings a learner),
  // starts its transport at its listen endpoint, resumes from `<output_dir>/checkpoint.bin` when
  // present, and starts the HTTP endpoint if configured. Errors name the file, key or endpoint at
  // fault.
  static Result<std::unique_ptr<Node>> Create(const NodeConfig& config, NodeOptions options = {});
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Runs every round, then serves for the linger time. Returns when finished or after Stop();
  // the last completed round is always checkpointed. Errors only for failures of the node itself
  // (e.g. the output folder became unwritable).
  Status Run();
  // Asks Run() to return after the current step (an ongoing local training is finished first).
  // Thread-safe; returns at once.
  void Stop();

  // The endpoint the node listens on (the configured one with an ephemeral port resolved).
  const std::string& endpoint() const;
  // The node's id.
  const std::string& id() const;
  // Progress figures; thread-safe.
  NodeProgress Progress() const;
  // The /status document (JSON): id, round, peers with liveness, scores, probabilities, counters.
  // Thread-safe.
  std::string StatusJson() const;
  // The same status as a typed snapshot (rebuilt at most twice a second). Thread-safe.
  NodeStatus StatusSnapshot() const;
  // The /metrics document (Prometheus text format). Thread-safe.
  std::string MetricsText() const;
  // The HTTP port actually bound, or 0 when the endpoint is off.
  uint16_t http_port() const;

 private:
  class Impl;
  explicit Node(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace meshlearn::node
