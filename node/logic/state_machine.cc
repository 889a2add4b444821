#include "node/logic/state_machine.h"

#include "base/stable_hash.h"

namespace meshlearn::node {

NodeStateMachine::NodeStateMachine(StateMachineConfig config,
                                   std::unique_ptr<topology::PeerSampler> sampler,
                                   std::shared_ptr<spdlog::logger> logger)
    : config_(std::move(config)),
      sampler_(std::move(sampler)),
      log_(std::move(logger)),
      requests_(config_.id, log_, config_.protocol_version),
      membership_(config_.membership, Services()),
      server_(config_.serving, requests_),
      emd_(config_.emd, Services(), membership_, server_),
      signatures_(config_.signatures, Services(), membership_),
      driver_(config_.rounds, StableHash(config_.id, config_.seed), Services(), membership_,
              server_, *this) {}

NodeStateMachine::~NodeStateMachine() = default;

Status NodeStateMachine::Resume(const MachineState& state, FloatArray weights, bool stopped) {
  MESHLEARN_RETURN_IF_ERROR(sampler_->Restore(state.sampler).WithContext("checkpoint sampler"));
  membership_.Restore(state.peers);
  return driver_.Restore(state.round, state.wall_seconds, state.comm, state.rng_state,
                         std::move(weights), stopped, state.estimates, state.halted);
}

Actions NodeStateMachine::Start(TimePoint now) {
  Actions out;
  membership_.GreetAll(now, out);
  driver_.Start(now, out);
  return out;
}

Actions NodeStateMachine::OnInbound(InboundId inbound, const Message& message, TimePoint now,
                                    const std::string& proven_key) {
  Actions out;
  const Envelope& env = message.envelope;
  const Body& body = message.body;
  if (Status bound = membership_.CheckSender(env.sender, proven_key); !bound.ok()) {
    out.push_back(requests_.Reject(inbound, env.sender, env.request_id, bound, now));
    return out;
  }
  if (const auto* hello = std::get_if<Hello>(&body)) {
    Hello proven = *hello;
    // With CURVE a peer is known by the key it proved in the handshake, not the one it claims.
    if (!proven_key.empty()) proven.public_key = proven_key;
    membership_.OnHello(inbound, env, proven, now, out);
  } else if (const auto* goodbye = std::get_if<Goodbye>(&body)) {
    membership_.OnGoodbye(inbound, env, *goodbye, out);
  } else if (const auto* get = std::get_if<GetModel>(&body)) {
    server_.OnGetModel(inbound, env, *get, now, driver_.done(), out);
  } else if (const auto* list = std::get_if<PeerList>(&body)) {
    membership_.OnPeerList(inbound, env, *list, now, out);
  } else if (const auto* embed = std::get_if<EmbedRequest>(&body)) {
    emd_.OnEmbedRequest(inbound, env, *embed, now, out);
  } else if (const auto* witnessed = std::get_if<WitnessEmbedRequest>(&body)) {
    emd_.OnWitnessEmbedRequest(inbound, env, *witnessed, now, out);
  } else if (const auto* rows = std::get_if<WitnessRows>(&body)) {
    emd_.OnWitnessRows(inbound, env, *rows, now, out);
  } else if (const auto* decision = std::get_if<EmdDecision>(&body)) {
    emd_.OnDecision(inbound, env, *decision, out);
  } else if (std::holds_alternative<GetSignature>(body)) {
    signatures_.OnGetSignature(inbound, env, now, out);
  } else if (const auto* ping = std::get_if<Ping>(&body)) {
    Pong pong;
    pong.nonce = ping->nonce;
    out.push_back(requests_.ReplyTo(inbound, env.request_id, pong));
  } else {
    out.push_back(requests_.Reject(inbound, env.sender, env.request_id,
                                   Status::InvalidArgument(std::string(MessageTypeName(env.type)) +
                                                           " is not a request this node serves"),
                                   now));
  }
  return out;
}

Actions NodeStateMachine::OnInboundRejected(InboundId inbound, const std::string& sender,
                                            uint64_t request_id, const Status& why, TimePoint now) {
  return {requests_.Reject(inbound, sender, request_id, why, now)};
}

Actions NodeStateMachine::OnReply(uint64_t request_id, const Result<Message>& reply,
                                  TimePoint now) {
  Actions out;
  std::optional<Part> owner = requests_.Close(request_id);
  if (!owner) return out;  // late or unknown: its round has moved on
  const Error* error = reply.ok() ? std::get_if<Error>(&reply->body) : nullptr;
  Status failure = !reply.ok() ? reply.status()
                   : error     ? Status(error->code, "peer answered: " + error->text)
                               : Status::Ok();
  if (!reply.ok() && reply.status().code() != ErrorCode::kTimeout &&
      reply.status().code() != ErrorCode::kUnavailable) {
    ++rejected_replies_;
  }
  switch (*owner) {
    case Part::kMembership:
      membership_.OnReply(request_id, reply, failure, now, out);
      driver_.MaybeBeginPendingRound(now, out);
      break;
    case Part::kRounds:
      driver_.OnReply(request_id, reply, failure, now, out);
      break;
    case Part::kEmd:
      emd_.OnReply(request_id, reply, failure, now, out);
      break;
    case Part::kSignatures:
      signatures_.OnReply(request_id, reply, failure);
      break;
  }
  return out;
}

Actions NodeStateMachine::OnComputeDone(const Result<RoundOutcome>& outcome, TimePoint now) {
  Actions out;
  driver_.OnComputeDone(outcome, now, out);
  return out;
}

Actions NodeStateMachine::OnTurn(TimePoint now) {
  Actions out;
  driver_.OnTurn(now, out);
  return out;
}

Actions NodeStateMachine::OnRoundEnd(TimePoint now) {
  Actions out;
  driver_.OnRoundEnd(now, out);
  return out;
}

Actions NodeStateMachine::OnEmbedDone(const EmbedJob& job,
                                      const Result<ProjectedEmbeddings>& result, TimePoint now) {
  Actions out;
  emd_.OnEmbedDone(job, result, now, out);
  return out;
}

Actions NodeStateMachine::OnEmdDone(const EmdJob& job, const Result<EmdMeasure>& result,
                                    TimePoint now) {
  Actions out;
  emd_.OnEmdDone(job, result, now, out);
  return out;
}

Actions NodeStateMachine::OnOwnProjectionDone(const OwnProjectionJob& job,
                                              const Result<OwnProjection>& result, TimePoint now) {
  Actions out;
  emd_.OnOwnProjectionDone(job, result, now, out);
  return out;
}

Actions NodeStateMachine::OnWitnessEmdDone(const WitnessEmdJob& job, const Result<double>& result,
                                           TimePoint /*now*/) {
  Actions out;
  emd_.OnWitnessEmdDone(job, result, out);
  return out;
}

Actions NodeStateMachine::Leave(const std::string& reason, TimePoint now) {
  Actions out;
  membership_.Leave(reason, now, out);
  return out;
}

Actions NodeStateMachine::OnTick(TimePoint now) {
  Actions out;
  server_.AnswerHeld(now, false, driver_.done(), out);
  emd_.OnTick(now, false, out);
  membership_.OnTick(now, out);
  driver_.OnTick(now, out);
  return out;
}

MachineState NodeStateMachine::ExportState() const {
  MachineState state;
  state.round = driver_.completed_round();
  state.wall_seconds = driver_.completed_wall_seconds();
  state.sampler = sampler_->Snapshot();
  state.comm = driver_.comm().Rows();
  state.peers = membership_.Export();
  state.rng_state = driver_.RngState();
  state.estimates = driver_.ExportEstimates();
  state.halted = driver_.halted().value_or("");
  return state;
}

MachineCounters NodeStateMachine::counters() const {
  MachineCounters c;
  c.rejected_inbound = requests_.rejections().total;
  c.rejected_by_code = requests_.rejections().by_code;
  c.rejected_replies = rejected_replies_;
  c.missed_deadlines = driver_.counters().missed_deadlines;
  c.merge_excluded = driver_.counters().merge_excluded;
  c.refused_peers = membership_.counters().refused_peers;
  c.candidates_ignored = membership_.counters().candidates_ignored;
  c.peers_reached = membership_.counters().verifications;
  c.held_requests_expired = server_.held_requests_expired();
  c.topk_whole_estimates = server_.whole_estimates_sent();
  return c;
}

// ---- RoundHooks ---------------------------------------------------------------------------

void NodeStateMachine::OnRoundStart(int64_t round, TimePoint now, Actions& out) {
  emd_.OnRoundStart(round, now, out);
  signatures_.OnRoundStart(now, out);
}

std::optional<double> NodeStateMachine::ExchangedScore(const std::string& peer) const {
  if (config_.emd.metric) return emd_.ScoreOf(peer);
  if (config_.signatures.metric) return signatures_.ScoreOf(peer);
  return std::nullopt;
}

void NodeStateMachine::Annotate(RoundRecord& record) {
  // FLT: the signature clusters changed since the last round; this round's record shows them.
  if (auto partition = signatures_.TakeUnrecordedPartition()) {
    record.outcome.cluster_partition = std::move(*partition);
  }
}

bool NodeStateMachine::ExchangesInFlight() const {
  return emd_.InFlight() || signatures_.InFlight();
}

void NodeStateMachine::OnFinish(TimePoint now, Actions& out) { emd_.OnFinish(now, out); }

}  // namespace meshlearn::node
