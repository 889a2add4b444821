#include "node/logic/round_driver.h"

#include <sstream>

#include <spdlog/fmt/ranges.h>

#include "node/logic/sampler_attacks.h"
#include "protocol/version.h"

namespace meshlearn::node {
namespace {

// The peer's answer that it cannot serve now, or null: Error(unavailable), sent by its model
// server for an asynchronous GetModel before its round 0 ends, or by its transport when too many
// requests are pending. The peer is up, so the round skips it without counting a failure. A
// failed request (no answer: reply is an error status) is not such an answer.
const Error* UnavailableAnswer(const Result<Message>& reply) {
  const Error* error = reply.ok() ? std::get_if<Error>(&reply->body) : nullptr;
  return error && error->code == ErrorCode::kUnavailable ? error : nullptr;
}

}  // namespace

RoundDriver::RoundDriver(RoundConfig config, uint64_t sampling_seed, NodeServices node,
                         Membership& membership, ModelServer& server, RoundHooks& hooks)
    : config_(std::move(config)),
      node_(node),
      membership_(membership),
      server_(server),
      hooks_(hooks),
      rng_(sampling_seed) {
  if (config_.peer_estimates > 0 && config_.shared_initial.size() > 0) {
    estimates_.emplace(config_.shared_initial, config_.peer_estimates);
  }
}

Status RoundDriver::Restore(int64_t round, double wall_seconds,
                            const std::vector<topology::CommRow>& comm,
                            const std::string& rng_state, FloatArray weights, bool stopped,
                            const EstimatesState& estimates, const std::string& halted) {
  if (estimates_) {
    MESHLEARN_RETURN_IF_ERROR(estimates_->Restore(estimates.peers).WithContext("checkpoint"));
  }
  auto counters = topology::CommCounters::FromRows(comm);
  if (!counters.ok()) return counters.status().WithContext("checkpoint counters");
  comm_ = std::move(*counters);
  if (!rng_state.empty()) {
    std::istringstream in(rng_state);
    in >> rng_;
    if (!in) return Status::InvalidArgument("checkpoint: unreadable random generator state");
  }
  completed_round_ = round;
  completed_wall_seconds_ = wall_seconds;
  resumed_wall_ = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(0.0, wall_seconds)));
  node_.requests.set_round(round);
  server_.PublishResumed(SnapshotOf(round, std::move(weights), stopped, std::nullopt),
                         estimates.owner);
  if (!halted.empty()) {
    Actions none;  // nothing is held before the node starts
    server_.Halt(halted, none);
  }
  return Status::Ok();
}

FloatArray RoundDriver::CorrectedEstimate(FloatArray peer_estimate) const {
  const std::span<const float> own_estimate = server_.PublicEstimateValues();
  if (config_.consensus_step <= 0 || own_estimate.empty() || !server_.HavePublished()) {
    return peer_estimate;
  }
  const std::span<const float> own = server_.Latest().weights.view();
  const std::span<const float> peer = peer_estimate.view();
  if (own.size() != peer.size() || own_estimate.size() != peer.size()) return peer_estimate;
  const auto step = static_cast<float>(config_.consensus_step);
  std::vector<float> corrected(peer.size());
  for (size_t i = 0; i < peer.size(); ++i) {
    corrected[i] = peer[i] + step * (own[i] - own_estimate[i]);
  }
  return FloatArray::Own(std::move(corrected));
}

EstimatesState RoundDriver::ExportEstimates() const {
  EstimatesState state;
  state.owner = server_.ExportEstimate();
  if (estimates_) state.peers = estimates_->Export();
  return state;
}

std::string RoundDriver::RngState() const {
  std::ostringstream out;
  out << rng_;
  return out.str();
}

void RoundDriver::Start(TimePoint now, Actions& out) {
  started_at_ = now - resumed_wall_;
  round_started_at_ = now;
  if (completed_round_ < 0) {
    phase_ = Phase::kComputing;
    fetch_ = Fetch{};
    out.push_back(StartCompute{RoundJob{0, {}}});
  } else if (completed_round_ >= config_.rounds) {
    phase_ = Phase::kLingering;
    linger_until_ = now + config_.linger;
  } else {
    node_.log.info("resuming after round {} from the checkpoint", completed_round_);
    BeginRound(completed_round_ + 1, now, out);
  }
}

bool RoundDriver::MustWaitForPeers() const {
  return membership_.HelloOutstanding() || (!mesh_wait_done_ && membership_.MeshIncomplete());
}

