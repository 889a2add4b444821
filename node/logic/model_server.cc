#include "node/logic/model_server.h"

#include <string>

namespace meshlearn::node {
namespace {

// The bytes of a snapshot's floats.
size_t FloatBytes(const Snapshot& s) {
  return (s.weights.size() + (s.update ? s.update->size() : 0)) * sizeof(float);
}

}  // namespace

ModelServer::ModelServer(ServingConfig config, RequestBook& requests)
    : config_(std::move(config)), requests_(requests) {
  if (config_.compression.codec == CompressionCodec::kTopK) {
    const std::span<const float> initial = config_.shared_initial.view();
    estimate_.emplace(config_.compression, std::vector<float>(initial.begin(), initial.end()));
  }
}

void ModelServer::Keep(Snapshot snapshot) {
  history_bytes_ += FloatBytes(snapshot);
  history_.push_back(Kept{std::move(snapshot), {}});
  while (history_.size() > kMinSnapshotHistory && history_bytes_ > config_.history_bytes) {
    history_bytes_ -= FloatBytes(history_.front().snapshot);
    history_.pop_front();
  }
}

void ModelServer::Publish(Snapshot snapshot) {
  Keep(std::move(snapshot));
  if (estimate_) {
    const Snapshot& newest = history_.back().snapshot;
    estimate_->Publish(newest.round, newest.weights.view());
  }
}

void ModelServer::PublishResumed(Snapshot snapshot,
                                 const std::optional<EstimateOwnerState>& state) {
  // The checkpointed estimate goes on where it was when it belongs to this very snapshot; else
  // a new lineage starts here.
  if (estimate_ &&
      (!state || state->newest_round() != snapshot.round || !estimate_->Restore(*state).ok())) {
    estimate_->Restart(snapshot.round, snapshot.weights.view());
  }
  Keep(std::move(snapshot));
}

std::optional<EstimateOwnerState> ModelServer::ExportEstimate() const {
  if (!estimate_) return std::nullopt;
  return estimate_->Export();
}

FloatArray ModelServer::RoundZeroWeights() const {
  FloatArray phi = history_.empty() ? FloatArray() : history_.front().snapshot.weights;
  for (const Kept& kept : history_) {
    if (kept.snapshot.round == 0) phi = kept.snapshot.weights;
  }
  return phi;
}

bool ModelServer::Satisfies(int64_t min_round, bool done) const {
  return HavePublished() && (Latest().round >= min_round || Latest().early_stopped || done);
}

void ModelServer::OnGetModel(InboundId inbound, const Envelope& env, const GetModel& get,
                             TimePoint now, bool done, Actions& out) {
  if (halted_) {
    out.push_back(
        requests_.ReplyTo(inbound, env.request_id, Error{ErrorCode::kUnavailable, *halted_}));
    return;
  }
  const CompressionCodec codec = CodecFor(get);
  const HeldEstimate estimate = get.estimate.value_or(HeldEstimate{});
  if (Satisfies(get.min_round, done) || (HavePublished() && !get.wait)) {
    out.push_back(ModelReply(inbound, env.request_id, get.min_round, get.wait, get.with_update,
                             codec, estimate));
    return;
  }
  if (!get.wait) {
    out.push_back(
        requests_.ReplyTo(inbound, env.request_id, Error{ErrorCode::kUnavailable, kNoModelYet}));
    return;
  }
  held_.push_back({inbound, env.request_id, get.min_round, now + config_.hold_limit,
                   get.with_update, codec, estimate});
}

CompressionCodec ModelServer::CodecFor(const GetModel& get) const {
  const CompressionCodec ours = config_.compression.codec;
  if (ours == CompressionCodec::kNone) return ours;
  // Rationale: a top-k chain needs the estimate the requester holds.
  if (ours == CompressionCodec::kTopK && !get.estimate) return CompressionCodec::kNone;
  for (CompressionCodec accepted : get.accepts) {
    if (accepted == ours) return ours;
  }
  return CompressionCodec::kNone;
}

void ModelServer::Halt(std::string reason, Actions& out) {
  halted_ = std::move(reason);
  for (const Held& held : held_) {
    out.push_back(
        requests_.ReplyTo(held.inbound, held.request_id, Error{ErrorCode::kUnavailable, *halted_}));
  }
  held_.clear();
}

void ModelServer::AnswerHeld(TimePoint now, bool expire_all, bool done, Actions& out) {
  for (auto it = held_.begin(); it != held_.end();) {
    if (Satisfies(it->min_round, done)) {
      out.push_back(ModelReply(it->inbound, it->request_id, it->min_round, true, it->with_update,
                               it->codec, it->estimate));
      it = held_.erase(it);
    } else if (expire_all || now >= it->deadline) {
      ++held_requests_expired_;
      out.push_back(requests_.ReplyTo(
          it->inbound, it->request_id,
          Error{ErrorCode::kTimeout, "no snapshot of round " + std::to_string(it->min_round) +
                                         " within the deadline (latest is round " +
                                         std::to_string(HavePublished() ? Latest().round : -1) +
                                         ")"}));
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
}

SendReply ModelServer::ModelReply(InboundId inbound, uint64_t request_id, int64_t min_round,
                                  bool wait, bool with_update, CompressionCodec codec,
                                  const HeldEstimate& estimate) {
  Kept* chosen = &history_.back();
  if (wait) {
    for (Kept& kept : history_) {
      if (kept.snapshot.round >= min_round) {
        chosen = &kept;
        break;
      }
    }
  }
  EncodingKey key{with_update, codec};
  std::optional<EstimateChain> chain;
  if (codec == CompressionCodec::kTopK) {
    Result<EstimateChain> to_snapshot = estimate_->ChainTo(chosen->snapshot.round, estimate);
    if (to_snapshot.ok()) {
      key.chain_from = to_snapshot->base ? kFromBase : to_snapshot->from_round;
      if (to_snapshot->base) ++whole_estimates_sent_;
      chain = std::move(*to_snapshot);
    } else {
      key.codec = CompressionCodec::kNone;  // not expected: every kept round is chained
    }
  }
  std::shared_ptr<const EncodedBody>& encoded = chosen->encodings[key];
  if (!encoded) {
    encoded = std::make_shared<const EncodedBody>(
        EncodeBody(SnapshotModel(chosen->snapshot, key, std::move(chain))));
  }
  SendReply reply = requests_.ReplyTo(inbound, request_id, Model{});
  reply.encoded_body = encoded;
  return reply;
}

Model ModelServer::SnapshotModel(const Snapshot& s, const EncodingKey& key,
                                 std::optional<EstimateChain> chain) const {
  Model model;
  model.round = s.round;
  model.train_size = config_.train_size;
  model.early_stopped = s.early_stopped;
  model.layout = config_.layout;
  model.score_row = s.score_row;
  model.weights = s.weights;
  if (key.with_update) model.update = s.update;
  model.chain = std::move(chain);
  if (key.codec != CompressionCodec::kNone) model.encoding = config_.compression;
  return model;
}

}  // namespace meshlearn::node
