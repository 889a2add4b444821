#include "node/logic/public_estimates.h"

#include <string>
#include <utility>

namespace meshlearn::node {
namespace {

std::string Describe(const HeldEstimate& held) {
  return "(lineage " + std::to_string(held.start_round) + ", round " + std::to_string(held.round) +
         ")";
}

}  // namespace

EstimateOwner::EstimateOwner(CompressionSettings settings, std::vector<float> shared_initial)
    : settings_(settings),
      base_(shared_initial),
      base_checksum_(EstimateChecksum(shared_initial)),
      estimate_(std::move(shared_initial)) {}

void EstimateOwner::Restart(int64_t round, std::span<const float> model) {
  std::vector<float> start(model.begin(), model.end());
  start_round_ = round;
  base_round_ = round;
  base_checksum_ = EstimateChecksum(start);
  base_ = PublicEstimate(start);
  estimate_ = PublicEstimate(std::move(start));
  updates_.clear();
  update_bytes_ = 0;
}

void EstimateOwner::Publish(int64_t round, std::span<const float> model) {
  auto blob = round > newest_round() ? estimate_.EncodeUpdate(model, settings_)
                                     : Status::InvalidArgument("rounds must increase");
  if (!blob.ok()) {
    Restart(round, model);
    return;
  }
  update_bytes_ += blob->size();
  updates_.push_back({round, std::move(*blob), EstimateChecksum(estimate_.values())});
  const size_t budget = estimate_.values().size() * sizeof(float);
  while (update_bytes_ > budget && updates_.size() > 1) {
    Kept& oldest = updates_.front();
    // The owner applied these very bytes to the same estimate, so the base gets the same bits.
    if (!base_.Apply(oldest.blob).ok()) {
      Restart(round, model);
      return;
    }
    base_round_ = oldest.round;
    base_checksum_ = oldest.checksum;
    update_bytes_ -= oldest.blob.size();
    updates_.pop_front();
  }
}

Result<EstimateChain> EstimateOwner::ChainTo(int64_t to_round, const HeldEstimate& held) const {
  uint32_t checksum = base_checksum_;
  size_t end = 0;  // updates_[0, end) lead to to_round
  if (to_round != base_round_) {
    while (end < updates_.size() && updates_[end].round < to_round) ++end;
    if (end == updates_.size() || updates_[end].round != to_round) {
      return Status::NotFound("round " + std::to_string(to_round) +
                              " is not a kept round of the public estimate");
    }
    checksum = updates_[end].checksum;
    ++end;
  }
  size_t begin = 0;  // the first update the requester needs
  bool usable =
      held.start_round == start_round_ && held.round >= base_round_ && held.round <= to_round;
  if (usable && held.round != base_round_) {
    while (begin < end && updates_[begin].round <= held.round) ++begin;
    usable = begin > 0 && updates_[begin - 1].round == held.round;
  }
  EstimateChain chain;
  chain.start_round = start_round_;
  chain.to_round = to_round;
  chain.checksum = checksum;
  if (usable) {
    chain.from_round = held.round;
  } else if (to_round == newest_round()) {
    // The estimate itself is the base: one model's bytes, where base and kept updates may be two.
    begin = end;
    chain.from_round = to_round;
    chain.base = FloatArray::Own({estimate_.values().begin(), estimate_.values().end()});
  } else {
    begin = 0;
    chain.from_round = base_round_;
    chain.base = FloatArray::Own({base_.values().begin(), base_.values().end()});
  }
  for (size_t i = begin; i < end; ++i) chain.updates.push_back(updates_[i].blob);
  return chain;
}

EstimateOwnerState EstimateOwner::Export() const {
  EstimateOwnerState state;
  state.start_round = start_round_;
  state.base_round = base_round_;
  state.base.assign(base_.values().begin(), base_.values().end());
  state.estimate.assign(estimate_.values().begin(), estimate_.values().end());
  state.updates.assign(updates_.begin(), updates_.end());
  return state;
}

Status EstimateOwner::Restore(const EstimateOwnerState& state) {
  const size_t size = estimate_.values().size();
  if (state.base.size() != size || state.estimate.size() != size) {
    return Status::LayoutMismatch("checkpointed top-k estimate of " +
                                  std::to_string(state.estimate.size()) +
                                  " values for a model of " + std::to_string(size));
  }
  int64_t previous = state.base_round;
  for (const KeptUpdate& update : state.updates) {
    if (update.round <= previous) {
      return Status::Malformed("checkpointed top-k updates: round " + std::to_string(update.round) +
                               " after round " + std::to_string(previous));
    }
    previous = update.round;
  }
  const uint32_t newest =
      state.updates.empty() ? EstimateChecksum(state.base) : state.updates.back().checksum;
  if (EstimateChecksum(state.estimate) != newest) {
    return Status::Malformed("checkpointed top-k estimate does not match its newest checksum");
  }
  start_round_ = state.start_round;
  base_round_ = state.base_round;
  base_ = PublicEstimate(state.base);
  base_checksum_ = EstimateChecksum(state.base);
  estimate_ = PublicEstimate(state.estimate);
  updates_.assign(state.updates.begin(), state.updates.end());
  update_bytes_ = 0;
  for (const KeptUpdate& update : updates_) update_bytes_ += update.blob.size();
  return Status::Ok();
}

PeerEstimates::PeerEstimates(FloatArray shared_initial, size_t capacity)
    : shared_initial_(std::move(shared_initial)), capacity_(capacity) {}

HeldEstimate PeerEstimates::Held(const std::string& peer) const {
  auto it = entries_.find(peer);
  return it == entries_.end() ? HeldEstimate{} : it->second.held;
}

Result<FloatArray> PeerEstimates::Apply(const std::string& peer, const EstimateChain& chain) {
  // The peer's copy leaves the map while the chain is applied, and comes back only when it passed.
  std::optional<PublicEstimate> estimate;
  HeldEstimate held;
  if (auto it = entries_.find(peer); it != entries_.end()) {
    held = it->second.held;
    estimate.emplace(std::move(it->second.estimate));
    recency_.erase(it->second.recency);
    entries_.erase(it);
  }
  if (chain.base) {
    estimate.emplace(std::vector<float>(chain.base->view().begin(), chain.base->view().end()));
  } else if (held != HeldEstimate{chain.start_round, chain.from_round}) {
    return Status::InvalidArgument("peer " + peer + "'s chain starts from " +
                                   Describe({chain.start_round, chain.from_round}) +
                                   "; this node holds " + Describe(held));
  } else if (!estimate) {
    const std::span<const float> initial = shared_initial_.view();
    estimate.emplace(std::vector<float>(initial.begin(), initial.end()));
  }
  for (const std::vector<uint8_t>& update : chain.updates) {
    Status applied = estimate->Apply(update);
    if (!applied.ok()) return applied.WithContext("peer " + peer + "'s update chain");
  }
  if (EstimateChecksum(estimate->values()) != chain.checksum) {
    return Status::Malformed("peer " + peer + "'s estimate after its chain to round " +
                             std::to_string(chain.to_round) +
                             " does not match the chain's checksum (the peer restarted, or its "
                             "shared initial model differs from this node's)");
  }
  FloatArray values = FloatArray::Own({estimate->values().begin(), estimate->values().end()});
  recency_.push_front(peer);
  entries_.emplace(
      peer, Entry{{chain.start_round, chain.to_round}, std::move(*estimate), recency_.begin()});
  while (entries_.size() > capacity_) {
    entries_.erase(recency_.back());
    recency_.pop_back();
  }
  return values;
}

std::vector<PeerEstimateState> PeerEstimates::Export() const {
  std::vector<PeerEstimateState> peers;
  for (const std::string& peer : recency_) {
    const Entry& entry = entries_.at(peer);
    peers.push_back(
        {peer, entry.held, {entry.estimate.values().begin(), entry.estimate.values().end()}});
  }
  return peers;
}

Status PeerEstimates::Restore(const std::vector<PeerEstimateState>& peers) {
  for (const PeerEstimateState& p : peers) {
    if (p.values.size() != shared_initial_.size()) {
      return Status::LayoutMismatch("checkpointed top-k estimate of peer " + p.peer + ": " +
                                    std::to_string(p.values.size()) + " values for a model of " +
                                    std::to_string(shared_initial_.size()));
    }
  }
  entries_.clear();
  recency_.clear();
  for (const PeerEstimateState& p : peers) {
    if (entries_.size() == capacity_ || entries_.count(p.peer)) continue;
    recency_.push_back(p.peer);
    entries_.emplace(p.peer, Entry{p.held, PublicEstimate(p.values), std::prev(recency_.end())});
  }
  return Status::Ok();
}

}  // namespace meshlearn::node