void RoundDriver::BeginRound(int64_t round, TimePoint now, Actions& out, bool may_wait) {
  if (hold_before_ && round >= *hold_before_) {
    phase_ = Phase::kPacing;
    next_round_at_ = TimePoint::max();
    return;
  }
  if (may_wait && MustWaitForPeers()) {
    pending_round_ = round;
    pending_round_deadline_ =
        now + (!mesh_wait_done_ && membership_.MeshIncomplete()
                   ? std::max<Clock::duration>(6 * config_.round_deadline, std::chrono::seconds(60))
                   : config_.round_deadline);
    phase_ = Phase::kWaitingForPeers;
    return;
  }
  if (!mesh_wait_done_ && membership_.MeshIncomplete()) {
    node_.log.warn("round {} begins knowing only {} peers of a mesh of {} nodes", round,
                   membership_.AdmittedPeers(), membership_.mesh_size());
  }
  mesh_wait_done_ = true;
  hooks_.OnRoundStart(round, now, out);
  membership_.Gossip(now, rng_, out);

  round_started_at_ = now;
  fetch_ = Fetch{};
  fetch_.round = round;
  fetch_.deadline = now + config_.round_deadline;
  fetch_.resting = config_.resting == RestingRule::kSilent && server_.HavePublished() &&
                   server_.Latest().early_stopped;
  if (config_.take_turns) {
    phase_ = fetch_.resting ? Phase::kAwaitingRoundEnd : Phase::kAwaitingTurn;
    out.push_back(AwaitTurn{round, !fetch_.resting});
    return;
  }
  if (fetch_.resting) {
    FinishFetch(out);
    return;
  }
  SampleAndFetch(now, out);
}

void RoundDriver::SampleAndFetch(TimePoint now, Actions& out) {
  const int64_t round = fetch_.round;
  const topology::PeerTable& peers = membership_.peers();
  fetch_.sampled = node_.sampler.Sample(
      static_cast<size_t>(config_.peers_per_round),
      [&](std::string_view peer) { return peers.IsSamplable(peer, now); }, rng_);
  phase_ = Phase::kFetching;
  for (const topology::SampledPeer& s : fetch_.sampled) {
    comm_.RecordSampled(s.peer);
    // Turns: the peer's latest snapshot, merged this round when it has had its turn.
    GetModel get{round - 1, config_.sync && !config_.take_turns, config_.fetch_updates};
    if (node_.requests.protocol_version() >= kCompressedModelVersion &&
        membership_.ProtocolVersionOf(s.peer).value_or(0) >= kCompressedModelVersion) {
      for (CompressionCodec codec : ModelCodecs()) {
        if (codec != CompressionCodec::kTopK || estimates_) get.accepts.push_back(codec);
      }
      if (estimates_) get.estimate = estimates_->Held(s.peer);
    }
    SendRequest request =
        node_.requests.Open(Part::kRounds, *peers.Find(s.peer), std::move(get), fetch_.deadline);
    fetch_.requests[request.request_id] = s.peer;
    out.push_back(std::move(request));
  }
  if (fetch_.requests.empty()) FinishFetch(out);
}

void RoundDriver::MaybeBeginPendingRound(TimePoint now, Actions& out) {
  if (!pending_round_) return;
  if (MustWaitForPeers() && now < pending_round_deadline_) return;
  // Every Hello resolved, or the wait hit its deadline: start without the slow peers.
  int64_t round = *pending_round_;
  pending_round_.reset();
  BeginRound(round, now, out, /*may_wait=*/false);
}

void RoundDriver::FinishFetch(Actions& out) {
  // Requests still outstanding missed the deadline; their late replies are dropped.
  for (const auto& [request_id, peer] : fetch_.requests) {
    node_.requests.Forget(request_id);
    ++counters_.missed_deadlines;
    node_.log.info("round {}: peer {} missed the deadline; skipped this round", fetch_.round, peer);
  }
  fetch_.requests.clear();
  phase_ = Phase::kComputing;
  const bool turn = config_.take_turns && !fetch_.resting;
  out.push_back(StartCompute{RoundJob{fetch_.round, fetch_.answered, turn}});
}

void RoundDriver::OnTurn(TimePoint now, Actions& out) {
  if (phase_ != Phase::kAwaitingTurn) {
    out.push_back(TurnOver{fetch_.round});
    return;
  }
  fetch_.deadline = now + config_.round_deadline;
  SampleAndFetch(now, out);
}

void RoundDriver::OnRoundEnd(TimePoint now, Actions& out) {
  if (phase_ != Phase::kAwaitingRoundEnd) return;
  if (!turn_outcome_) return FinishFetch(out);  // resting: its round runs now
  Result<RoundOutcome> result = std::move(*turn_outcome_);
  turn_outcome_.reset();
  CompleteRound(result, now, out);
}

