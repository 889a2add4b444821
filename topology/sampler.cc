#include "topology/sampler.h"

#include <algorithm>
#include <cmath>

#include "base/unit_uniform.h"

namespace meshlearn::topology {
namespace {

Status CheckObservations(const std::string& self, std::span<const PeerObservation> observations) {
  for (const PeerObservation& seen : observations) {
    if (seen.peer == self) return Status::InvalidArgument("sampler: an observation of self");
    if (!std::isfinite(seen.score)) {
      return Status::NonFinite("sampler: non-finite score of peer " + seen.peer);
    }
    for (const ScoreEntry& entry : seen.row) {
      if (!std::isfinite(entry.score)) {
        return Status::NonFinite("sampler: non-finite score in the row of peer " + seen.peer);
      }
    }
  }
  return Status::Ok();
}

}  // namespace

RowRank RankOfScore(const std::optional<double>& score) {
  if (!score) return {};
  return {*score > 0 ? RowRank::kPositive : RowRank::kNotAlike, *score};
}

PeerSampler::PeerSampler(std::string self) : self_(std::move(self)) {}

void PeerSampler::AfterDirectScores(
    std::vector<PeerRecord>& /*records*/,
    std::span<const PeerObservation* const> /*observations*/) const {}

std::vector<OutsideEstimate> PeerSampler::OutsideEstimates(
    const std::vector<PeerRecord>& /*records*/,
    std::span<const PeerObservation* const> /*observations*/) const {
  return {};
}

RowRank PeerSampler::RankOf(std::string_view peer) const {
  const PeerRecord* record = Find(peer);
  return record ? RankOfScore(record->score) : RowRank{};
}

RowRank PeerSampler::NewcomerRank(std::string_view peer) const {
  for (const OutsideEstimate& e : outside_) {
    if (e.peer == peer) return RankOfScore(e.score);
  }
  return {};
}

void PeerSampler::KeepOutsideEstimates(std::vector<OutsideEstimate> estimates) {
  std::erase_if(estimates, [](const OutsideEstimate& e) { return !(e.score > 0); });
  std::sort(estimates.begin(), estimates.end(),
            [](const OutsideEstimate& a, const OutsideEstimate& b) {
              return a.score != b.score ? a.score > b.score : a.peer < b.peer;
            });
  if (estimates.size() > kMaxOutsideEstimates) estimates.resize(kMaxOutsideEstimates);
  outside_ = std::move(estimates);
}

bool PeerSampler::SetCluster(std::optional<std::vector<std::string>> /*mates*/) { return false; }

size_t PeerSampler::LowerBound(std::string_view peer) const {
  return std::lower_bound(records_.begin(), records_.end(), peer,
                          [](const PeerRecord& r, std::string_view id) { return r.peer < id; }) -
         records_.begin();
}

const PeerRecord* PeerSampler::Find(std::string_view peer) const {
  const size_t at = LowerBound(peer);
  return at < records_.size() && records_[at].peer == peer ? &records_[at] : nullptr;
}

bool PeerSampler::HasPeer(std::string_view peer) const { return Find(peer) != nullptr; }

Status PeerSampler::AddPeer(std::string_view peer) {
  if (peer.empty()) return Status::InvalidArgument("sampler: empty peer id");
  if (peer == self_) return Status::InvalidArgument("sampler: a node is not its own peer");
  if (HasPeer(peer)) return Status::Ok();
  if (capacity_ > 0 && records_.size() >= capacity_) {
    return Status::TooMany("sampler: the row holds its " + std::to_string(capacity_) + " peers; " +
                           std::string(peer) + " is not added");
  }
  PeerRecord joined;
  joined.peer = std::string(peer);
  for (auto e = outside_.begin(); e != outside_.end(); ++e) {
    if (e->peer != peer) continue;
    joined.score = e->score;
    outside_.erase(e);
    break;
  }
  records_.insert(records_.begin() + LowerBound(peer), std::move(joined));
  Reweight(records_, round_);
  return Status::Ok();
}

Status PeerSampler::RemovePeer(std::string_view peer) {
  if (!HasPeer(peer)) return Status::NotFound("sampler: unknown peer " + std::string(peer));
  records_.erase(records_.begin() + LowerBound(peer));
  Reweight(records_, round_);
  return Status::Ok();
}

std::vector<SampledPeer> PeerSampler::Sample(size_t m, const PeerFilter& is_live, Rng& rng) const {
  std::vector<const PeerRecord*> candidates;
  for (const PeerRecord& record : records_) {
    if (record.probability > 0 && (!is_live || is_live(record.peer))) {
      candidates.push_back(&record);
    }
  }
  std::vector<SampledPeer> drawn;
  while (drawn.size() < m && !candidates.empty()) {
    double total = 0;
    for (const PeerRecord* record : candidates) total += record->probability;
    const double target = UnitUniform(rng) * total;
    // The last candidate also catches a target that rounding left past the final partial sum.
    size_t pick = candidates.size() - 1;
    double partial = 0;
    for (size_t c = 0; c + 1 < candidates.size(); ++c) {
      partial += candidates[c]->probability;
      if (target < partial) {
        pick = c;
        break;
      }
    }
    drawn.push_back({candidates[pick]->peer, candidates[pick]->probability});
    candidates.erase(candidates.begin() + pick);
  }
  return drawn;
}

Status PeerSampler::Update(int64_t round, std::span<const PeerObservation> observations) {
  MESHLEARN_RETURN_IF_ERROR(CheckObservations(self_, observations));
  std::vector<const PeerObservation*> known;
  for (const PeerObservation& seen : observations) {
    if (HasPeer(seen.peer)) known.push_back(&seen);
  }
  std::sort(known.begin(), known.end(),
            [](const PeerObservation* a, const PeerObservation* b) { return a->peer < b->peer; });
  for (size_t k = 1; k < known.size(); ++k) {
    if (known[k]->peer == known[k - 1]->peer) {
      return Status::InvalidArgument("sampler: peer " + known[k]->peer + " observed twice");
    }
  }
  for (const PeerObservation* seen : known) {
    PeerRecord& record = records_[LowerBound(seen->peer)];
    record.score = seen->score;
    record.sampled_directly = true;
  }
  round_ = round;
  AfterDirectScores(records_, known);
  if (capacity_ > 0 && records_.size() >= capacity_) {
    KeepOutsideEstimates(OutsideEstimates(records_, known));
  } else {
    outside_.clear();
  }
  Reweight(records_, round_);
  return Status::Ok();
}

ScoreRow PeerSampler::Scores() const {
  ScoreRow row;
  for (const PeerRecord& record : records_) {
    if (record.score) row.push_back({record.peer, *record.score});
  }
  return row;
}

SamplerState PeerSampler::Snapshot() const {
  return {.sampler = std::string(Name()), .round = round_, .peers = records_};
}

Status PeerSampler::Restore(const SamplerState& state) {
  if (state.sampler != Name()) {
    return Status::InvalidArgument("sampler: a \"" + state.sampler +
                                   "\" checkpoint cannot restore a \"" + std::string(Name()) +
                                   "\" sampler");
  }
  for (size_t k = 0; k < state.peers.size(); ++k) {
    const PeerRecord& record = state.peers[k];
    if (record.peer.empty() || record.peer == self_) {
      return Status::InvalidArgument("sampler: checkpoint names self or an empty peer");
    }
    if (k > 0 && !(state.peers[k - 1].peer < record.peer)) {
      return Status::InvalidArgument("sampler: checkpoint peers repeated or out of order");
    }
    if ((record.score && !std::isfinite(*record.score)) || !(record.probability >= 0) ||
        record.probability > 1) {
      return Status::InvalidArgument("sampler: checkpoint holds a bad score or probability for " +
                                     record.peer);
    }
  }
  round_ = state.round;
  records_ = state.peers;
  outside_.clear();
  return Status::Ok();
}

}  // namespace meshlearn::topology
