#include "node/logic/emd_exchange.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/stable_hash.h"
#include "protocol/codec.h"
#include "protocol/version.h"
#include "similarity/emd_decision.h"
#include "similarity/projection.h"

namespace meshlearn::node {
namespace {

// EMD requests wait this many round deadlines (embedding takes a model load and a forward pass).
constexpr int kEmdDeadlineRounds = 4;

}  // namespace

EmdExchange::EmdExchange(EmdExchangeConfig config, NodeServices node, Membership& membership,
                         const ModelServer& server)
    : config_(std::move(config)),
      node_(node),
      membership_(membership),
      server_(server),
      witness_(HoldLimit(), node.requests, node.log) {}

std::mt19937_64& EmdExchange::WitnessRng() {
  if (!witness_rng_) {
    witness_rng_ = std::make_unique<std::mt19937_64>(
        StableHash(node_.requests.self() + "/witness", config_.nonce));
  }
  return *witness_rng_;
}

Clock::duration EmdExchange::HoldLimit() const {
  return kEmdDeadlineRounds * config_.round_deadline;
}

Clock::duration EmdExchange::LingerLimit(Clock::duration round_deadline) {
  return kEmdAttempts * kEmdDeadlineRounds * round_deadline;
}

// ---- requester ----------------------------------------------------------------------------

void EmdExchange::OnRoundStart(int64_t round, TimePoint now, Actions& out) {
  int64_t finished = round - 1;
  if (config_.enabled &&
      (finished == 0 || (config_.refresh > 0 && finished % config_.refresh == 0))) {
    queue_.clear();
    const topology::PeerTable& peers = membership_.peers();
    for (const topology::PeerEntry& p : peers.Entries()) {
      if (peers.IsSamplable(p.id, now) && membership_.NonceOf(p.id)) queue_.push_back(p.id);
    }
    started_at_ = now;
    attempts_.clear();
    node_.log.info("EMD exchange with {} peers", queue_.size());
  }
  SendRequests(now, out);
}

void EmdExchange::Track(SendRequest request, Pending pending, Actions& out) {
  pending_[request.request_id] = std::move(pending);
  out.push_back(std::move(request));
}

void EmdExchange::SendRequests(TimePoint now, Actions& out) {
  size_t budget =
      config_.peers_per_round > 0 ? static_cast<size_t>(config_.peers_per_round) : queue_.size();
  FloatArray phi = server_.RoundZeroWeights();  // φ_i: the model after the first local training
  if (!queue_.empty() && server_.HavePublished() && phi.size() != config_.layout.total_floats()) {
    node_.log.warn(
        "no embedding model to send (round 0 produced no weights); EMD exchange skipped");
    queue_.clear();
    return;
  }
  while (budget > 0 && !queue_.empty() && server_.HavePublished()) {
    std::string peer = queue_.front();
    queue_.erase(queue_.begin());
    if (RequestMeasure(peer, phi, now, out)) --budget;
  }
  DecideWhenMeasured(now, out);  // peers that left the queue without a request
}

bool EmdExchange::RequestMeasure(const std::string& peer, const FloatArray& phi, TimePoint now,
                                 Actions& out) {
  const topology::PeerEntry* entry = membership_.peers().Find(peer);
  if (!entry) return false;
  ++attempts_[peer];
  uint64_t seed =
      similarity::AgreedProjectionSeed(config_.nonce, membership_.NonceOf(peer).value_or(0));
  TimePoint deadline = now + HoldLimit();
  if (config_.witness) {
    const topology::PeerEntry* witness = PickWitness(peer, now);
    if (!witness) {
      node_.log.warn("no third peer can witness the EMD exchange with {}; skipped", peer);
      return true;
    }
    WitnessTarget target{{witness->id, witness->endpoint, witness->public_key}, WitnessRng()()};
    WitnessEmbedRequest request;
    request.projection_seed = seed;
    request.max_samples = config_.max_samples;
    request.session = target.session;
    request.witness = target.witness;
    request.layout = config_.layout;
    request.weights = phi;
    Pending pending{Kind::kWitnessEmbed, peer};
    pending.session = target.session;
    // The responder answers only after the witness did, which may take the witness's whole
    // hold limit; one more deadline covers its embedding.
    Track(node_.requests.Open(Part::kEmd, *entry, std::move(request),
                              deadline + config_.round_deadline),
          pending, out);
    ++jobs_running_;
    measuring_.insert(peer);
    out.push_back(
        StartOwnProjection{OwnProjectionJob{peer, seed, config_.max_samples, std::move(target)}});
    return true;
  }
  EmbedRequest request;
  request.projection_seed = seed;
  request.max_samples = config_.max_samples;
  request.layout = config_.layout;
  request.weights = phi;
  if (SpeaksCompressedEmbeddings(peer)) {
    request.accepts.assign(EmbeddingCodecs().begin(), EmbeddingCodecs().end());
  }
  Pending pending{Kind::kEmbed, peer};
  pending.projection_seed = seed;
  Track(node_.requests.Open(Part::kEmd, *entry, std::move(request), deadline), pending, out);
  measuring_.insert(peer);
  return true;
}

bool EmdExchange::SpeaksCompressedEmbeddings(const std::string& peer) const {
  return node_.requests.protocol_version() >= kCompressedEmbeddingVersion &&
         membership_.ProtocolVersionOf(peer).value_or(0) >= kCompressedEmbeddingVersion;
}

CompressionSettings EmdExchange::RowsEncodingFor(const std::string& peer) const {
  return SpeaksCompressedEmbeddings(peer) ? config_.embeddings : CompressionSettings{};
}

const topology::PeerEntry* EmdExchange::PickWitness(const std::string& peer, TimePoint now) {
  const topology::PeerTable& peers = membership_.peers();
  std::vector<std::string> candidates;
  for (const topology::PeerEntry& p : peers.Entries()) {
    if (p.id != peer && peers.IsSamplable(p.id, now) && membership_.NonceOf(p.id)) {
      candidates.push_back(p.id);
    }
  }
  if (candidates.empty()) return nullptr;
  return peers.Find(candidates[WitnessRng()() % candidates.size()]);
}

SendRequest EmdExchange::RequestToWitness(const PeerInfo& witness, WitnessRows rows,
                                          TimePoint now) {
  TimePoint deadline = now + HoldLimit();
  // A witness we know is reached with the key we hold for it; otherwise with the requester's
  // description (the transport still refuses keys off our allowlist).
  if (const topology::PeerEntry* known = membership_.peers().Find(witness.id)) {
    return node_.requests.Open(Part::kEmd, *known, std::move(rows), deadline);
  }
  return node_.requests.Open(Part::kEmd, witness, std::move(rows), deadline);
}

void EmdExchange::OnReply(uint64_t request_id, const Result<Message>& reply,
                          const Status& failure_in, TimePoint now, Actions& out) {
  auto it = pending_.find(request_id);
  if (it == pending_.end()) return;
  Pending pending = std::move(it->second);
  pending_.erase(it);
  Status failure = failure_in;
  switch (pending.kind) {
    case Kind::kEmbed: {
      const auto* body = failure.ok() ? std::get_if<EmbedReply>(&reply->body) : nullptr;
      if (!body) {
        if (failure.ok())
          failure = Status::Malformed("EmbedRequest was not answered with EmbedReply");
        AbandonMeasure(pending.peer, failure.WithContext("embedding at the peer"), now, out);
        return;
      }
      ++jobs_running_;
      out.push_back(StartEmd{EmdJob{pending.peer,
                                    {body->rows, body->cols, body->embeddings},
                                    pending.projection_seed,
                                    config_.max_samples}});
      return;
    }
    case Kind::kDecision:
      return;  // the peer echoes our decision as an acknowledgement
    case Kind::kWitnessEmbed:
      // The responder forwards the witness's answer to its rows; ours comes from the witness.
      if (!failure.ok()) {
        node_.log.warn("EMD exchange with {} (witnessed) failed at the peer: {}", pending.peer,
                       failure.ToString());
      }
      return;
    case Kind::kWitnessTrainRows:
    case Kind::kWitnessValidationRows: {
      const auto* result = failure.ok() ? std::get_if<WitnessResult>(&reply->body) : nullptr;
      if (result && result->session != pending.session) {
        failure = Status::Malformed("WitnessResult names another session");
        result = nullptr;
      }
      if (!result && failure.ok()) {
        failure = Status::Malformed("WitnessRows was not answered with WitnessResult");
      }
      if (pending.kind == Kind::kWitnessValidationRows) {
        // We are the responder: pass the witness's answer on to the requester.
        Body forwarded =
            result ? Body(*result) : Body(Error{failure.code(), "witness: " + failure.message()});
        out.push_back(
            node_.requests.ReplyTo(pending.inbound, pending.inbound_request_id, forwarded));
        return;
      }
      if (!result) {
        AbandonMeasure(pending.peer, failure.WithContext("witnessed EMD"), now, out);
        return;
      }
      CompleteMeasure(pending.peer, result->emd, pending.reference, reply->envelope.sender, now,
                      out);
      return;
    }
  }
}

void EmdExchange::OnEmdDone(const EmdJob& job, const Result<EmdMeasure>& result, TimePoint now,
                            Actions& out) {
  --jobs_running_;
  if (!result.ok()) {
    AbandonMeasure(job.peer, result.status().WithContext("EMD"), now, out);
    return;
  }
  CompleteMeasure(job.peer, result->emd, result->reference, "", now, out);
}

void EmdExchange::OnOwnProjectionDone(const OwnProjectionJob& job,
                                      const Result<OwnProjection>& result, TimePoint now,
                                      Actions& out) {
  --jobs_running_;
  if (!result.ok()) {
    AbandonMeasure(job.peer, result.status().WithContext("projecting our rows"), now, out);
    return;
  }
  WitnessRows rows;
  rows.session = job.target.session;
  rows.requester = node_.requests.self();
  rows.responder = job.peer;
  rows.side = WitnessSide::kRequesterTrain;
  rows.rows = result->train.rows;
  rows.cols = result->train.cols;
  rows.embeddings = result->train.values;
  rows.encoding = RowsEncodingFor(job.target.witness.id);
  Pending pending{Kind::kWitnessTrainRows, job.peer};
  pending.session = job.target.session;
  pending.reference = result->reference;
  Track(RequestToWitness(job.target.witness, std::move(rows), now), pending, out);
}

void EmdExchange::CompleteMeasure(const std::string& peer, double emd, double reference,
                                  const std::string& witness, TimePoint now, Actions& out) {
  measuring_.erase(peer);
  EmdRow& row = rows_[peer];
  row.peer = peer;
  row.emd = emd;
  row.reference = reference;
  row.witness = witness;
  row.measured_round = node_.requests.round() + 1;
  row.measured_seconds = Seconds(now - started_at_);
  node_.log.info("EMD to {}: {:.4f} (reference {:.4f}{}{})", peer, emd, reference,
                 witness.empty() ? "" : ", witnessed by ", witness);
  if (config_.metric) {
    similarity::MetricInput input;
    input.exchanged_score = emd - reference;
    auto score = similarity::EmdMetric().Score(input);
    if (score.ok()) {
      scores_[peer] = *score;
    } else {
      node_.log.warn("EMD score of {} unusable: {}", peer, score.status().ToString());
    }
    ApplyDecision(peer);  // the score goes to the sampler at once, whatever the decision
  }
  if (config_.epsilon) {
    Decide(peer, similarity::AcceptPeer(emd, reference, *config_.epsilon), *config_.epsilon, now,
           out);
  } else {
    ++revision_;
    DecideWhenMeasured(now, out);
  }
}

void EmdExchange::AbandonMeasure(const std::string& peer, const Status& why, TimePoint now,
                                 Actions& out) {
  measuring_.erase(peer);
  const int attempts = attempts_[peer];
  if (attempts < kEmdAttempts && server_.HavePublished()) {
    node_.log.warn("EMD exchange with {}: attempt {} of {} failed ({}); trying again", peer,
                   attempts, kEmdAttempts, why.ToString());
    // A retry replaces the failed request, so it does not wait for the per-round budget.
    if (RequestMeasure(peer, server_.RoundZeroWeights(), now, out)) return;
  }
  node_.log.warn("EMD exchange with {} given up after {} attempt(s): {}", peer, attempts,
                 why.ToString());
  DecideWhenMeasured(now, out);
}

void EmdExchange::OnFinish(TimePoint now, Actions& out) {
  std::set<std::string> unmeasured = measuring_;
  unmeasured.insert(queue_.begin(), queue_.end());
  if (!unmeasured.empty()) {
    std::string names;
    for (const std::string& peer : unmeasured) names += (names.empty() ? "" : ", ") + peer;
    node_.log.warn("EMD exchange: finished with {} peer(s) unmeasured, given up: {}",
                   unmeasured.size(), names);
  }
  OnTick(now, true, out);
}

void EmdExchange::DecideWhenMeasured(TimePoint now, Actions& out) {
  if (config_.epsilon || !queue_.empty() || !measuring_.empty()) return;
  std::vector<double> ratios;  // ρ_ij of each measured peer
  for (const auto& [peer, row] : rows_) {
    if (row.emd) ratios.push_back(*row.emd / *row.reference);
  }
  if (ratios.empty()) return;
  const double threshold = similarity::AutomaticThreshold(ratios);
  bool changed = false;
  for (const auto& [peer, row] : rows_) {
    if (row.emd) changed |= SetDecision(peer, *row.emd / *row.reference < threshold, threshold);
  }
  if (!changed) return;
  std::vector<std::string> accepts;  // sorted: rows_ is ordered by peer id
  for (const auto& [peer, row] : rows_) {
    if (row.accepted.value_or(false)) accepts.push_back(peer);
  }
  for (const auto& [peer, row] : rows_) {
    if (row.emd) SendDecision(peer, accepts, now, out);
  }
  ++revision_;
  Agree();
}

void EmdExchange::Decide(const std::string& peer, bool accepted, double threshold, TimePoint now,
                         Actions& out) {
  if (!SetDecision(peer, accepted, threshold)) return;
  SendDecision(peer, std::nullopt, now, out);
  if (config_.metric) {
    ++revision_;  // the score reached the sampler with the measurement
  } else {
    ApplyDecision(peer);
  }
}

bool EmdExchange::SetDecision(const std::string& peer, bool accepted, double threshold) {
  EmdRow& row = rows_[peer];
  const bool changed = row.accepted != accepted;
  row.accepted = accepted;
  row.threshold = threshold;
  if (changed) {
    node_.log.info("EMD to {}: {:.4f} (reference {:.4f}) against {} {:.4f}: {}", peer, *row.emd,
                   *row.reference, config_.epsilon ? "epsilon" : "the automatic threshold",
                   threshold, accepted ? "accepted" : "rejected");
  }
  return changed;
}

void EmdExchange::SendDecision(const std::string& peer,
                               std::optional<std::vector<std::string>> accepts, TimePoint now,
                               Actions& out) {
  const topology::PeerEntry* entry = membership_.peers().Find(peer);
  if (entry == nullptr) return;
  const EmdRow& row = rows_[peer];
  Track(
      node_.requests.Open(Part::kEmd, *entry,
                          EmdDecision{*row.accepted, *row.emd, *row.reference, std::move(accepts)},
                          now + config_.round_deadline),
      Pending{Kind::kDecision, peer}, out);
}

void EmdExchange::Agree() {
  if (config_.epsilon) return;
  // K_x = {x} ∪ {k : k leans to accept x}, from our leanings and those the peers sent.
  std::vector<uint32_t> numbers;  // of rows_'s peers, in its order
  for (const auto& [peer, row] : rows_) numbers.push_back(ColumnNumber(peer));
  similarity::LeaningColumns columns(column_numbers_.size());
  size_t k = 0;
  for (const auto& [peer, row] : rows_) {
    const uint32_t number = numbers[k++];
    if (row.accepted.value_or(false)) columns.Lean(0, number);
    if (row.peer_accepted.value_or(false)) columns.Lean(number, 0);
    auto leanings = peer_leanings_.find(peer);
    if (leanings == peer_leanings_.end()) continue;
    for (uint32_t x : leanings->second) columns.Lean(number, x);
  }
  k = 0;
  for (auto& [peer, row] : rows_) {
    const uint32_t number = numbers[k++];
    if (!row.accepted || !row.peer_accepted) continue;
    const bool agreed = columns.Jaccard(0, number) >= similarity::kColumnAgreement;
    if (row.agreed == agreed) continue;
    row.agreed = agreed;
    node_.log.info("EMD edge with {}: {}", peer,
                   agreed ? "the columns agree" : "the columns disagree");
    if (config_.metric) {
      ++revision_;
    } else {
      ApplyDecision(peer);
    }
  }
}

uint32_t EmdExchange::ColumnNumber(const std::string& id) {
  if (column_numbers_.empty()) column_numbers_.emplace(node_.requests.self(), 0);
  auto [it, added] = column_numbers_.try_emplace(id, static_cast<uint32_t>(column_numbers_.size()));
  return it->second;
}

void EmdExchange::ApplyDecision(const std::string& peer) {
  ++revision_;
  const EmdRow& row = rows_[peer];
  std::vector<topology::PeerObservation> observations;
  auto score = scores_.find(peer);
  if (config_.metric && score != scores_.end()) {
    observations.push_back({peer, score->second, {}});
  } else if (config_.cluster_sampler && row.accepted && row.peer_accepted) {
    observations.push_back({peer, row.mutual() ? 1.0 : -1.0, {}});
  }
  if (observations.empty() || !node_.sampler.HasPeer(peer)) return;
  Status updated = node_.sampler.Update(std::max<int64_t>(1, node_.requests.round()), observations);
  if (!updated.ok()) node_.log.warn("EMD score of {} rejected: {}", peer, updated.ToString());
}

std::optional<double> EmdExchange::ScoreOf(const std::string& peer) const {
  auto it = scores_.find(peer);
  if (it == scores_.end()) return std::nullopt;
  return it->second;
}

// ---- responder and decisions -------------------------------------------------------------

bool EmdExchange::Refused(InboundId inbound, const Envelope& env, TimePoint now, Actions& out) {
  if (config_.enabled) return false;
  out.push_back(node_.requests.Reject(
      inbound, env.sender, env.request_id,
      Status::Unavailable("this node does not take part in the EMD exchange"), now));
  return true;
}

void EmdExchange::OnEmbedRequest(InboundId inbound, const Envelope& env,
                                 const EmbedRequest& request, TimePoint now, Actions& out) {
  if (Refused(inbound, env, now, out)) return;
  ++jobs_running_;
  const CompressionCodec ours = config_.embeddings.codec;
  const bool accepted =
      ours != CompressionCodec::kNone &&
      std::find(request.accepts.begin(), request.accepts.end(), ours) != request.accepts.end();
  out.push_back(StartEmbed{EmbedJob{inbound, env.sender, env.request_id, request.weights,
                                    request.projection_seed,
                                    std::min(request.max_samples, config_.max_samples),
                                    std::nullopt, accepted ? ours : CompressionCodec::kNone}});
}

void EmdExchange::OnWitnessEmbedRequest(InboundId inbound, const Envelope& env,
                                        const WitnessEmbedRequest& request, TimePoint now,
                                        Actions& out) {
  if (Refused(inbound, env, now, out)) return;
  if (request.witness.id == node_.requests.self() || request.witness.id == env.sender) {
    out.push_back(
        node_.requests.Reject(inbound, env.sender, env.request_id,
                              Status::InvalidArgument("the witness must be a third peer, not '" +
                                                      request.witness.id + "'"),
                              now));
    return;
  }
  ++jobs_running_;
  out.push_back(StartEmbed{EmbedJob{inbound, env.sender, env.request_id, request.weights,
                                    request.projection_seed,
                                    std::min(request.max_samples, config_.max_samples),
                                    WitnessTarget{request.witness, request.session}}});
}

void EmdExchange::OnWitnessRows(InboundId inbound, const Envelope& env, const WitnessRows& rows,
                                TimePoint now, Actions& out) {
  if (Refused(inbound, env, now, out)) return;
  witness_.OnRows(inbound, env, rows, now, out);
}

void EmdExchange::OnWitnessEmdDone(const WitnessEmdJob& job, const Result<double>& result,
                                   Actions& out) {
  witness_.OnDone(job, result, out);
}

void EmdExchange::OnTick(TimePoint now, bool expire_all, Actions& out) {
  witness_.Expire(now, expire_all, out);
}

void EmdExchange::OnDecision(InboundId inbound, const Envelope& env, const EmdDecision& decision,
                             Actions& out) {
  out.push_back(node_.requests.ReplyTo(inbound, env.request_id, decision));
  if (membership_.peers().Find(env.sender) == nullptr) return;
  EmdRow& row = rows_[env.sender];
  row.peer = env.sender;
  row.peer_accepted = decision.accepted;
  if (decision.accepts) {
    // Only ids of this mesh count (us and our peers): a peer cannot grow our state with others.
    std::vector<uint32_t> known;
    for (const std::string& id : *decision.accepts) {
      if (id == node_.requests.self() || membership_.peers().Find(id) != nullptr) {
        known.push_back(ColumnNumber(id));
      }
    }
    peer_leanings_[env.sender] = std::move(known);
  }
  if (config_.epsilon) {
    ApplyDecision(env.sender);
  } else {
    ++revision_;
    Agree();
  }
}

void EmdExchange::OnEmbedDone(const EmbedJob& job, const Result<ProjectedEmbeddings>& result,
                              TimePoint now, Actions& out) {
  --jobs_running_;
  if (!result.ok()) {
    node_.log.warn("could not embed for {}: {}", job.requester, result.status().ToString());
    out.push_back(node_.requests.ReplyTo(job.inbound, job.request_id,
                                         Error{result.status().code(), result.status().message()}));
    return;
  }
  if (job.witness) {
    // Witness mode: the rows go to the witness; the requester hears back once it answered.
    const WitnessTarget& target = *job.witness;
    WitnessRows rows;
    rows.session = target.session;
    rows.requester = job.requester;
    rows.responder = node_.requests.self();
    rows.side = WitnessSide::kResponderValidation;
    rows.rows = result->rows;
    rows.cols = result->cols;
    rows.embeddings = result->values;
    rows.encoding = RowsEncodingFor(target.witness.id);
    Pending pending{Kind::kWitnessValidationRows, job.requester};
    pending.session = target.session;
    pending.inbound = job.inbound;
    pending.inbound_request_id = job.request_id;
    Track(RequestToWitness(target.witness, std::move(rows), now), pending, out);
    return;
  }
  EmbedReply reply;
  reply.rows = result->rows;
  reply.cols = result->cols;
  reply.embeddings = result->values;
  if (job.reply_codec != CompressionCodec::kNone) reply.encoding = config_.embeddings;
  out.push_back(node_.requests.ReplyTo(job.inbound, job.request_id, std::move(reply)));
}

// ---- state -------------------------------------------------------------------------------

bool EmdExchange::InFlight() const {
  // A peer we measured owes us its decision; it sends it after measuring us, which needs us.
  bool awaiting = std::any_of(rows_.begin(), rows_.end(), [](const auto& row) {
    return row.second.accepted.has_value() && !row.second.peer_accepted.has_value();
  });
  return !pending_.empty() || awaiting || !queue_.empty() || jobs_running_ > 0 || witness_.Busy();
}

std::vector<EmdRow> EmdExchange::Rows() const {
  std::vector<EmdRow> rows;
  for (const auto& [peer, row] : rows_) rows.push_back(row);
  return rows;
}

}  // namespace meshlearn::node
