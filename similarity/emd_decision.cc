#include "similarity/emd_decision.h"

#include <algorithm>
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

double Jaccard(const std::set<std::string>& a, const std::set<std::string>& b) {
  if (a.empty() && b.empty()) return 1;
  size_t common = 0;
  for (const std::string& id : a) common += b.count(id);
  return static_cast<double>(common) / static_cast<double>(a.size() + b.size() - common);
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