void RoundDriver::OnReply(uint64_t request_id, const Result<Message>& reply, const Status& failure,
                          TimePoint now, Actions& out) {
  auto it = fetch_.requests.find(request_id);
  if (phase_ != Phase::kFetching || it == fetch_.requests.end()) return;
  std::string peer = it->second;
  fetch_.requests.erase(it);
  if (const Error* unavailable = UnavailableAnswer(reply)) {
    node_.log.info("round {}: peer {} cannot serve now ({}); skipped this round", fetch_.round,
                   peer, unavailable->text);
    if (fetch_.requests.empty()) FinishFetch(out);
    return;
  }
  const auto* model = failure.ok() ? std::get_if<Model>(&reply->body) : nullptr;
  // Rationale for skipping a model that arrived but cannot be used (a top-k chain that does not
  // fit our copy of the peer's estimate: the peer restarted): it costs this round's model only;
  // the copy is dropped, so the next reply carries the estimate whole.
  const Status why =
      model
          ? AcceptModel(peer, *model)
          : (failure.ok() ? Status::Malformed("GetModel was not answered with a Model") : failure);
  if (!why.ok()) {
    ++counters_.missed_deadlines;
    node_.log.info("round {}: peer {} {} ({}); skipped this round", fetch_.round, peer,
                   model ? "sent a model that could not be used" : "gave no model", why.ToString());
  }
  if (!model && membership_.peers().RecordFailure(peer, now)) {
    node_.log.warn("peer {} failed {} times in a row: marked dead, retried later", peer,
                   membership_.peers().Find(peer)->consecutive_failures);
  }
  if (fetch_.requests.empty()) FinishFetch(out);
}

Status RoundDriver::AcceptModel(const std::string& peer, const Model& model) {
  FloatArray weights = model.weights;
  if (model.chain) {
    if (!estimates_) return Status::Malformed("a top-k Model answered a GetModel without topk");
    auto rebuilt = estimates_->Apply(peer, *model.chain);
    if (!rebuilt.ok()) return rebuilt.status();
    weights = CorrectedEstimate(std::move(*rebuilt));
  }
  membership_.peers().RecordSuccess(peer);
  (void)comm_.RecordAnswered(peer);
  double probability = 0;
  for (const topology::SampledPeer& s : fetch_.sampled) {
    if (s.peer == peer) probability = s.probability;
  }
  fetch_.answered.push_back({peer, std::move(weights), model.train_size, probability,
                             hooks_.ExchangedScore(peer), model.update, model.round});
  topology::ScoreRow row;
  for (const PeerScore& s : model.score_row) row.push_back({s.peer, s.score});
  fetch_.rows[peer] = std::move(row);
  return Status::Ok();
}

void RoundDriver::OnComputeDone(const Result<RoundOutcome>& result, TimePoint now, Actions& out) {
  if (phase_ != Phase::kComputing) return;
  if (result.ok()) UpdateSampler(*result);
  if (!config_.take_turns || fetch_.round == 0 || fetch_.resting) {
    return CompleteRound(result, now, out);
  }
  // The turn ends: later nodes of the round read the merged model and the updated score row.
  if (result.ok() && result->merged_weights.size() > 0) {
    Publish(fetch_.round, result->merged_weights, false,
            server_.HavePublished() ? server_.Latest().update : std::nullopt);
  } else if (server_.HavePublished()) {
    const Snapshot& latest = server_.Latest();
    Publish(fetch_.round, latest.weights, latest.early_stopped, latest.update);
  }
  turn_outcome_ = result;
  if (turn_outcome_->ok()) (*turn_outcome_)->merged_weights = FloatArray();
  phase_ = Phase::kAwaitingRoundEnd;
  out.push_back(TurnOver{fetch_.round});
}

void RoundDriver::UpdateSampler(const RoundOutcome& outcome) {
  const int64_t round = fetch_.round;
  for (const Status& error : outcome.round_errors) {
    node_.log.error("round {}: {}", round, error.ToString());
  }
  std::vector<topology::PeerObservation> observations;
  for (const PeerScoreOutcome& s : outcome.scores) {
    if (!s.score) {
      node_.log.warn("round {}: could not score peer {}: {}", round, s.peer, s.error.ToString());
      continue;
    }
    auto row = fetch_.rows.find(s.peer);
    observations.push_back(
        {s.peer, *s.score, row == fetch_.rows.end() ? topology::ScoreRow{} : row->second});
  }
  if (round > 0 && !fetch_.resting) {
    Status updated = node_.sampler.Update(round, observations);
    if (!updated.ok()) {
      node_.log.warn("round {}: sampler update rejected: {}", round, updated.ToString());
    }
  }
  if (outcome.cluster_mates && node_.sampler.SetCluster(outcome.cluster_mates)) {
    // FLIC / OCFL: the learner's policy clustered; sample within the node's cluster from now on.
    node_.log.info("round {}: clustered; cluster mates: {}", round,
                   fmt::join(*outcome.cluster_mates, " "));
  }
}

