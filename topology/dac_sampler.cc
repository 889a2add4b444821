#include "topology/dac_sampler.h"

#include <algorithm>
#include <cmath>

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

void DacSampler::AfterDirectScores(std::vector<PeerRecord>& records,
                                   std::span<const PeerObservation* const> observations) const {
  if (options_.two_hop == TwoHopRule::kOff) return;
  // Per record: the s_ij of the chosen witness j and its s_jk.
  struct Witness {
    double s_ij;
    double s_jk;
  };
  std::vector<std::optional<Witness>> chosen(records.size());
  const auto better = [&](double candidate, double current) {
    return options_.two_hop == TwoHopRule::kLargest ? candidate > current : candidate < current;
  };
  const bool capped =
      options_.two_hop == TwoHopRule::kLargest && options_.two_hop_cap == TwoHopCap::kWitness;
  // What a witness is ranked by: s_ij, or with the cap the estimate it gives (the widest path).
  const auto rank = [&](const Witness& w) { return capped ? std::min(w.s_ij, w.s_jk) : w.s_ij; };
  // Observations are sorted by peer id and only a strictly better witness replaces the current
  // one, so ties go to the smaller peer id.
  for (const PeerObservation* witness : observations) {
    for (const ScoreEntry& entry : witness->row) {
      // The paper code's rule (kSmallest) takes every entry; ours only positive evidence.
      if (!(entry.score > 0) && options_.two_hop != TwoHopRule::kSmallest) continue;
      const auto it =
          std::lower_bound(records.begin(), records.end(), entry.peer,
                           [](const PeerRecord& r, const std::string& id) { return r.peer < id; });
      if (it == records.end() || it->peer != entry.peer || it->sampled_directly) continue;
      std::optional<Witness>& best = chosen[it - records.begin()];
      const Witness candidate{witness->score, entry.score};
      // With the cap, a witness i does not find similar (s_ij <= 0) vouches for nobody.
      if (capped && !(rank(candidate) > 0)) continue;
      if (!best || better(rank(candidate), rank(*best))) best = candidate;
    }
  }
  for (size_t k = 0; k < records.size(); ++k) {
    if (!chosen[k]) continue;
    records[k].score = capped ? std::min(chosen[k]->s_ij, chosen[k]->s_jk) : chosen[k]->s_jk;
  }
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
