#include "topology/dac_sampler.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace meshlearn::topology {

double TauAt(double tau, TauSchedule schedule, int64_t round) {
  if (schedule == TauSchedule::kConstant) return tau;
  // DAC_var: a sigmoid in t from 1 towards a + 1.
  const double a = tau;
  return 2 * a / (1 + std::exp(-0.2 * static_cast<double>(round))) - a + 1;
}

std::vector<double> DacProbabilities(std::span<const std::optional<double>> scores, double tau,
                                     UnscoredRule unscored, ScoreNormalization normalize) {
  const size_t n = scores.size();
  std::vector<double> value(n, 0);
  std::vector<bool> enters(n, false);
  for (size_t k = 0; k < n; ++k) {
    if (unscored == UnscoredRule::kZero) {
      enters[k] = true;
      value[k] = scores[k].value_or(0);
    } else if (scores[k] && *scores[k] > 0) {
      enters[k] = true;
      value[k] = *scores[k];
    }
  }
  if (std::find(enters.begin(), enters.end(), true) == enters.end()) {
    return std::vector<double>(n, n == 0 ? 0 : 1.0 / static_cast<double>(n));
  }
  double lo = INFINITY, hi = -INFINITY;
  for (size_t k = 0; k < n; ++k) {
    if (!enters[k]) continue;
    lo = std::min(lo, value[k]);
    hi = std::max(hi, value[k]);
  }
  if (normalize == ScoreNormalization::kMinMax) {
    for (size_t k = 0; k < n; ++k) {
      if (enters[k]) value[k] = hi > lo ? (value[k] - lo) / (hi - lo) : 1;
    }
    hi = 1;  // the largest normalised score, in both branches
  }
  std::vector<double> p(n, 0);
  double softmax_sum = 0;
  for (size_t k = 0; k < n; ++k) {
    if (!enters[k]) continue;
    p[k] = std::exp(tau * (value[k] - hi));
    softmax_sum += p[k];
  }
  double total = 0;
  for (size_t k = 0; k < n; ++k) {
    p[k] = enters[k] ? p[k] / softmax_sum : kDacFloorProbability;
    total += p[k];
  }
  for (double& pk : p) pk /= total;
  return p;
}

Result<std::unique_ptr<DacSampler>> DacSampler::Create(std::string self,
                                                       const DacOptions& options) {
  if (!std::isfinite(options.tau) || options.tau < 0) {
    return Status::InvalidArgument("dac: tau must be finite and >= 0, got " +
                                   std::to_string(options.tau));
  }
  if (options.explore_rounds < 0) {
    return Status::InvalidArgument("dac: explore_rounds must be >= 0, got " +
                                   std::to_string(options.explore_rounds));
  }
  return std::unique_ptr<DacSampler>(new DacSampler(std::move(self), options));
}

DacSampler::DacSampler(std::string self, const DacOptions& options)
    : PeerSampler(std::move(self)), options_(options) {}

void DacSampler::Reweight(std::vector<PeerRecord>& records, int64_t round) const {
  // While exploring, no score enters: DacProbabilities gives the prior.
  const bool exploring = options_.explore_rounds > 0 && round <= options_.explore_rounds;
  std::vector<std::optional<double>> scores(records.size());
  if (!exploring) {
    for (size_t k = 0; k < records.size(); ++k) scores[k] = records[k].score;
  }
  const std::vector<double> p =
      DacProbabilities(scores, TauAt(options_.tau, options_.tau_schedule, round), options_.unscored,
                       options_.normalize);
  for (size_t k = 0; k < records.size(); ++k) records[k].probability = p[k];
}

