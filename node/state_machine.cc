#include "node/state_machine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "protocol/version.h"
#include "similarity/centroid_signature.h"
#include "similarity/clustering.h"
#include "similarity/emd_decision.h"
#include "similarity/point_set.h"
#include "similarity/projection.h"
#include "topology/baseline_samplers.h"

#include <spdlog/fmt/ranges.h>

namespace meshlearn::node {
namespace {

constexpr auto kHelloRetryBase = std::chrono::seconds(1);
constexpr auto kHelloRetryMax = std::chrono::seconds(30);
constexpr auto kRejectionLogInterval = std::chrono::minutes(1);
constexpr int kHellosPerTick = 2;
// Snapshots kept for sync-mode requests of an older round. Rationale: sampled peers lag by at
// most a round or two when every node waits for its peers; each kept snapshot costs one model.
constexpr size_t kSnapshotHistory = 4;
// Witness mode: measurements a witness holds at once. Rationale: each holds up to two embedding
// sets (512 x 115 floats); a peer flooding sessions must not grow the node without bound.
constexpr size_t kMaxWitnessSessions = 64;
// EMD requests wait this many round deadlines (embedding takes a model load and a forward pass).
constexpr int kEmdDeadlineRounds = 4;

// FNV-1a, a stable mix of the node id into the sampling seed (std::hash is not portable).
uint64_t MixSeed(uint64_t seed, const std::string& id) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  return h;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The similarity view of a signature's centroids.
similarity::PointSet Points(const ProjectedEmbeddings& set) {
  return {set.values.view(), set.rows, set.cols};
}

}  // namespace

NodeStateMachine::NodeStateMachine(StateMachineConfig config,
                                   std::unique_ptr<topology::PeerSampler> sampler,
                                   std::shared_ptr<spdlog::logger> logger)
    : config_(std::move(config)),
      sampler_(std::move(sampler)),
      log_(std::move(logger)),
      peers_(config_.id, config_.dead_after_failures, config_.round_deadline,
             std::chrono::seconds(60)),
      rng_(MixSeed(config_.seed, config_.id)),
      witness_rng_(MixSeed(config_.nonce, config_.id + "/witness")) {
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
  if (config_.signatures_enabled) RequestSignatures(now, out);

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
    out.push_back(RequestTo(*peers_.Find(s.peer), id,
                            GetModel{round - 1, config_.sync, config_.fetch_updates},
                            fetch_.deadline));
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
    if (outcome.cluster_mates) {
      // FLIC / OCFL: the learner's policy clustered; sample within the node's cluster from now on.
      if (auto* cluster = dynamic_cast<topology::ClusterSampler*>(sampler_.get())) {
        cluster->SetCluster(outcome.cluster_mates);
        log_->info("round {}: clustered; cluster mates: {}", round,
                   fmt::join(*outcome.cluster_mates, " "));
      }
    }
    counters_.merge_excluded += static_cast<uint64_t>(outcome.excluded_by_min_score);
    record.outcome = outcome;
    if (unrecorded_signature_partition_) {
      // FLT: the signature clusters changed since the last round; this round's record shows them.
      record.outcome.cluster_partition = std::move(*unrecorded_signature_partition_);
      unrecorded_signature_partition_.reset();
    }
    record.outcome.published_weights = FloatArray();
    record.outcome.published_update.reset();
    record.stopped = outcome.stopped;
    Publish(round, outcome.published_weights, outcome.stopped, outcome.published_update);
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

void NodeStateMachine::Publish(int64_t round, FloatArray weights, bool stopped,
                               std::optional<FloatArray> update) {
  Snapshot snapshot;
  snapshot.round = round;
  snapshot.weights = std::move(weights);
  snapshot.update = std::move(update);
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
    case RequestKind::kGetSignature:
      OnSignature(pending.peer, reply, failure);
      break;
    case RequestKind::kWitnessEmbed:
      // The responder forwards the witness's answer to its rows; ours comes from the witness.
      if (!failure.ok()) {
        log_->warn("EMD exchange with {} (witnessed) failed at the peer: {}", pending.peer,
                   failure.ToString());
      }
      break;
    case RequestKind::kWitnessTrainRows:
    case RequestKind::kWitnessValidationRows: {
      const auto* result = failure.ok() ? std::get_if<WitnessResult>(&reply->body) : nullptr;
      if (result && result->session != pending.session) {
        failure = Status::Malformed("WitnessResult names another session");
        result = nullptr;
      }
      if (!result && failure.ok()) {
        failure = Status::Malformed("WitnessRows was not answered with WitnessResult");
      }
      if (pending.kind == RequestKind::kWitnessValidationRows) {
        // We are the responder: pass the witness's answer on to the requester.
        Body forwarded =
            result ? Body(*result) : Body(Error{failure.code(), "witness: " + failure.message()});
        out.push_back(SendReply{pending.inbound, Reply(pending.inbound_request_id, forwarded)});
        break;
      }
      if (!result) {
        log_->warn("witnessed EMD with {} failed: {}", pending.peer, failure.ToString());
        break;
      }
      CompleteMeasure(pending.peer, result->emd, pending.reference, reply->envelope.sender, now,
                      out);
      break;
    }
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
        if (double d = SignatureDistance("", pending.peer);
            config_.signature_metric && !std::isnan(d)) {
          exchanged = d;  // the centroid metric's input
        }
        fetch_.answered.push_back({pending.peer, model->weights, model->train_size, probability,
                                   exchanged, model->update});
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

SendRequest NodeStateMachine::RequestToWitness(const PeerInfo& witness, uint64_t request_id,
                                               WitnessRows rows, TimePoint now) const {
  TimePoint deadline = now + kEmdDeadlineRounds * config_.round_deadline;
  // A witness we know is reached with the key we hold for it; otherwise with the requester's
  // description (the transport still refuses keys off our allowlist).
  if (const topology::PeerEntry* known = peers_.Find(witness.id)) {
    return RequestTo(*known, request_id, std::move(rows), deadline);
  }
  topology::PeerEntry described;
  described.id = witness.id;
  described.endpoint = witness.endpoint;
  described.public_key = witness.public_key;
  return RequestTo(described, request_id, std::move(rows), deadline);
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

Message NodeStateMachine::ModelMessage(uint64_t request_id, int64_t min_round, bool wait,
                                       bool with_update) const {
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
  if (with_update) model.update = chosen->update;
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
      out.push_back(SendReply{
          inbound, ModelMessage(env.request_id, get->min_round, get->wait, get->with_update)});
    } else if (get->wait || !have) {
      held_.push_back({inbound, env.sender, env.request_id, get->min_round,
                       now + config_.round_deadline, get->with_update});
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
    out.push_back(StartEmbed{
        EmbedJob{inbound, env.sender, env.request_id, embed->weights, embed->projection_seed,
                 std::min(embed->max_samples, config_.emd_max_samples), std::nullopt}});
  } else if (const auto* request = std::get_if<WitnessEmbedRequest>(&message.body)) {
    if (!config_.emd_enabled) {
      Reject(inbound, env.sender, env.request_id,
             Status::Unavailable("this node does not take part in the EMD exchange"), now, out);
      return out;
    }
    if (request->witness.id == config_.id || request->witness.id == env.sender) {
      Reject(inbound, env.sender, env.request_id,
             Status::InvalidArgument("the witness must be a third peer, not '" +
                                     request->witness.id + "'"),
             now, out);
      return out;
    }
    ++emd_jobs_running_;
    out.push_back(StartEmbed{EmbedJob{inbound, env.sender, env.request_id, request->weights,
                                      request->projection_seed,
                                      std::min(request->max_samples, config_.emd_max_samples),
                                      WitnessTarget{request->witness, request->session}}});
  } else if (const auto* rows = std::get_if<WitnessRows>(&message.body)) {
    OnWitnessRows(inbound, env, *rows, now, out);
  } else if (const auto* decision = std::get_if<EmdDecision>(&message.body)) {
    if (peers_.Find(env.sender) != nullptr) {
      emd_[env.sender].peer = env.sender;
      emd_[env.sender].peer_accepted = decision->accepted;
      ApplyEmdDecision(env.sender);
    }
    reply(*decision);
  } else if (std::holds_alternative<GetSignature>(message.body)) {
    if (!config_.signatures_enabled) {
      Reject(inbound, env.sender, env.request_id,
             Status::Unavailable("this node does not use data signatures (metric \"centroid\" "
                                 "or sampler \"centroid_cluster\")"),
             now, out);
      return out;
    }
    const ProjectedEmbeddings& own = config_.own_signature;
    reply(Signature{own.rows, own.cols, own.values});
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
      out.push_back(SendReply{it->inbound,
                              ModelMessage(it->request_id, it->min_round, true, it->with_update)});
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
  if (!emd_queue_.empty() && HavePublished() && phi.size() != config_.layout.total_floats()) {
    log_->warn("no embedding model to send (round 0 produced no weights); EMD exchange skipped");
    emd_queue_.clear();
    return;
  }
  while (budget > 0 && !emd_queue_.empty() && HavePublished()) {
    std::string peer = emd_queue_.front();
    emd_queue_.erase(emd_queue_.begin());
    const topology::PeerEntry* entry = peers_.Find(peer);
    if (!entry) continue;
    --budget;
    uint64_t seed = similarity::AgreedProjectionSeed(config_.nonce, nonces_[peer]);
    TimePoint deadline = now + kEmdDeadlineRounds * config_.round_deadline;
    if (config_.emd_witness) {
      const topology::PeerEntry* witness = PickWitness(peer, now);
      if (!witness) {
        log_->warn("no third peer can witness the EMD exchange with {}; skipped", peer);
        continue;
      }
      WitnessTarget target{{witness->id, witness->endpoint, witness->public_key}, witness_rng_()};
      WitnessEmbedRequest request;
      request.projection_seed = seed;
      request.max_samples = config_.emd_max_samples;
      request.session = target.session;
      request.witness = target.witness;
      request.layout = config_.layout;
      request.weights = phi;
      uint64_t id = NextRequestId();
      Pending pending{RequestKind::kWitnessEmbed, peer, completed_round_};
      pending.session = target.session;
      pending_[id] = pending;
      // The responder answers only after the witness did, which may take the witness's whole
      // hold limit; one more deadline covers its embedding.
      out.push_back(RequestTo(*entry, id, std::move(request), deadline + config_.round_deadline));
      ++emd_jobs_running_;
      out.push_back(StartOwnProjection{
          OwnProjectionJob{peer, seed, config_.emd_max_samples, std::move(target)}});
      continue;
    }
    EmbedRequest request;
    request.projection_seed = seed;
    request.max_samples = config_.emd_max_samples;
    request.layout = config_.layout;
    request.weights = phi;
    uint64_t id = NextRequestId();
    pending_[id] = {RequestKind::kEmbed, peer, completed_round_, seed};
    out.push_back(RequestTo(*entry, id, std::move(request), deadline));
  }
}

const topology::PeerEntry* NodeStateMachine::PickWitness(const std::string& peer, TimePoint now) {
  std::vector<std::string> candidates;
  for (const topology::PeerEntry& p : peers_.Entries()) {
    if (p.id != peer && peers_.IsSamplable(p.id, now) && nonces_.count(p.id)) {
      candidates.push_back(p.id);
    }
  }
  if (candidates.empty()) return nullptr;
  return peers_.Find(candidates[witness_rng_() % candidates.size()]);
}

std::vector<Action> NodeStateMachine::OnEmbedDone(const EmbedJob& job,
                                                  const Result<ProjectedEmbeddings>& result,
                                                  TimePoint now) {
  std::vector<Action> out;
  --emd_jobs_running_;
  if (!result.ok()) {
    log_->warn("could not embed for {}: {}", job.requester, result.status().ToString());
    out.push_back(SendReply{job.inbound, Reply(job.request_id, Error{result.status().code(),
                                                                     result.status().message()})});
    return out;
  }
  if (job.witness) {
    // Witness mode: the rows go to the witness; the requester hears back once it answered.
    const WitnessTarget& target = *job.witness;
    WitnessRows rows;
    rows.session = target.session;
    rows.requester = job.requester;
    rows.responder = config_.id;
    rows.side = WitnessSide::kResponderValidation;
    rows.rows = result->rows;
    rows.cols = result->cols;
    rows.embeddings = result->values;
    uint64_t id = NextRequestId();
    Pending pending{RequestKind::kWitnessValidationRows, job.requester, completed_round_};
    pending.session = target.session;
    pending.inbound = job.inbound;
    pending.inbound_request_id = job.request_id;
    pending_[id] = pending;
    out.push_back(RequestToWitness(target.witness, id, std::move(rows), now));
    return out;
  }
  EmbedReply reply;
  reply.rows = result->rows;
  reply.cols = result->cols;
  reply.embeddings = result->values;
  out.push_back(SendReply{job.inbound, Reply(job.request_id, std::move(reply))});
  return out;
}

std::vector<Action> NodeStateMachine::OnOwnProjectionDone(const OwnProjectionJob& job,
                                                          const Result<OwnProjection>& result,
                                                          TimePoint now) {
  std::vector<Action> out;
  --emd_jobs_running_;
  if (!result.ok()) {
    log_->warn("could not project our rows for the EMD with {}: {}", job.peer,
               result.status().ToString());
    return out;
  }
  WitnessRows rows;
  rows.session = job.target.session;
  rows.requester = config_.id;
  rows.responder = job.peer;
  rows.side = WitnessSide::kRequesterTrain;
  rows.rows = result->train.rows;
  rows.cols = result->train.cols;
  rows.embeddings = result->train.values;
  uint64_t id = NextRequestId();
  Pending pending{RequestKind::kWitnessTrainRows, job.peer, completed_round_};
  pending.session = job.target.session;
  pending.reference = result->reference;
  pending_[id] = pending;
  out.push_back(RequestToWitness(job.target.witness, id, std::move(rows), now));
  return out;
}

// ---- witness side -----------------------------------------------------------------------------

void NodeStateMachine::OnWitnessRows(InboundId inbound, const Envelope& env,
                                     const WitnessRows& rows, TimePoint now,
                                     std::vector<Action>& out) {
  auto refuse = [&](Status why) { Reject(inbound, env.sender, env.request_id, why, now, out); };
  if (!config_.emd_enabled) {
    return refuse(Status::Unavailable("this node does not take part in the EMD exchange"));
  }
  const bool train = rows.side == WitnessSide::kRequesterTrain;
  const std::string& owner = train ? rows.requester : rows.responder;
  if (env.sender != owner) {
    return refuse(Status::InvalidArgument(
        std::string("WitnessRows with ") +
        (train ? "the requester's training" : "the responder's validation") +
        " rows must come from '" + owner + "', not '" + env.sender + "'"));
  }
  if (rows.requester == rows.responder || rows.requester == config_.id ||
      rows.responder == config_.id) {
    return refuse(Status::InvalidArgument("a witness measures two other peers"));
  }
  WitnessKey key{rows.session, rows.requester, rows.responder};
  auto it = witness_sessions_.find(key);
  if (it == witness_sessions_.end()) {
    if (witness_sessions_.size() >= kMaxWitnessSessions) {
      return refuse(Status::Unavailable("this witness already holds " +
                                        std::to_string(kMaxWitnessSessions) + " measurements"));
    }
    it = witness_sessions_.emplace(key, WitnessSession{}).first;
    it->second.deadline = now + kEmdDeadlineRounds * config_.round_deadline;
  }
  WitnessSession& session = it->second;
  std::optional<WitnessHeld>& slot = train ? session.train : session.validation;
  if (slot || session.computing) {
    return refuse(Status::InvalidArgument("this side of the measurement was already sent"));
  }
  slot = WitnessHeld{inbound, env.request_id, env.sender,
                     ProjectedEmbeddings{rows.rows, rows.cols, rows.embeddings}};
  if (!session.train || !session.validation) return;
  if (session.train->rows.cols != session.validation->rows.cols) {
    return AnswerWitnessSession(
        key,
        Error{ErrorCode::kLayoutMismatch,
              "the two sides have " + std::to_string(session.train->rows.cols) + " and " +
                  std::to_string(session.validation->rows.cols) + " columns"},
        out);
  }
  session.computing = true;
  ++emd_jobs_running_;
  out.push_back(StartWitnessEmd{WitnessEmdJob{rows.session, rows.requester, rows.responder,
                                              session.train->rows, session.validation->rows}});
}

std::vector<Action> NodeStateMachine::OnWitnessEmdDone(const WitnessEmdJob& job,
                                                       const Result<double>& result,
                                                       TimePoint /*now*/) {
  std::vector<Action> out;
  --emd_jobs_running_;
  WitnessKey key{job.session, job.requester, job.responder};
  if (!result.ok()) {
    log_->warn("witnessed EMD of {} and {} failed: {}", job.requester, job.responder,
               result.status().ToString());
    AnswerWitnessSession(key, Error{result.status().code(), result.status().message()}, out);
    return out;
  }
  log_->info("witnessed EMD of {} (train) and {} (validation): {:.4f}", job.requester,
             job.responder, *result);
  AnswerWitnessSession(key, WitnessResult{job.session, *result}, out);
  return out;
}

void NodeStateMachine::AnswerWitnessSession(const WitnessKey& key, const Body& body,
                                            std::vector<Action>& out) {
  auto it = witness_sessions_.find(key);
  if (it == witness_sessions_.end()) return;
  for (const std::optional<WitnessHeld>* side : {&it->second.train, &it->second.validation}) {
    if (*side) out.push_back(SendReply{(*side)->inbound, Reply((*side)->request_id, body)});
  }
  witness_sessions_.erase(it);
}

void NodeStateMachine::ExpireWitnessSessions(TimePoint now, bool expire_all,
                                             std::vector<Action>& out) {
  std::vector<WitnessKey> expired;
  for (const auto& [key, session] : witness_sessions_) {
    if (!session.computing && (expire_all || now >= session.deadline)) expired.push_back(key);
  }
  for (const WitnessKey& key : expired) {
    AnswerWitnessSession(
        key, Error{ErrorCode::kTimeout, "the other side of the measurement never arrived"}, out);
  }
}

std::vector<Action> NodeStateMachine::OnEmdDone(const EmdJob& job, const Result<EmdMeasure>& result,
                                                TimePoint now) {
  std::vector<Action> out;
  --emd_jobs_running_;
  if (!result.ok()) {
    log_->warn("EMD with {} failed: {}", job.peer, result.status().ToString());
    return out;
  }
  CompleteMeasure(job.peer, result->emd, result->reference, "", now, out);
  return out;
}

void NodeStateMachine::CompleteMeasure(const std::string& peer, double emd, double reference,
                                       const std::string& witness, TimePoint now,
                                       std::vector<Action>& out) {
  EmdRow& row = emd_[peer];
  row.peer = peer;
  row.emd = emd;
  row.reference = reference;
  row.witness = witness;
  row.accepted = similarity::AcceptPeer(emd, reference, config_.emd_epsilon);
  log_->info("EMD to {}: {:.4f} (reference {:.4f}{}{}): {}", peer, emd, reference,
             witness.empty() ? "" : ", witnessed by ", witness,
             *row.accepted ? "accepted" : "rejected");
  if (const topology::PeerEntry* entry = peers_.Find(peer)) {
    uint64_t id = NextRequestId();
    pending_[id] = {RequestKind::kEmdDecision, peer, completed_round_, 0};
    out.push_back(RequestTo(*entry, id, EmdDecision{*row.accepted, emd, reference},
                            now + config_.round_deadline));
  }
  ApplyEmdDecision(peer);
}

void NodeStateMachine::ApplyEmdDecision(const std::string& peer) {
  ++emd_revision_;
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
    return p.second.kind != RequestKind::kHello && p.second.kind != RequestKind::kGetModel &&
           p.second.kind != RequestKind::kPeerList;
  });
  // A peer we measured owes us its decision; it sends it after measuring us, which needs us.
  bool awaiting = std::any_of(emd_.begin(), emd_.end(), [](const auto& row) {
    return row.second.accepted.has_value() && !row.second.peer_accepted.has_value();
  });
  return pending || awaiting || !emd_queue_.empty() || emd_jobs_running_ > 0 ||
         !witness_sessions_.empty();
}

std::vector<EmdRow> NodeStateMachine::EmdRows() const {
  std::vector<EmdRow> rows;
  for (const auto& [peer, row] : emd_) rows.push_back(row);
  return rows;
}

// ---- FLT data signatures (DESIGN.md "Other seed methods", FLT) ------------------------------

void NodeStateMachine::RequestSignatures(TimePoint now, std::vector<Action>& out) {
  std::set<std::string> asking;
  for (const auto& [id, p] : pending_) {
    if (p.kind == RequestKind::kGetSignature) asking.insert(p.peer);
  }
  for (const topology::PeerEntry& p : peers_.Entries()) {
    if (!peers_.IsSamplable(p.id, now) || !std::isnan(SignatureDistance("", p.id)) ||
        signature_refused_.count(p.id) || asking.count(p.id)) {
      continue;
    }
    uint64_t id = NextRequestId();
    pending_[id] = {RequestKind::kGetSignature, p.id, completed_round_};
    out.push_back(RequestTo(p, id, GetSignature{}, now + config_.round_deadline));
  }
}

void NodeStateMachine::OnSignature(const std::string& peer, const Result<Message>& reply,
                                   const Status& failure) {
  if (!failure.ok()) {
    // A timeout is asked again next round; a peer that answered otherwise will answer the same.
    bool transient =
        failure.code() == ErrorCode::kTimeout || failure.code() == ErrorCode::kUnavailable;
    if (!transient || reply.ok()) signature_refused_.insert(peer);
    log_->warn("no data signature from {}: {}", peer, failure.ToString());
    return;
  }
  const auto* signature = std::get_if<Signature>(&reply->body);
  if (!signature) {
    signature_refused_.insert(peer);
    log_->warn("no data signature from {}: GetSignature was not answered with a Signature", peer);
    return;
  }
  ProjectedEmbeddings theirs{signature->rows, signature->cols, signature->centroids};
  auto to_own = similarity::CentroidSetDistance(Points(config_.own_signature), Points(theirs));
  if (!to_own.ok()) {
    signature_refused_.insert(peer);
    log_->warn("unusable data signature from {}: {}", peer, to_own.status().ToString());
    return;
  }
  signature_distances_[{"", peer}] = *to_own;
  if (config_.signature_cluster_sampler) {
    // Only the clustering needs the signatures kept and the distances between peers.
    for (const auto& [other, set] : signatures_) {
      auto d = similarity::CentroidSetDistance(Points(set), Points(theirs));
      if (d.ok()) signature_distances_[std::minmax(other, peer)] = *d;
    }
    signatures_[peer] = std::move(theirs);
  }
  ++signature_revision_;
  bool related = similarity::CentroidsRelated(*to_own, config_.signature_threshold);
  log_->info("data signature of {}: distance {:.4f}: {}", peer, *to_own,
             related ? "related" : "unrelated");

  if (config_.signature_metric && sampler_->HasPeer(peer)) {
    similarity::MetricInput input;
    input.exchanged_score = *to_own;
    auto score = similarity::CentroidMetric().Score(input);
    std::vector<topology::PeerObservation> observation;
    if (score.ok()) observation.push_back({peer, *score, {}});
    Status updated = score.ok()
                         ? sampler_->Update(std::max<int64_t>(1, completed_round_), observation)
                         : score.status();
    if (!updated.ok()) log_->warn("signature score of {} rejected: {}", peer, updated.ToString());
  }
  if (config_.signature_cluster_sampler) ReclusterSignatures();
}

double NodeStateMachine::SignatureDistance(const std::string& a, const std::string& b) const {
  auto it = signature_distances_.find(std::minmax(a, b));
  return it == signature_distances_.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

void NodeStateMachine::ReclusterSignatures() {
  similarity::NodeMatrix distance;
  distance.ids.push_back(config_.id);
  for (const auto& [peer, set] : signatures_) distance.ids.push_back(peer);
  size_t n = distance.ids.size();
  distance.values.assign(n * n, 0.0);
  auto key = [&](size_t i) { return i == 0 ? std::string() : distance.ids[i]; };
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      double d = SignatureDistance(key(i), key(j));
      // A pair that could not be measured is never related.
      if (std::isnan(d)) d = std::numeric_limits<double>::max();
      distance.values[i * n + j] = distance.values[j * n + i] = d;
    }
  }
  auto labels = similarity::AgglomerativeClusters(distance, config_.signature_threshold,
                                                  similarity::Linkage::kSingle);
  if (!labels.ok()) {
    log_->warn("signature clustering failed: {}", labels.status().ToString());
    return;
  }
  std::vector<std::string> mates;
  std::vector<std::pair<std::string, int>> partition;
  for (size_t i = 0; i < n; ++i) {
    partition.emplace_back(distance.ids[i], (*labels)[i]);
    if (i > 0 && (*labels)[i] == (*labels)[0]) mates.push_back(distance.ids[i]);
  }
  if (auto* cluster = dynamic_cast<topology::ClusterSampler*>(sampler_.get())) {
    cluster->SetCluster(mates);
  }
  log_->info("signature clusters over {} nodes; cluster mates: {}", n, fmt::join(mates, " "));
  unrecorded_signature_partition_ = std::move(partition);
}

std::vector<SignatureRow> NodeStateMachine::SignatureRows() const {
  std::vector<SignatureRow> rows;
  for (const auto& [pair, d] : signature_distances_) {
    if (!pair.first.empty()) continue;  // between two peers, not ours
    rows.push_back({pair.second, d, similarity::CentroidsRelated(d, config_.signature_threshold)});
  }
  return rows;
}

// ---- time -------------------------------------------------------------------------------------

std::vector<Action> NodeStateMachine::OnTick(TimePoint now) {
  std::vector<Action> out;
  AnswerHeld(now, false, out);
  ExpireWitnessSessions(now, false, out);
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
    ExpireWitnessSessions(now, true, out);
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
