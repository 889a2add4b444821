#include "similarity/centroid_signature.h"

#include <cmath>
#include <string>
#include <vector>

#include "similarity/assignment.h"
#include "similarity/vector_kernels.h"

namespace meshlearn::similarity {

Result<double> CentroidSetDistance(const PointSet& a, const PointSet& b) {
  MESHLEARN_RETURN_IF_ERROR(CheckPointSet(a, "centroid: set a"));
  MESHLEARN_RETURN_IF_ERROR(CheckPointSet(b, "centroid: set b"));
  if (a.cols != b.cols) {
    return Status::LayoutMismatch("centroid: sets have " + std::to_string(a.cols) + " and " +
                                  std::to_string(b.cols) + " dimensions");
  }
  if (a.rows > kMaxCentroids || b.rows > kMaxCentroids) {
    return Status::TooMany("centroid: " + std::to_string(a.rows) + " and " +
                           std::to_string(b.rows) + " centroids; at most " +
                           std::to_string(kMaxCentroids) + " per set");
  }
  std::vector<double> cost(a.rows * b.rows);
  for (size_t r = 0; r < a.rows; ++r) {
    for (size_t s = 0; s < b.rows; ++s) {
      cost[r * b.rows + s] = FusedSquaredDistance(a.values.subspan(r * a.cols, a.cols),
                                                  b.values.subspan(s * b.cols, b.cols));
    }
  }
  Result<Assignment> matching = MinCostAssignment(cost, a.rows, b.rows);
  if (!matching.ok()) return matching.status().WithContext("centroid");
  const double matched = static_cast<double>(std::min(a.rows, b.rows));
  return std::sqrt(matching->total_cost) / matched;
}

bool CentroidsRelated(double distance, double threshold) { return distance < threshold; }

Result<double> CentroidMetric::Score(const MetricInput& input) const {
  if (!input.exchanged_score.has_value()) {
    return Status::InvalidArgument(
        "centroid: no centroid-set distance for this peer (its "
        "signature has not arrived)");
  }
  const double distance = *input.exchanged_score;
  if (!std::isfinite(distance)) return Status::NonFinite("centroid: the distance is NaN or Inf");
  if (distance < 0) {
    return Status::InvalidArgument("centroid: negative distance " + std::to_string(distance));
  }
  // -0.0 for an identical signature; return +0.0 so the value prints as 0.
  return -distance + 0.0;
}

}  // namespace meshlearn::similarity