namespace {

// The witness chosen for one peer: i's score of it (s_ij), its score of the peer (s_jk), its id.
struct Witness {
  double s_ij;
  double s_jk;
  const std::string* id;
};

// Runs the two-hop choice of the specification over `observations` (sorted by peer id) for every
// row entry whose peer `slot` maps to a place (nullptr: not a target), leaving there the chosen
// witness. Observations are sorted by peer id and only a strictly better witness replaces the
// current one, so ties go to the smaller peer id.
template <class Slot>
void ChooseWitnesses(const DacOptions& options,
                     std::span<const PeerObservation* const> observations, Slot slot) {
  const auto better = [&](double candidate, double current) {
    return options.two_hop == TwoHopRule::kLargest ? candidate > current : candidate < current;
  };
  const bool capped =
      options.two_hop == TwoHopRule::kLargest && options.two_hop_cap == TwoHopCap::kWitness;
  // What a witness is ranked by: s_ij, or with the cap the estimate it gives (the widest path).
  const auto rank = [&](const Witness& w) { return capped ? std::min(w.s_ij, w.s_jk) : w.s_ij; };
  for (const PeerObservation* witness : observations) {
    for (const ScoreEntry& entry : witness->row) {
      // The paper code's rule (kSmallest) takes every entry; ours only positive evidence.
      if (!(entry.score > 0) && options.two_hop != TwoHopRule::kSmallest) continue;
      std::optional<Witness>* best = slot(entry.peer);
      if (!best) continue;
      const Witness candidate{witness->score, entry.score, &witness->peer};
      // With the cap, a witness i does not find similar (s_ij <= 0) vouches for nobody.
      if (capped && !(rank(candidate) > 0)) continue;
      if (!*best || better(rank(candidate), rank(**best))) *best = candidate;
    }
  }
}

// The record of `peer` in `records` (ordered by peer id), or nullptr.
const PeerRecord* RecordOf(const std::vector<PeerRecord>& records, const std::string& peer) {
  const auto it =
      std::lower_bound(records.begin(), records.end(), peer,
                       [](const PeerRecord& r, const std::string& id) { return r.peer < id; });
  return it == records.end() || it->peer != peer ? nullptr : &*it;
}

// The estimate s_ik a chosen witness gives (see the specification).
double EstimateOf(const DacOptions& options, const Witness& w) {
  const bool capped =
      options.two_hop == TwoHopRule::kLargest && options.two_hop_cap == TwoHopCap::kWitness;
  return capped ? std::min(w.s_ij, w.s_jk) : w.s_jk;
}

}  // namespace

void DacSampler::AfterDirectScores(std::vector<PeerRecord>& records,
                                   std::span<const PeerObservation* const> observations) const {
  if (options_.two_hop == TwoHopRule::kOff) return;
  std::vector<std::optional<Witness>> chosen(records.size());
  ChooseWitnesses(options_, observations, [&](const std::string& peer) -> std::optional<Witness>* {
    const PeerRecord* record = RecordOf(records, peer);
    if (!record || record->sampled_directly) return nullptr;
    return &chosen[record - records.data()];
  });
  for (size_t k = 0; k < records.size(); ++k) {
    if (chosen[k]) records[k].score = EstimateOf(options_, *chosen[k]);
  }
}

std::vector<OutsideEstimate> DacSampler::OutsideEstimates(
    const std::vector<PeerRecord>& records,
    std::span<const PeerObservation* const> observations) const {
  if (options_.two_hop == TwoHopRule::kOff) return {};
  std::map<std::string, std::optional<Witness>, std::less<>> chosen;
  ChooseWitnesses(options_, observations, [&](const std::string& peer) -> std::optional<Witness>* {
    if (peer == self()) return nullptr;
    return RecordOf(records, peer) ? nullptr : &chosen[peer];
  });
  std::vector<OutsideEstimate> out;
  for (const auto& [peer, witness] : chosen) {
    if (witness) out.push_back({peer, EstimateOf(options_, *witness), *witness->id});
  }
  return out;
}

ScoreRow DacSampler::WitnessRow() const {
  if (options_.two_hop_row == TwoHopRow::kAll) return Scores();
  ScoreRow row;
  for (const PeerRecord& record : Records()) {
    if (record.sampled_directly && record.score) row.push_back({record.peer, *record.score});
  }
  return row;
}

}  // namespace meshlearn::topology
