#include "similarity/emd_decision.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

namespace meshlearn::similarity {

bool AcceptPeer(double emd_ij, double reference_i, double epsilon) {
  return emd_ij - reference_i < epsilon;
}

double AutomaticThreshold(std::span<const double> ratios) {
  std::vector<double> logs;
  for (double r : ratios) {
    if (std::isfinite(r) && r > 0) logs.push_back(std::log(r));
  }
  std::sort(logs.begin(), logs.end());
  double threshold = 0, widest = -1;
  for (size_t k = 0; k + 1 < logs.size(); ++k) {
    if (logs[k + 1] - logs[k] > widest) {
      widest = logs[k + 1] - logs[k];
      threshold = std::exp((logs[k] + logs[k + 1]) / 2);
    }
  }
  return std::max(threshold, kAutomaticRatioFloor);
}

LeaningColumns::LeaningColumns(size_t nodes) : words_((nodes + 63) / 64), bits_(nodes * words_) {
  for (size_t x = 0; x < nodes; ++x) Lean(x, x);
}

void LeaningColumns::Lean(size_t from, size_t to) {
  bits_[to * words_ + from / 64] |= uint64_t{1} << (from % 64);
}

double LeaningColumns::Jaccard(size_t a, size_t b) const {
  size_t common = 0, either = 0;
  for (size_t w = 0; w < words_; ++w) {
    common += static_cast<size_t>(std::popcount(bits_[a * words_ + w] & bits_[b * words_ + w]));
    either += static_cast<size_t>(std::popcount(bits_[a * words_ + w] | bits_[b * words_ + w]));
  }
  return static_cast<double>(common) / static_cast<double>(either);
}

double EmdScore(double excess) { return -std::max(0.0, excess); }

Result<double> EmdMetric::Score(const MetricInput& input) const {
  if (!input.exchanged_score.has_value()) {
    return Status::InvalidArgument(
        "emd: no exchanged score (the EMD exchange with this peer has "
        "not completed)");
  }
  if (!std::isfinite(*input.exchanged_score)) {
    return Status::NonFinite("emd: the exchanged score EMD_ij - ref_i is NaN or Inf");
  }
  // -max(0, x) of 0 is -0.0; return +0.0 so the value prints as 0.
  return EmdScore(*input.exchanged_score) + 0.0;
}

}  // namespace meshlearn::similarity
