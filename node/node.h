#pragma once
// A running node: the state machine (node/state_machine.h) wired to a transport (ZeroMQ's by
// default, node/transport.h), a learner on its worker thread (node/learner_worker.h), the output
// folder, checkpoints and the optional HTTP status endpoint (node/status_document.h).
//
// Threads: the transport's I/O thread moves bytes; the event thread (the caller of Run()) decodes
// messages and drives the state machine, so serving GetModel never waits for training; the
// worker thread runs the learner's jobs. Several Nodes may run in one process (in-process
// mode); they share nothing but the log sink and, with an in-memory transport, its medium.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/logger.h>

#include "base/status.h"
#include "node/config.h"
#include "node/learner.h"
#include "node/state_machine.h"
#include "node/status_document.h"
#include "node/transport.h"
#include "protocol/messages.h"

namespace meshlearn::node {

// The words of a node's last log line when no peer ever answered its Hello during the whole run
// (the launcher's report looks for them in node.log).
inline constexpr const char* kNeverReachedAPeer = "without ever reaching a peer";

// Live figures of a node, for /status, /metrics and tests.
struct NodeProgress {
  int64_t completed_round = -1;
  bool finished = false;
  bool stopped = false;  // early stopping fired
  double last_val_loss = 0;
  double last_epsilon = 0;  // [privacy]: ε spent after the last completed round; NaN without DP
};

// Sees every message a node receives and decodes (requests and replies) on the node's event
// thread, before the node acts on it. For tracing and for tests of what travels on the wire; it
// must not block and must not keep references into the message.
using MessageObserver = std::function<void(const Message& message)>;

// What a caller may give a node instead of the defaults (tests and simulators inject them).
struct NodeOptions {
  // Receives the node's log lines; default: a stderr logger named after the node at
  // config.log_level.
  std::shared_ptr<spdlog::logger> logger;
  // Sees every received message (see MessageObserver); default: none.
  MessageObserver observer;
  // Does the node's learning; default: CreateLearner(config).
  std::unique_ptr<Learner> learner;
  // Starts the node's transport; default: ZeroMQ (node/zmq_transport.h).
  TransportFactory transport;
};

// The state machine's config for the node of `config`, whose learner is `learner`, listening at
// `endpoint`, with CURVE `keys` when configured, greeting with `nonce` (its half of every EMD
// projection seed; a process draws it at random).
StateMachineConfig MachineConfigOf(const NodeConfig& config, const Learner& learner,
                                   const std::string& endpoint, const std::optional<NodeKeys>& keys,
                                   uint64_t nonce);

// The sampler of the node of `config`.
topology::SamplerConfig SamplerConfigOf(const NodeConfig& config);

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
