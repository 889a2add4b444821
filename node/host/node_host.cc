#include "node/host/node_host.h"
#include "node/learner/learner_factory.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "node/config/logging.h"
#include "node/host/outputs.h"
#include "node/logic/learner_jobs.h"
#include "node/logic/requests.h"
#include "node/transport/endpoint.h"
#include "protocol/codec.h"
#include "topology/sampler_factory.h"

namespace meshlearn::node {
namespace {

// ", epsilon 1.234" for a round's log line; empty without [privacy].
std::string EpsilonText(double epsilon) {
  if (std::isnan(epsilon)) return "";
  char text[48];
  std::snprintf(text, sizeof(text), ", epsilon %.3f", epsilon);
  return text;
}

// The round after which a restarted node keeps its rounds.csv rows: `resumed`, its checkpoint's.
// The fault fuzzer's canary (tools/fuzz/fuzz_seed.h) plants an off-by-one here: with
// MESHLEARN_FUZZ_CANARY=1 in the environment, the row of the checkpointed round is dropped too,
// leaving a gap that the fuzzer's rounds-contiguous invariant must catch. Only the fuzzer sets
// the variable.
int64_t RowsKeptAfterRestart(int64_t resumed) {
  static const bool planted = [] {
    const char* v = std::getenv("MESHLEARN_FUZZ_CANARY");
    return v && std::string(v) == "1";
  }();
  return planted && resumed >= 0 ? resumed - 1 : resumed;
}

}  // namespace

std::string NodeLogPathOf(const NodeConfig& config) {
  return config.output_dir + "/" + kNodeLogFile;
}

TransportOptions NodeTransportOptions(const NodeConfig& config,
                                      const std::optional<NodeKeys>& keys) {
  TransportOptions options;
  options.node_id = config.id;
  options.protocol_version = config.round.ProtocolVersion();
  options.listen_endpoint = config.listen;
  options.limits.max_message_bytes = config.round.max_message_bytes;
  // Idle connections close after a second: a node meets many peers by gossip but talks to a few
  // per round, and every open connection holds descriptors at both ends.
  options.idle_connection_timeout = std::chrono::seconds(1);
  if (keys) options.curve = CurveOptions{keys->public_key, keys->secret_key, keys->allowed_keys};
  return options;
}

NodeHost::NodeHost(const NodeConfig& config, World& world)
    : config_(config), world_(world), last_val_loss_(std::nan("")) {}

NodeHost::~NodeHost() = default;

Result<std::unique_ptr<NodeHost>> NodeHost::Create(const NodeConfig& config, World& world,
                                                   HostOptions options) {
  std::unique_ptr<NodeHost> host(new NodeHost(config, world));
  host->observer_ = std::move(options.observer);
  host->turns_ = options.turns;
  host->bytes_in_before_ = options.bytes_in_before;
  host->bytes_out_before_ = options.bytes_out_before;
  host->log_ =
      options.logger ? std::move(options.logger) : MakeNodeLogger(config.id, config.log_level);

  // Keys first: a node with a missing or bad key file must not start at all.
  std::optional<NodeKeys> keys;
  if (config.security) {
    auto loaded = LoadNodeKeys(config);
    if (!loaded.ok()) return loaded.status();
    keys = std::move(*loaded);
  }

  if (options.learner) {
    host->learner_ = std::move(options.learner);
  } else {
    auto learner = CreateLearner(config);
    if (!learner.ok()) return learner.status();
    host->learner_ = std::move(*learner);
  }

  std::vector<std::string> members = {config.id};
  for (const PeerAddress& peer : config.peers) members.push_back(peer.id);
  auto sampler = topology::MakePeerSampler(config.learning.Sampler(config.id, members));
  if (!sampler.ok()) return sampler.status().WithContext("[learning]");

  // Bind before anything else talks to peers; the Hello carries the bound endpoint.
  NodeHost* raw = host.get();
  auto transport =
      world.StartTransport(NodeTransportOptions(config, keys), [raw](InboundRequest request) {
        raw->world_.Post(
            [raw, request = std::move(request)]() mutable { raw->OnRequest(request); });
      });
  if (!transport.ok()) return transport.status().WithContext("listen");
  host->transport_ = std::move(*transport);
  host->decode_options_.limits.max_message_bytes = config.round.max_message_bytes;
  host->decode_options_.expected_layout = &host->learner_->Layout();

  StateMachineConfig machine_config = config.Machine(
      *host->learner_,
      NodeFacts{config.advertise.empty() ? host->transport_->bound_endpoint() : config.advertise,
                keys, world.Nonce(config.id)});
  machine_config.rounds.take_turns = options.turns != nullptr;
  host->machine_ = std::make_unique<NodeStateMachine>(std::move(machine_config),
                                                      std::move(*sampler), host->log_);

  if (options.hold_before) host->machine_->HoldBefore(*options.hold_before);
  auto resumed = host->ResumeFromCheckpoint();
  if (!resumed.ok()) return resumed.status();
  const bool buffered = world.outputs() == OutputKeeping::kBuffered;
  auto outputs =
      NodeOutputs::Open(config.output_dir, RowsKeptAfterRestart(*resumed), host->log_,
                        buffered ? NodeOutputs::Mode::kBuffered : NodeOutputs::Mode::kDurable,
                        [&world](const std::string& path, std::string_view bytes) {
                          return world.WriteOutputFile(path, bytes);
                        });
  if (!outputs.ok()) return outputs.status();
  host->recorder_.emplace(std::move(*outputs), config.emd.enabled);
  host->LogStart(keys);
  return host;
}

void NodeHost::Start() {
  Execute(machine_->Start(world_.Now()));
  AfterEvent();
}

void NodeHost::Tick() { Execute(machine_->OnTick(world_.Now())); }

void NodeHost::TakeTurn() {
  Execute(machine_->OnTurn(world_.Now()));
  AfterEvent();
}

void NodeHost::EndRound() {
  Execute(machine_->OnRoundEnd(world_.Now()));
  AfterEvent();
}

void NodeHost::Do(AwaitTurn& a) {
  if (turns_) turns_->AwaitTurn(a.round, a.exchanges);
}

void NodeHost::Do(TurnOver& a) {
  if (turns_) turns_->TurnOver(a.round);
}

void NodeHost::Leave(const std::string& reason) {
  if (leaving_) return;
  leaving_ = true;
  Execute(machine_->Leave(reason, world_.Now()));
}

Status NodeHost::Flush() {
  if (world_.outputs() != OutputKeeping::kBuffered) return Status::Ok();
  Status written = recorder_->WriteTables(*machine_);
  if (written.ok() && unwritten_checkpoint_) {
    Result<std::string> bytes = Inflate(*unwritten_checkpoint_);
    written = bytes.ok() ? recorder_->WriteEncodedCheckpoint(*bytes) : bytes.status();
    if (written.ok()) unwritten_checkpoint_.reset();
  }
  if (written.ok()) written = recorder_->Flush();
  return written;
}

void NodeHost::LogStopped() const {
  // Rationale: peers_reached counts this start only; a node resumed from its checkpoint (after
  // churn or a crash) may find every peer gone, yet its checkpointed counters show the peers that
  // answered it before.
  const std::vector<topology::CommRow> comm = machine_->comm().Rows();
  const bool answered_before = std::any_of(
      comm.begin(), comm.end(), [](const topology::CommRow& row) { return row.answered > 0; });
  if (machine_->counters().peers_reached == 0 && !answered_before) {
    log_->warn(
        "stopped after round {} {}: none answered our Hello (check the [[peers]] addresses, and "
        "that the peers run and allow our key)",
        completed_round(), kNeverReachedAPeer);
  } else {
    log_->info("stopped after round {}", completed_round());
  }
}

TransportStats NodeHost::transport_stats() const {
  TransportStats stats = transport_->Stats();
  stats.bytes_in += bytes_in_before_;
  stats.bytes_out += bytes_out_before_;
  return stats;
}

NodeStatus NodeHost::TakeStatus() const {
  NodeStatus status = TakeNodeStatus(
      *machine_, transport_stats(), config_.id, endpoint(), config_.training.rounds,
      std::string(NameOf(similarity::MetricKindNames(), config_.learning.metric)), world_.Now());
  status.val_loss = last_val_loss_;
  status.epsilon = last_epsilon_;
  return status;
}

void NodeHost::Execute(Actions actions) {
  for (Action& action : actions) {
    if (std::optional<LearnerJob> job = JobOf(action)) {
      world_.RunJob(learner_, std::move(*job), [this](LearnerResult result) {
        world_.Post([this, result = std::move(result)] { OnJobDone(result); });
      });
    } else {
      std::visit(
          [&](auto& a) {
            if constexpr (requires { Do(a); }) Do(a);
          },
          action);
    }
  }
}

void NodeHost::Do(SendRequest& a) {
  uint64_t id = a.request_id;
  transport_->Request(
      a.endpoint, id, Encode(a.message), a.deadline,
      [this, id](Result<std::vector<Frame>> frames) {
        world_.Post([this, id, frames = std::move(frames)]() mutable { OnReply(id, frames); });
      },
      a.public_key);
}

void NodeHost::Do(SendReply& a) {
  auto it = tokens_.find(a.inbound);
  if (it == tokens_.end()) return;
  transport_->Reply(it->second, FramesOf(a));
  tokens_.erase(it);
}

Checkpoint NodeHost::CheckpointNow(const RoundRecord& record) const {
  Checkpoint checkpoint;
  checkpoint.round = record.round;
  checkpoint.stopped = record.stopped;
  checkpoint.learner = learner_state_;
  checkpoint.machine = machine_->ExportState();
  checkpoint.identity = identity_;
  return checkpoint;
}

void NodeHost::Do(RoundCompleted& a) {
  const RoundRecord& r = a.record;
  TransportStats stats = transport_stats();
  last_val_loss_ = r.outcome.val_loss;
  last_epsilon_ = r.outcome.epsilon;
  early_stopped_ = r.stopped;
  Status written = recorder_->AppendRound(r, stats.bytes_in, stats.bytes_out);
  if (world_.outputs() == OutputKeeping::kBuffered) {
    // Rationale: buffered tables are seen only when flushed; rendering them every round for
    // thousands of simulated nodes would spend the run on it. The checkpoint waits deflated:
    // about a third of its encoding, most of which is the generator's state in decimal.
    unwritten_checkpoint_ = Deflate(EncodeCheckpoint(CheckpointNow(r)));
  } else {
    if (written.ok()) written = recorder_->WriteTables(*machine_);
    if (written.ok()) written = recorder_->WriteCheckpoint(CheckpointNow(r));
  }
  if (!written.ok()) {
    log_->error("cannot write outputs of round {}: {}", r.round, written.ToString());
    failure_ = written;
  }
  log_->info(
      "round {} done: val_loss {:.4f} test_loss {:.4f} test_acc {:.4f}, {} of {} peers "
      "answered{}{}",
      r.round, r.outcome.val_loss, r.outcome.test_loss, r.outcome.test_acc, r.answered, r.sampled,
      EpsilonText(r.outcome.epsilon), r.stopped ? " (stopped)" : "");
}

void NodeHost::OnRequest(InboundRequest& request) {
  InboundId id = ++last_inbound_;
  tokens_[id] = request.token;
  const std::vector<Frame>& frames = request.frames;
  Result<Message> decoded = Decode(frames, decode_options_);
  if (decoded.ok()) {
    if (observer_) observer_(*decoded);
    Execute(machine_->OnInbound(id, *decoded, world_.Now(), request.peer_public_key));
  } else {
    // Address the Error with whatever of the envelope decoded, so the requester matches it.
    EnvelopeAddress address =
        frames.empty() ? EnvelopeAddress{} : AddressOf(frames[0], decode_options_.limits);
    Execute(machine_->OnInboundRejected(id, address.sender, address.request_id, decoded.status(),
                                        world_.Now()));
  }
  AfterEvent();
}

void NodeHost::OnReply(uint64_t request_id, Result<std::vector<Frame>>& frames) {
  Result<Message> decoded =
      frames.ok() ? Decode(*frames, decode_options_) : Result<Message>(frames.status());
  if (decoded.ok() && observer_) observer_(*decoded);
  Execute(machine_->OnReply(request_id, decoded, world_.Now()));
  AfterEvent();
}

void NodeHost::OnJobDone(const LearnerResult& result) {
  if (auto* round = std::get_if<RoundDone>(&result)) learner_state_ = round->state;
  Execute(DeliverResult(*machine_, result, world_.Now()));
  AfterEvent();
}

void NodeHost::AfterEvent() {
  if (world_.outputs() == OutputKeeping::kDurable) (void)recorder_->FollowExchanges(*machine_);
}

Result<int64_t> NodeHost::ResumeFromCheckpoint() {
  std::string path = CheckpointPathOf(config_);
  identity_ = IdentityOf(config_);
  auto checkpoint = ReadCheckpointOfRun(path, identity_);
  if (!checkpoint.ok()) {
    if (checkpoint.status().code() == ErrorCode::kNotFound) return int64_t{-1};
    return checkpoint.status();
  }
  if (!checkpoint->identity) {
    log_->warn(
        "{} is in checkpoint format 1, which records neither the run it belongs to nor a "
        "checksum: resuming from it unchecked (the next checkpoint is written in format 2)",
        path);
  }
  MESHLEARN_RETURN_IF_ERROR(learner_->Restore(checkpoint->learner));
  const LearnerState& l = checkpoint->learner;
  FloatArray served = FloatArray::Own(checkpoint->stopped ? l.best_weights : l.weights);
  MESHLEARN_RETURN_IF_ERROR(
      machine_->Resume(checkpoint->machine, std::move(served), checkpoint->stopped));
  learner_state_ = checkpoint->learner;
  log_->info("found checkpoint of round {} in {}", checkpoint->round, path);
  return checkpoint->round;
}

void NodeHost::LogStart(const std::optional<NodeKeys>& keys) {
  log_->info("listening on {}; model {} ({} parameters), {} training samples", endpoint(),
             learner_->ArchitectureId(), learner_->Layout().total_floats(), learner_->TrainSize());
  for (const PeerAddress& peer : config_.peers) {
    // Rationale: ZeroMQ retries an address that does not resolve in silence, for ever.
    if (Status resolved = ResolveTcpEndpoint(peer.endpoint); !resolved.ok()) {
      log_->warn("peer {} cannot be reached: {} (check its [[peers]] address)", peer.id,
                 resolved.message());
    }
  }
  if (keys) {
    log_->info("traffic is encrypted (CURVE); public key {}; {} keys on the allowlist",
               keys->public_key, keys->allowed_keys.size());
    size_t unbound = keys->allowed_keys.size() - keys->key_ids.size();
    if (unbound > 0) {
      log_->warn(
          "{} allowlisted key(s) are bound to no node id: a peer holding one may claim any id "
          "(bind a key with an allowlist line \"<key> <node id>\"; meshlearn-keygen --id)",
          unbound);
    }
  } else {
    log_->warn(
        "traffic is unencrypted and unauthenticated: any host that reaches {} can talk to "
        "this node (configure [security], see configs/README.md)",
        endpoint());
  }
  // The plug-ins it runs (docs/plugins.md), so that a run's log says which files it used.
  for (const TorchScriptChoice& file : TorchScriptChoices(config_)) {
    if (file.chosen && file.plugin) log_->info("plug-in {}: {}", file.choice, file.path);
  }
  if (config_.attack.kind != AttackKind::kNone) {
    log_->warn("[attack] kind = {}: this node {} (robustness experiment)",
               NameOf(AttackKindNames(), config_.attack.kind),
               config_.attack.PoisonsModels() ? "serves poisoned models"
                                              : "lies in the gossip its sampler attack names");
  }
}

}  // namespace meshlearn::node
