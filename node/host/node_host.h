#pragma once
// The node host: the one place a node is assembled (learner, sampler, keys, state machine,
// checkpoint resume, outputs, transport) and the one place its actions are carried out (requests
// and replies encoded and decoded with the real codec, learner jobs, rounds recorded and
// checkpointed, goodbyes). It runs in a World (node/host/world.h): a process (node/host/node.h), or
// the simulator (sim/simulation.h), which differ only there.
//
// Threads: every method is called on the world's node thread, and so is every task the host
// posts; the host itself owns no thread.
//
// Life: Create() -> Start() -> events and Tick()s -> Leave() (when finished() or asked to stop)
// -> done() once every Goodbye was answered or timed out -> Flush() -> destruction, which stops
// the transport.

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/logger.h>

#include "base/deflate.h"
#include "base/status.h"
#include "node/config/config.h"
#include "node/host/checkpoint.h"
#include "node/host/node_recorder.h"
#include "node/host/status_document.h"
#include "node/host/world.h"
#include "node/logic/learner.h"
#include "node/logic/state_machine.h"
#include "node/transport/transport.h"
#include "protocol/codec.h"
#include "protocol/messages.h"

namespace meshlearn::node {

// The words of a node's last log line when no peer ever answered its Hello during the whole run
// (the launcher's report looks for them in node.log).
inline constexpr const char* kNeverReachedAPeer = "without ever reaching a peer";

// "<output_dir>/node.log" (kNodeLogFile): the log file of the node of `config`. A world that
// writes the log itself (the simulator) writes it there; a process's log is its stderr, which the
// launcher sends there.
std::string NodeLogPathOf(const NodeConfig& config);

// The transport options of the node of `config`, with CURVE when `keys` are given: its id,
// announced protocol version, listen endpoint and message limit, and idle connections closed
// after a second. NodeHost::Create and the join check (node/host/join_check.h) start the node's
// transport with them.
TransportOptions NodeTransportOptions(const NodeConfig& config,
                                      const std::optional<NodeKeys>& keys);

// Sees every message a node receives and decodes (requests and replies) on the node's thread,
// before the node acts on it. For tracing and for tests of what travels on the wire; it must not
// block and must not keep references into the message.
using MessageObserver = std::function<void(const Message& message)>;

// Where a node of the sequential exchange schedule (RoundConfig::take_turns; the simulator's
// sim/exchange_turns.h) says what it waits for. Called on the node's thread.
class TurnKeeper {
 public:
  virtual ~TurnKeeper() = default;
  // The node is ready for round `round`: it waits for NodeHost::TakeTurn() (`exchanges`) or,
  // resting, for NodeHost::EndRound().
  virtual void AwaitTurn(int64_t round, bool exchanges) = 0;
  // The node's turn of round `round` is over: it waits for NodeHost::EndRound().
  virtual void TurnOver(int64_t round) = 0;
};

// What a world may give a host instead of the defaults.
struct HostOptions {
  // Receives the node's log lines; default: a stderr logger named after the node.
  std::shared_ptr<spdlog::logger> logger;
  // Sees every received message; default: none.
  MessageObserver observer;
  // Does the node's learning; default: CreateLearner(config).
  std::unique_ptr<Learner> learner;
  // Bytes the node received and sent before this incarnation, added to its transport's counters
  // in rounds.csv and the status (a simulated node restarted at a snapshot barrier or after a
  // death).
  uint64_t bytes_in_before = 0;
  uint64_t bytes_out_before = 0;
  // Set: rounds from this one on never begin (NodeStateMachine::HoldBefore).
  std::optional<int64_t> hold_before;
  // Set: the node takes turns (sequential exchange schedule) and tells `turns` what it waits
  // for; it must outlive the host. Default: the synchronous schedule.
  TurnKeeper* turns = nullptr;
};

// One node in a world.
class NodeHost {
 public:
  // Assembles the node of `config` in `world`: loads its keys (a node with a bad key file does
  // not start), its shard and model (unless `options` brings a learner), starts its transport at
  // its listen endpoint, and resumes from `<output_dir>/checkpoint.bin` when present. Errors name
  // the file, key or endpoint at fault.
  static Result<std::unique_ptr<NodeHost>> Create(const NodeConfig& config, World& world,
                                                  HostOptions options = {});
  ~NodeHost();
  NodeHost(const NodeHost&) = delete;
  NodeHost& operator=(const NodeHost&) = delete;