void RoundDriver::CompleteRound(const Result<RoundOutcome>& result, TimePoint now, Actions& out) {
  int64_t round = fetch_.round;
  RoundRecord record;
  record.round = round;
  record.sampled = static_cast<int>(fetch_.sampled.size());
  record.answered = static_cast<int>(fetch_.answered.size());
  for (const topology::SampledPeer& p : fetch_.sampled) record.sampled_peers.push_back(p.peer);
  if (!result.ok()) {
    node_.log.error(
        "round {}: {}; the node stops learning and serves no model from now on (peers asking "
        "for one are told it halted)",
        round, result.status().ToString());
    record.stopped = true;
    record.outcome = RoundOutcome::Unmeasured(round);
    Publish(round, server_.HavePublished() ? server_.Latest().weights : FloatArray(), true);
    server_.Halt("node " + node_.requests.self() + " halted at round " + std::to_string(round) +
                     ": " + result.status().message() + "; it serves no model",
                 out);
  } else {
    const RoundOutcome& outcome = *result;
    counters_.merge_excluded += static_cast<uint64_t>(outcome.excluded_by_min_score);
    record.outcome = outcome;
    hooks_.Annotate(record);
    record.outcome.published_weights = FloatArray();
    record.outcome.published_update.reset();
    record.outcome.merged_weights = FloatArray();
    record.stopped = outcome.stopped;
    Publish(round, outcome.published_weights, outcome.stopped, outcome.published_update);
  }
  record.wall_seconds = Seconds(now - started_at_);
  completed_round_ = round;
  completed_wall_seconds_ = record.wall_seconds;
  node_.requests.set_round(round);
  server_.AnswerHeld(now, false, done(), out);
  out.push_back(RoundCompleted{std::move(record)});

  if (round >= config_.rounds) {
    phase_ = Phase::kLingering;
    linger_until_ = now + config_.linger;
    node_.log.info("all {} rounds done; serving for {:.1f} s more", config_.rounds,
                   Seconds(config_.linger));
    server_.AnswerHeld(now, true, done(), out);
  } else if (now < round_started_at_ + config_.min_round) {
    phase_ = Phase::kPacing;
    next_round_at_ = round_started_at_ + config_.min_round;
  } else {
    BeginRound(round + 1, now, out);
  }
}

void RoundDriver::Publish(int64_t round, FloatArray weights, bool stopped,
                          std::optional<FloatArray> update) {
  server_.Publish(SnapshotOf(round, std::move(weights), stopped, std::move(update)));
}

Snapshot RoundDriver::SnapshotOf(int64_t round, FloatArray weights, bool stopped,
                                 std::optional<FloatArray> update) const {
  Snapshot snapshot;
  snapshot.round = round;
  snapshot.weights = std::move(weights);
  snapshot.update = std::move(update);
  snapshot.early_stopped = stopped;
  topology::ScoreRow row = node_.sampler.WitnessRow();
  if (config_.score_lie_allies) {
    row = LyingScoreRow(row, *config_.score_lie_allies, node_.requests.self());
  }
  for (const topology::ScoreEntry& e : row) snapshot.score_row.push_back({e.peer, e.score});
  return snapshot;
}

void RoundDriver::OnTick(TimePoint now, Actions& out) {
  if (phase_ == Phase::kWaitingForPeers) MaybeBeginPendingRound(now, out);
  if (phase_ == Phase::kPacing && now >= next_round_at_) BeginRound(completed_round_ + 1, now, out);
  // Safety net: the transport fails requests at their deadline; this closes a fetch whose
  // failures were lost, a little later.
  if (phase_ == Phase::kFetching && now >= fetch_.deadline + config_.round_deadline / 4) {
    FinishFetch(out);
  }
  bool exchange_waits = hooks_.ExchangesInFlight() && now < linger_until_ + config_.exchange_linger;
  if (phase_ == Phase::kLingering && now >= linger_until_ && !exchange_waits) {
    phase_ = Phase::kFinished;
    server_.AnswerHeld(now, true, done(), out);
    hooks_.OnFinish(now, out);
    out.push_back(Finished{});
  }
}

}  // namespace meshlearn::node
