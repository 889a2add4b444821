#include "similarity/emd_decision.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace meshlearn::similarity {

bool AcceptPeer(double emd_ij, double reference_i, double epsilon) {
  return emd_ij - reference_i < epsilon;
}

double AutomaticEpsilon(std::span<const double> excess, double reference_i) {
  std::vector<double> sorted;
  for (double x : excess) {
    if (std::isfinite(x)) sorted.push_back(x);
  }
  std::sort(sorted.begin(), sorted.end());
  double epsilon = -std::numeric_limits<double>::infinity(), widest = -1;
  for (size_t k = 0; k + 1 < sorted.size(); ++k) {
    if (sorted[k + 1] - sorted[k] > widest) {
      widest = sorted[k + 1] - sorted[k];
      epsilon = (sorted[k] + sorted[k + 1]) / 2;
    }
  }
  const double floor = std::isfinite(reference_i) ? kAutomaticEpsilonFloor * reference_i : 0.0;
  return std::max(epsilon, floor);
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