  // Starts the rounds (or resumes them after the checkpoint's round).
  void Start();
  // Lets time pass: deadlines, pacing and membership gossip (NodeStateMachine::OnTick).
  void Tick();
  // With HostOptions::turns: the node's turn has come (NodeStateMachine::OnTurn).
  void TakeTurn();
  // With HostOptions::turns: the round it awaits the end of has ended
  // (NodeStateMachine::OnRoundEnd).
  void EndRound();
  // Says Goodbye to the peers because of `reason` ("finished its rounds", "stopped", ...); their
  // answers (or deadlines, at most 2 s) arrive as events. A second call does nothing.
  void Leave(const std::string& reason);
  // Writes what the world buffered (OutputKeeping::kBuffered): rounds.csv, the tables and the
  // checkpoint of the last completed round. Durable outputs are already written.
  Status Flush();

  // Logs the node's last line: the round it stopped after, or that it never reached a peer
  // (kNeverReachedAPeer): no peer answered its Hello in this start, nor its GetModel in any start
  // (comm.csv's answered, kept in the checkpoint).
  void LogStopped() const;
  // True once every round is done and the linger time has passed.
  bool finished() const { return machine_->finished(); }
  // True after Leave(), once no Goodbye is outstanding.
  bool done() const { return leaving_ && !machine_->GoodbyesOutstanding(); }
  // A failure of the node itself (its outputs could not be written); Ok while there is none.
  const Status& failure() const { return failure_; }

  // The last completed round (-1 before the first).
  int64_t completed_round() const { return machine_->completed_round(); }
  // True when the last completed round ended in early stopping.
  bool early_stopped() const { return early_stopped_; }
  // The validation loss of the last completed round (NaN before the first).
  double last_val_loss() const { return last_val_loss_; }
  // [privacy]: the ε spent after the last completed round (NaN before the first, or without DP).
  double last_epsilon() const { return last_epsilon_; }
  // The status documents' snapshot at the world's time (bytes: the transport's counters).
  NodeStatus TakeStatus() const;
  // The endpoint the transport listens on.
  const std::string& endpoint() const { return transport_->bound_endpoint(); }
  // The transport's counters, with the bytes of earlier incarnations (HostOptions).
  TransportStats transport_stats() const;
  // The config the node was assembled from.
  const NodeConfig& config() const { return config_; }
  // The node's state machine, for its counters and tables (read-only).
  const NodeStateMachine& machine() const { return *machine_; }
  // The node's logger.
  spdlog::logger& log() const { return *log_; }

 private:
  NodeHost(const NodeConfig& config, World& world);
  Result<int64_t> ResumeFromCheckpoint();
  void LogStart(const std::optional<NodeKeys>& keys);

  // Carries out `actions`, in order.
  void Execute(Actions actions);
  void Do(SendRequest& a);
  void Do(SendReply& a);
  void Do(RoundCompleted& a);
  void Do(AwaitTurn& a);
  void Do(TurnOver& a);
  // The events the world hands over (on the node's thread).
  void OnRequest(InboundRequest& request);
  void OnReply(uint64_t request_id, Result<std::vector<Frame>>& frames);
  void OnJobDone(const LearnerResult& result);
  // After every event: the exchanges' tables follow their changes.
  void AfterEvent();
  Checkpoint CheckpointNow(const RoundRecord& record) const;

  NodeConfig config_;
  World& world_;
  std::shared_ptr<spdlog::logger> log_;
  MessageObserver observer_;
  TurnKeeper* turns_ = nullptr;       // HostOptions::turns
  std::shared_ptr<Learner> learner_;  // shared with a job under way
  std::unique_ptr<NodeStateMachine> machine_;
  std::optional<NodeRecorder> recorder_;
  DecodeOptions decode_options_;
  LearnerState learner_state_;  // after the last computed round, for checkpoints
  CheckpointIdentity identity_;
  std::optional<DeflatedBytes> unwritten_checkpoint_;  // buffered outputs: the last round's
  std::map<InboundId, ReplyToken> tokens_;
  InboundId last_inbound_ = 0;
  Status failure_;
  double last_val_loss_;
  double last_epsilon_ = std::numeric_limits<double>::quiet_NaN();
  bool early_stopped_ = false;
  uint64_t bytes_in_before_ = 0;
  uint64_t bytes_out_before_ = 0;
  bool leaving_ = false;
  // Last: stopped first, so that no handler outlives what it touches.
  std::unique_ptr<Transport> transport_;
};

}  // namespace meshlearn::node
