#include "node/state_machine.h"

#include <algorithm>
#include <sstream>

#include "protocol/version.h"
#include "similarity/emd_decision.h"
#include "similarity/projection.h"

namespace meshlearn::node {
namespace {

constexpr auto kHelloRetryBase = std::chrono::seconds(1);
constexpr auto kHelloRetryMax = std::chrono::seconds(30);
constexpr auto kRejectionLogInterval = std::chrono::minutes(1);
constexpr int kHellosPerTick = 2;
// Snapshots kept for sync-mode requests of an older round. Rationale: sampled peers lag by at
// most a round or two when every node waits for its peers; each kept snapshot costs one model.
constexpr size_t kSnapshotHistory = 4;

// FNV-1a, a stable mix of the node id into the sampling seed (std::hash is not portable).
uint64_t MixSeed(uint64_t seed, const std::string& id) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  return h;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

NodeStateMachine::NodeStateMachine(StateMachineConfig config,
                                   std::unique_ptr<topology::PeerSampler> sampler,
                                   std::shared_ptr<spdlog::logger> logger)
    : config_(std::move(config)),
      sampler_(std::move(sampler)),
      log_(std::move(logger)),
      peers_(config_.id, config_.dead_after_failures, config_.round_deadline,
             std::chrono::seconds(60)),
      rng_(MixSeed(config_.seed, config_.id)) {
  for (const PeerAddress& p : config_.initial_peers) LearnPeer(p.id, p.endpoint, p.public_key);
}

Status NodeStateMachine::Resume(const MachineState& state, FloatArray weights, bool stopped) {
  MESHLEARN_RETURN_IF_ERROR(sampler_->Restore(state.sampler).WithContext("checkpoint sampler"));
  auto comm = topology::CommCounters::FromRows(state.comm);
  if (!comm.ok()) return comm.status().WithContext("checkpoint counters");
  comm_ = std::move(*comm);
  for (const PeerAddress& p : state.peers) LearnPeer(p.id, p.endpoint, p.public_key);
  if (!state.rng_state.empty()) {
    std::istringstream in(state.rng_state);
    in >> rng_;
    if (!in) return Status::InvalidArgument("checkpoint: unreadable random generator state");
  }
  completed_round_ = state.round;
  Publish(state.round, std::move(weights), stopped);
  return Status::Ok();
}

std::vector<Action> NodeStateMachine::Start(TimePoint now) {
  std::vector<Action> out;
  started_at_ = now;
  round_started_at_ = now;
  for (const topology::PeerEntry& p : peers_.Entries()) SendHello(p.id, now, out);
  if (completed_round_ < 0) {
    phase_ = Phase::kComputing;
    out.push_back(StartCompute{RoundJob{0, {}}});
  } else if (completed_round_ >= config_.rounds) {
    phase_ = Phase::kLingering;
    linger_until_ = now + config_.linger;
  } else {
    log_->info("resuming after round {} from the checkpoint", completed_round_);
    BeginRound(completed_round_ + 1, now, out);
  }
  return out;
}

// ---- rounds ---------------------------------------------------------------------------------

bool NodeStateMachine::HelloOutstanding() const {
  // Only first greetings count: a peer whose Hello already failed is retried in the background
  // and must not delay every round.
  return std::any_of(pending_.begin(), pending_.end(), [&](const auto& p) {
    return p.second.kind == RequestKind::kHello && !hello_attempts_.count(p.second.peer);
  });
}

void NodeStateMachine::BeginRound(int64_t round, TimePoint now, std::vector<Action>& out,
                                  bool may_wait) {
  if (may_wait && HelloOutstanding()) {
    pending_round_ = round;
    pending_round_deadline_ = now + config_.round_deadline;
    phase_ = Phase::kWaitingForPeers;
    return;
  }

  int64_t finished = round - 1;
  if (config_.emd_enabled &&
      (finished == 0 || (config_.emd_refresh > 0 && finished % config_.emd_refresh == 0))) {
    StartEmdExchange(now);
  }
  SendEmdRequests(now, out);

  // Membership gossip: one random active peer learns what we know and tells us what it knows.
  std::vector<std::string> active;
  for (const topology::PeerEntry& p : peers_.Entries()) {
    if (peers_.IsSamplable(p.id, now)) active.push_back(p.id);
  }
  if (!active.empty()) {
    const std::string& target = active[rng_() % active.size()];
    uint64_t id = NextRequestId();
    pending_[id] = {RequestKind::kPeerList, target, round};
    out.push_back(
        RequestTo(*peers_.Find(target), id, PeerList{KnownPeers()}, now + config_.round_deadline));
  }

  round_started_at_ = now;
  fetch_ = Fetch{};
  fetch_.round = round;
  fetch_.deadline = now + config_.round_deadline;
  fetch_.sampled = sampler_->Sample(
      static_cast<size_t>(config_.peers_per_round),
      [&](std::string_view peer) { return peers_.IsSamplable(peer, now); }, rng_);
  phase_ = Phase::kFetching;
  for (const topology::SampledPeer& s : fetch_.sampled) {
    comm_.RecordSampled(s.peer);
    uint64_t id = NextRequestId();
    pending_[id] = {RequestKind::kGetModel, s.peer, round};
    ++fetch_.outstanding;
    out.push_back(
        RequestTo(*peers_.Find(s.peer), id, GetModel{round - 1, config_.sync}, fetch_.deadline));
  }
  if (fetch_.outstanding == 0) FinishFetch(out);
}

void NodeStateMachine::FinishFetch(std::vector<Action>& out) {
  // Requests still outstanding missed the deadline; their late replies are ignored.
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.kind == RequestKind::kGetModel) {
      ++counters_.missed_deadlines;
      log_->info("round {}: peer {} missed the deadline; skipped this round", fetch_.round,
                 it->second.peer);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  fetch_.outstanding = 0;
  phase_ = Phase::kComputing;
  out.push_back(StartCompute{RoundJob{fetch_.round, fetch_.answered}});
}

std::vector<Action> NodeStateMachine::OnComputeDone(const Result<RoundOutcome>& result,
                                                    TimePoint now) {
  std::vector<Action> out;
  if (phase_ != Phase::kComputing) return out;
  int64_t round = fetch_.round;
  RoundRecord record;
  record.round = round;
  record.sampled = static_cast<int>(fetch_.sampled.size());
  record.answered = static_cast<int>(fetch_.answered.size());
  for (const topology::SampledPeer& p : fetch_.sampled) record.sampled_peers.push_back(p.peer);
  if (!result.ok()) {
    // The node's own computation failed (e.g. a NaN loss): keep the last snapshot, record the
    // round as stopped so the run's tables show it, and stop learning.
    log_->error("round {}: {}; the node stops learning and keeps serving its last model", round,
                result.status().ToString());
    record.stopped = true;
    record.outcome.round = round;
    Publish(round, HavePublished() ? Latest().weights : FloatArray(), true);
  } else {
    const RoundOutcome& outcome = *result;
    std::vector<topology::PeerObservation> observations;
    for (const PeerScoreOutcome& s : outcome.scores) {
      if (!s.score) {
        log_->warn("round {}: could not score peer {}: {}", round, s.peer, s.error.ToString());
        continue;
      }
      auto row = fetch_.rows.find(s.peer);
      observations.push_back(
          {s.peer, *s.score, row == fetch_.rows.end() ? topology::ScoreRow{} : row->second});
    }
    if (round > 0) {
      Status updated = sampler_->Update(round, observations);
      if (!updated.ok())
        log_->warn("round {}: sampler update rejected: {}", round, updated.ToString());
    }
    counters_.merge_excluded += static_cast<uint64_t>(outcome.excluded_by_min_score);
    record.outcome = outcome;
    record.outcome.published_weights = FloatArray();
    record.stopped = outcome.stopped;
    Publish(round, outcome.published_weights, outcome.stopped);
  }
  record.wall_seconds = Seconds(now - started_at_);
  completed_round_ = round;
  AnswerHeld(now, false, out);
  out.push_back(RoundCompleted{std::move(record)});

  if (round >= config_.rounds) {
    phase_ = Phase::kLingering;
    linger_until_ = now + config_.linger;
    log_->info("all {} rounds done; serving for {:.1f} s more", config_.rounds,
               Seconds(config_.linger));
    AnswerHeld(now, true, out);
  } else if (now < round_started_at_ + config_.min_round) {
    phase_ = Phase::kPacing;
    next_round_at_ = round_started_at_ + config_.min_round;
  } else {
    BeginRound(round + 1, now, out);
  }
  return out;
}

void NodeStateMachine::Publish(int64_t round, FloatArray weights, bool stopped) {
  Snapshot snapshot;
  snapshot.round = round;
  snapshot.weights = std::move(weights);
  snapshot.early_stopped = stopped;
  for (const topology::ScoreEntry& e : sampler_->Scores()) {
    snapshot.score_row.push_back({e.peer, e.score});
  }
  history_.push_back(std::move(snapshot));
  while (history_.size() > kSnapshotHistory) history_.pop_front();
}

// ---- replies to our requests ------------------------------------------------------------------

std::vector<Action> NodeStateMachine::OnReply(uint64_t request_id, const Result<Message>& reply,
                                              TimePoint now) {
  std::vector<Action> out;
  auto it = pending_.find(request_id);
  if (it == pending_.end()) return out;  // late or unknown: its round has moved on
  Pending pending = it->second;
  pending_.erase(it);

  const Error* error = reply.ok() ? std::get_if<Error>(&reply->body) : nullptr;
  Status failure = !reply.ok() ? reply.status()
                   : error     ? Status(error->code, "peer answered: " + error->text)
                               : Status::Ok();
  if (!reply.ok() && reply.status().code() != ErrorCode::kTimeout &&
      reply.status().code() != ErrorCode::kUnavailable) {
    ++counters_.rejected_replies;
  }

  switch (pending.kind) {
    case RequestKind::kHello: {
      const auto* ack = failure.ok() ? std::get_if<HelloAck>(&reply->body) : nullptr;
      if (ack && ack->architecture_id == config_.architecture_id) {
        // With CURVE the peer proved the key we connected with; that one is kept.
        const topology::PeerEntry* entry = peers_.Find(pending.peer);
        Admit(pending.peer, *ack,
              entry && !entry->public_key.empty() ? entry->public_key : ack->public_key);
        next_hello_at_.erase(pending.peer);
        hello_attempts_.erase(pending.peer);
      } else if (ack || failure.code() == ErrorCode::kRefused) {
        ++counters_.refused_peers;
        log_->error("peer {} refused: {}", pending.peer,
                    ack ? "its model architecture '" + ack->architecture_id +
                              "' differs from ours '" + config_.architecture_id + "'"
                        : failure.message());
        peers_.Forget(pending.peer);
        next_hello_at_.erase(pending.peer);
      } else {
        int attempt = ++hello_attempts_[pending.peer];
        auto delay = kHelloRetryBase * (1 << std::min(attempt, 5));
        next_hello_at_[pending.peer] = now + std::min<Clock::duration>(delay, kHelloRetryMax);
        if (attempt == 1 && config_.allowed_keys && failure.code() == ErrorCode::kTimeout) {
          // A peer that does not allowlist our key looks exactly like one that is down.
          log_->warn(
              "peer {} did not answer our Hello: it is down, or its allowlist lacks our public "
              "key {}; retrying later",
              pending.peer, config_.public_key);
        }
        log_->debug("Hello to {} failed ({}); retrying later", pending.peer, failure.ToString());
      }
      MaybeBeginPendingRound(now, out);
      break;
    }
    case RequestKind::kPeerList: {
      if (const auto* list = failure.ok() ? std::get_if<PeerList>(&reply->body) : nullptr) {
        Learn(list->peers, now);
      }
      break;
    }
    case RequestKind::kEmbed: {
      const auto* reply_body = failure.ok() ? std::get_if<EmbedReply>(&reply->body) : nullptr;
      if (!reply_body) {
        if (failure.ok())
          failure = Status::Malformed("EmbedRequest was not answered with EmbedReply");
        log_->warn("EMD exchange with {} failed: {}", pending.peer, failure.ToString());
        break;
      }
      ++emd_jobs_running_;
      out.push_back(StartEmd{EmdJob{pending.peer,
                                    {reply_body->rows, reply_body->cols, reply_body->embeddings},
                                    pending.projection_seed,
                                    config_.emd_max_samples}});
      break;
    }
    case RequestKind::kEmdDecision:
      break;  // the peer echoes our decision as an acknowledgement
    case RequestKind::kGetModel: {
      if (phase_ != Phase::kFetching || pending.round != fetch_.round) break;
      --fetch_.outstanding;
      const auto* model = failure.ok() ? std::get_if<Model>(&reply->body) : nullptr;
      if (model) {
        peers_.RecordSuccess(pending.peer);
        (void)comm_.RecordAnswered(pending.peer);
        double probability = 0;
        for (const auto& s : fetch_.sampled) {
          if (s.peer == pending.peer) probability = s.probability;
        }
        std::optional<double> exchanged;
        auto emd = emd_.find(pending.peer);
        if (emd != emd_.end() && emd->second.emd && emd->second.reference) {
          exchanged = *emd->second.emd - *emd->second.reference;
        }
        fetch_.answered.push_back(
            {pending.peer, model->weights, model->train_size, probability, exchanged});
        topology::ScoreRow row;
        for (const PeerScore& s : model->score_row) row.push_back({s.peer, s.score});
        fetch_.rows[pending.peer] = std::move(row);
      } else {
        if (failure.ok()) failure = Status::Malformed("GetModel was not answered with a Model");
        ++counters_.missed_deadlines;
        log_->info("round {}: peer {} gave no model ({}); skipped this round", fetch_.round,
                   pending.peer, failure.ToString());
        if (peers_.RecordFailure(pending.peer, now)) {
          log_->warn("peer {} failed {} times in a row: marked dead, retried later", pending.peer,
                     config_.dead_after_failures);
        }
      }
      if (fetch_.outstanding == 0) FinishFetch(out);
      break;
    }
  }
  return out;
}

void NodeStateMachine::MaybeBeginPendingRound(TimePoint now, std::vector<Action>& out) {
  if (!pending_round_) return;
  if (HelloOutstanding() && now < pending_round_deadline_) return;
  // Every Hello resolved, or the wait hit its deadline: start without the slow peers.
  int64_t round = *pending_round_;
  pending_round_.reset();
  BeginRound(round, now, out, /*may_wait=*/false);
}

// ---- membership -------------------------------------------------------------------------------

Hello NodeStateMachine::OwnHello() const {
  return Hello{config_.listen_endpoint, config_.architecture_id, config_.metric, config_.public_key,
               config_.nonce};
}

SendRequest NodeStateMachine::RequestTo(const topology::PeerEntry& peer, uint64_t request_id,
                                        Body body, TimePoint deadline) const {
  return SendRequest{
      peer.id, peer.endpoint, peer.public_key, request_id, Reply(request_id, std::move(body)),
      deadline};
}

void NodeStateMachine::SendHello(const std::string& peer, TimePoint now, std::vector<Action>& out) {
  const topology::PeerEntry* entry = peers_.Find(peer);
  if (!entry) return;
  for (const auto& [id, p] : pending_) {
    if (p.kind == RequestKind::kHello && p.peer == peer) return;  // already greeting
  }
  uint64_t id = NextRequestId();
  pending_[id] = {RequestKind::kHello, peer, 0};
  next_hello_at_.erase(peer);
  out.push_back(RequestTo(*entry, id, OwnHello(), now + config_.round_deadline));
}

bool NodeStateMachine::KeyAllowed(const std::string& public_key) const {
  return !config_.allowed_keys || config_.allowed_keys->contains(public_key);
}

bool NodeStateMachine::LearnPeer(const std::string& id, const std::string& endpoint,
                                 const std::string& public_key) {
  if (!KeyAllowed(public_key)) {
    log_->debug("ignored peer {} at {}: its public key '{}' is not on the allowlist", id, endpoint,
                public_key);
    return false;
  }
  // Only the peer itself, by proving a new key in a handshake (Admit), changes a key we know.
  // Rationale: otherwise one allowlisted node could redirect us to itself under another's id.
  const topology::PeerEntry* known = peers_.Find(id);
  if (config_.allowed_keys && known && !known->public_key.empty() &&
      known->public_key != public_key) {
    log_->debug("ignored peer {} at {} with public key '{}': we know it with another key", id,
                endpoint, public_key);
    return false;
  }
  return peers_.Learn(id, endpoint, public_key);
}

void NodeStateMachine::Learn(const std::vector<PeerInfo>& peers, TimePoint now) {
  for (const PeerInfo& p : peers) {
    if (p.id.empty() || p.id == config_.id || p.endpoint.empty()) continue;
    if (LearnPeer(p.id, p.endpoint, p.public_key)) {
      log_->info("learned peer {} at {} by gossip", p.id, p.endpoint);
      next_hello_at_[p.id] = now;  // greeted from OnTick, a few per tick
    }
  }
}

void NodeStateMachine::Admit(const std::string& peer, const Hello& hello,
                             const std::string& public_key) {
  bool is_new = peers_.Find(peer) == nullptr || !peers_.Find(peer)->active;
  peers_.Learn(peer, hello.listen_endpoint, public_key);
  peers_.MarkActive(peer);
  peers_.RecordSuccess(peer);
  nonces_[peer] = hello.nonce;
  if (!sampler_->HasPeer(peer)) (void)sampler_->AddPeer(peer);
  if (is_new) log_->info("peer {} joined ({})", peer, hello.listen_endpoint);
}

std::vector<PeerInfo> NodeStateMachine::KnownPeers() const {
  std::vector<PeerInfo> known;
  known.push_back({config_.id, config_.listen_endpoint, config_.public_key});
  for (const topology::PeerEntry& p : peers_.Entries()) {
    if (p.active) known.push_back({p.id, p.endpoint, p.public_key});
  }
  return known;
}

// ---- serving ----------------------------------------------------------------------------------

Message NodeStateMachine::Reply(uint64_t request_id, Body body) const {
  return MakeMessage(config_.id, request_id, std::max<int64_t>(completed_round_, 0),
                     std::move(body));
}

Message NodeStateMachine::ModelMessage(uint64_t request_id, int64_t min_round, bool wait) const {
  const Snapshot* chosen = &Latest();
  if (wait) {
    for (const Snapshot& s : history_) {
      if (s.round >= min_round) {
        chosen = &s;
        break;
      }
    }
  }
  Model model;
  model.round = chosen->round;
  model.train_size = config_.train_size;
  model.early_stopped = chosen->early_stopped;
  model.layout = config_.layout;
  model.score_row = chosen->score_row;
  model.weights = chosen->weights;
  return Reply(request_id, std::move(model));
}

void NodeStateMachine::Reject(InboundId inbound, const std::string& sender, uint64_t request_id,
                              const Status& why, TimePoint now, std::vector<Action>& out) {
  ++counters_.rejected_inbound;
  ++counters_.rejected_by_code[ErrorCodeName(why.code())];
  std::string who = sender.empty() ? "an unidentified peer" : "peer " + sender;
  auto last = last_rejection_log_.find(who);
  if (last == last_rejection_log_.end() || now - last->second >= kRejectionLogInterval) {
    last_rejection_log_[who] = now;
    log_->warn("rejected a message from {}: {} (logged once a minute per peer; see /status)", who,
               why.ToString());
  }
  out.push_back(SendReply{inbound, Reply(request_id, Error{why.code(), why.message()})});
}

std::vector<Action> NodeStateMachine::OnInboundRejected(InboundId inbound,
                                                        const std::string& sender,
                                                        uint64_t request_id, const Status& why,
                                                        TimePoint now) {
  std::vector<Action> out;
  Reject(inbound, sender, request_id, why, now, out);
  return out;
}

std::vector<Action> NodeStateMachine::OnInbound(InboundId inbound, const Message& message,
                                                TimePoint now) {
  std::vector<Action> out;
  const Envelope& env = message.envelope;
  auto reply = [&](Body body) {
    out.push_back(SendReply{inbound, Reply(env.request_id, std::move(body))});
  };

  if (const auto* hello = std::get_if<Hello>(&message.body)) {
    if (hello->architecture_id != config_.architecture_id) {
      ++counters_.refused_peers;
      std::string why = "model architecture '" + hello->architecture_id + "' differs from '" +
                        config_.architecture_id + "'";
      log_->error("refused peer {}: its {}", env.sender, why);
      reply(Error{ErrorCode::kRefused, why});
      return out;
    }
    if (env.sender.empty() || env.sender == config_.id) {
      Reject(inbound, env.sender, env.request_id,
             Status::InvalidArgument("Hello needs a sender id other than the receiver's"), now,
             out);
      return out;
    }
    if (!KeyAllowed(hello->public_key)) {
      Reject(
          inbound, env.sender, env.request_id,
          Status::UnknownSender("public key '" + hello->public_key + "' is not on the allowlist"),
          now, out);
      return out;
    }
    Admit(env.sender, *hello, hello->public_key);
    HelloAck ack;
    static_cast<Hello&>(ack) = OwnHello();
    reply(ack);
  } else if (const auto* get = std::get_if<GetModel>(&message.body)) {
    bool have = HavePublished();
    bool fresh = have && (Latest().round >= get->min_round || Latest().early_stopped ||
                          phase_ == Phase::kLingering || phase_ == Phase::kFinished);
    if (fresh || (have && !get->wait)) {
      out.push_back(SendReply{inbound, ModelMessage(env.request_id, get->min_round, get->wait)});
    } else if (get->wait || !have) {
      held_.push_back(
          {inbound, env.sender, env.request_id, get->min_round, now + config_.round_deadline});
    }
  } else if (const auto* list = std::get_if<PeerList>(&message.body)) {
    Learn(list->peers, now);
    reply(PeerList{KnownPeers()});
  } else if (const auto* embed = std::get_if<EmbedRequest>(&message.body)) {
    if (!config_.emd_enabled) {
      Reject(inbound, env.sender, env.request_id,
             Status::Unavailable("this node does not take part in the EMD exchange"), now, out);
      return out;
    }
    ++emd_jobs_running_;
    out.push_back(StartEmbed{EmbedJob{inbound, env.sender, env.request_id, embed->weights,
                                      embed->projection_seed,
                                      std::min(embed->max_samples, config_.emd_max_samples)}});
  } else if (const auto* decision = std::get_if<EmdDecision>(&message.body)) {
    if (peers_.Find(env.sender) != nullptr) {
      emd_[env.sender].peer = env.sender;
      emd_[env.sender].peer_accepted = decision->accepted;
      ApplyEmdDecision(env.sender);
    }
    reply(*decision);
  } else if (const auto* ping = std::get_if<Ping>(&message.body)) {
    Pong pong;
    pong.nonce = ping->nonce;
    reply(pong);
  } else {
    Reject(inbound, env.sender, env.request_id,
           Status::InvalidArgument(std::string(MessageTypeName(env.type)) +
                                   " is not a request this node serves"),
           now, out);
  }
  return out;
}

void NodeStateMachine::AnswerHeld(TimePoint now, bool expire_all, std::vector<Action>& out) {
  bool done = phase_ == Phase::kLingering || phase_ == Phase::kFinished;
  for (auto it = held_.begin(); it != held_.end();) {
    bool satisfied =
        HavePublished() && (Latest().round >= it->min_round || Latest().early_stopped || done);
    if (satisfied) {
      out.push_back(SendReply{it->inbound, ModelMessage(it->request_id, it->min_round, true)});
      it = held_.erase(it);
    } else if (expire_all || now >= it->deadline) {
      ++counters_.held_requests_expired;
      out.push_back(
          SendReply{it->inbound,
                    Reply(it->request_id,
                          Error{ErrorCode::kTimeout,
                                "no snapshot of round " + std::to_string(it->min_round) +
                                    " within the deadline (latest is round " +
                                    std::to_string(HavePublished() ? Latest().round : -1) + ")"})});
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---- EMD exchange (DESIGN.md "EMD embedding exchange") ---------------------------------------

void NodeStateMachine::StartEmdExchange(TimePoint now) {
  emd_queue_.clear();
  for (const topology::PeerEntry& p : peers_.Entries()) {
    if (peers_.IsSamplable(p.id, now) && nonces_.count(p.id)) emd_queue_.push_back(p.id);
  }
  log_->info("EMD exchange with {} peers", emd_queue_.size());
}

void NodeStateMachine::SendEmdRequests(TimePoint now, std::vector<Action>& out) {
  size_t budget = config_.emd_peers_per_round > 0 ? static_cast<size_t>(config_.emd_peers_per_round)
                                                  : emd_queue_.size();
  FloatArray phi = history_.empty() ? FloatArray() : history_.front().weights;
  for (const Snapshot& s : history_) {
    if (s.round == 0) phi = s.weights;  // phi_i: the model after the first local training
  }
  while (budget > 0 && !emd_queue_.empty() && HavePublished()) {
    std::string peer = emd_queue_.front();
    emd_queue_.erase(emd_queue_.begin());
    const topology::PeerEntry* entry = peers_.Find(peer);
    if (!entry) continue;
    --budget;
    uint64_t seed = similarity::AgreedProjectionSeed(config_.nonce, nonces_[peer]);
    EmbedRequest request;
    request.projection_seed = seed;
    request.max_samples = config_.emd_max_samples;
    request.layout = config_.layout;
    request.weights = phi;
    uint64_t id = NextRequestId();
    pending_[id] = {RequestKind::kEmbed, peer, completed_round_, seed};
    out.push_back(RequestTo(*entry, id, std::move(request), now + 4 * config_.round_deadline));
  }
}

std::vector<Action> NodeStateMachine::OnEmbedDone(const EmbedJob& job,
                                                  const Result<ProjectedEmbeddings>& result,
                                                  TimePoint /*now*/) {
  std::vector<Action> out;
  --emd_jobs_running_;
  if (!result.ok()) {
    log_->warn("could not embed for {}: {}", job.requester, result.status().ToString());
    out.push_back(SendReply{job.inbound, Reply(job.request_id, Error{result.status().code(),
                                                                     result.status().message()})});
    return out;
  }
  EmbedReply reply;
  reply.rows = result->rows;
  reply.cols = result->cols;
  reply.embeddings = result->values;
  out.push_back(SendReply{job.inbound, Reply(job.request_id, std::move(reply))});
  return out;
}

std::vector<Action> NodeStateMachine::OnEmdDone(const EmdJob& job, const Result<EmdMeasure>& result,
                                                TimePoint now) {
  std::vector<Action> out;
  --emd_jobs_running_;
  if (!result.ok()) {
    log_->warn("EMD with {} failed: {}", job.peer, result.status().ToString());
    return out;
  }
  EmdRow& row = emd_[job.peer];
  row.peer = job.peer;
  row.emd = result->emd;
  row.reference = result->reference;
  row.accepted = similarity::AcceptPeer(result->emd, result->reference, config_.emd_epsilon);
  log_->info("EMD to {}: {:.4f} (reference {:.4f}): {}", job.peer, result->emd, result->reference,
             *row.accepted ? "accepted" : "rejected");
  if (const topology::PeerEntry* entry = peers_.Find(job.peer)) {
    uint64_t id = NextRequestId();
    pending_[id] = {RequestKind::kEmdDecision, job.peer, completed_round_, 0};
    out.push_back(RequestTo(*entry, id, EmdDecision{*row.accepted, result->emd, result->reference},
                            now + config_.round_deadline));
  }
  ApplyEmdDecision(job.peer);
  return out;
}

void NodeStateMachine::ApplyEmdDecision(const std::string& peer) {
  const EmdRow& row = emd_[peer];
  std::vector<topology::PeerObservation> observations;
  if (config_.emd_metric && row.emd && row.reference) {
    observations.push_back({peer, similarity::EmdScore(*row.emd - *row.reference), {}});
  } else if (config_.emd_cluster_sampler && row.accepted && row.peer_accepted) {
    observations.push_back({peer, row.mutual() ? 1.0 : -1.0, {}});
  }
  if (observations.empty() || !sampler_->HasPeer(peer)) return;
  Status updated = sampler_->Update(std::max<int64_t>(1, completed_round_), observations);
  if (!updated.ok()) log_->warn("EMD score of {} rejected: {}", peer, updated.ToString());
}

bool NodeStateMachine::EmdInFlight() const {
  bool pending = std::any_of(pending_.begin(), pending_.end(), [](const auto& p) {
    return p.second.kind == RequestKind::kEmbed || p.second.kind == RequestKind::kEmdDecision;
  });
  return pending || !emd_queue_.empty() || emd_jobs_running_ > 0;
}

std::vector<EmdRow> NodeStateMachine::EmdRows() const {
  std::vector<EmdRow> rows;
  for (const auto& [peer, row] : emd_) rows.push_back(row);
  return rows;
}

// ---- time -------------------------------------------------------------------------------------

std::vector<Action> NodeStateMachine::OnTick(TimePoint now) {
  std::vector<Action> out;
  AnswerHeld(now, false, out);
  // Greetings are paced. Rationale: gossip can teach a node a hundred peers at once; greeting
  // them all opens a connection each (about 3 descriptors with the peer's end), and 100 nodes in
  // one process doing so together exceeded 20,000 descriptors.
  int greeted = 0;
  for (const auto& [peer, at] : std::map<std::string, TimePoint>(next_hello_at_)) {
    if (now < at) continue;
    if (greeted++ >= kHellosPerTick) break;
    SendHello(peer, now, out);
  }
  if (phase_ == Phase::kWaitingForPeers) MaybeBeginPendingRound(now, out);
  if (phase_ == Phase::kPacing && now >= next_round_at_) BeginRound(completed_round_ + 1, now, out);
  // Safety net: the transport fails requests at their deadline; this closes a fetch whose
  // failures were lost, a little later.
  if (phase_ == Phase::kFetching && now >= fetch_.deadline + config_.round_deadline / 4) {
    FinishFetch(out);
  }
  bool exchange_waits = EmdInFlight() && now < linger_until_ + 4 * config_.round_deadline;
  if (phase_ == Phase::kLingering && now >= linger_until_ && !exchange_waits) {
    phase_ = Phase::kFinished;
    AnswerHeld(now, true, out);
    out.push_back(Finished{});
  }
  return out;
}

MachineState NodeStateMachine::ExportState() const {
  MachineState state;
  state.round = completed_round_;
  state.sampler = sampler_->Snapshot();
  state.comm = comm_.Rows();
  for (const topology::PeerEntry& p : peers_.Entries()) {
    state.peers.push_back({p.id, p.endpoint, p.public_key});
  }
  std::ostringstream rng;
  rng << rng_;
  state.rng_state = rng.str();
  return state;
}

}  // namespace meshlearn::node
