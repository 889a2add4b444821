#include "similarity/kmeans.h"

#include <algorithm>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <utility>

#include "base/unit_uniform.h"
#include "similarity/vector_kernels.h"

namespace meshlearn::similarity {
namespace {

std::span<const float> Row(std::span<const float> values, size_t cols, size_t i) {
  return values.subspan(i * cols, cols);
}

// k-means++ seeding (header specification); returns the indices of the chosen points.
std::vector<size_t> SeedIndices(const PointSet& points, size_t k, std::mt19937_64& rng) {
  const size_t n = points.rows;
  std::vector<size_t> chosen;
  chosen.push_back(std::min(n - 1, static_cast<size_t>(UnitUniform(rng) * static_cast<double>(n))));
  std::vector<double> nearest(n, std::numeric_limits<double>::infinity());
  std::vector<char> taken(n, 0);
  taken[chosen.back()] = 1;
  while (chosen.size() < k) {
    const auto last = Row(points.values, points.cols, chosen.back());
    double total = 0;
    for (size_t i = 0; i < n; ++i) {
      nearest[i] =
          std::min(nearest[i], FusedSquaredDistance(Row(points.values, points.cols, i), last));
      total += nearest[i];
    }
    size_t pick = n;
    if (total > 0) {
      const double target = UnitUniform(rng) * total;
      double partial = 0;
      for (size_t i = 0; i < n; ++i) {
        if (nearest[i] <= 0) continue;
        pick = i;  // the last point of positive weight also catches a rounding overshoot
        partial += nearest[i];
        if (target < partial) break;
      }
    } else {
      pick = static_cast<size_t>(std::find(taken.begin(), taken.end(), 0) - taken.begin());
    }
    taken[pick] = 1;
    chosen.push_back(pick);
  }
  return chosen;
}

// One run of seeding + Lloyd's iterations on validated input.
KMeansResult Run(const PointSet& points, size_t k, int max_iterations, std::mt19937_64& rng) {
  const size_t n = points.rows, d = points.cols;
  KMeansResult result;
  result.k = k;
  result.cols = d;
  result.centroids.resize(k * d);
  const std::vector<size_t> seeds = SeedIndices(points, k, rng);
  for (size_t c = 0; c < k; ++c) {
    const auto from = Row(points.values, d, seeds[c]);
    std::copy(from.begin(), from.end(), result.centroids.begin() + c * d);
  }

  result.labels.assign(n, -1);
  std::vector<double> distance(n);
  std::vector<size_t> count(k);
  std::vector<double> sum(k * d);
  for (int iteration = 1; iteration <= max_iterations; ++iteration) {
    result.iterations = iteration;
    bool changed = false;
    std::fill(count.begin(), count.end(), 0);
    for (size_t i = 0; i < n; ++i) {
      const auto point = Row(points.values, d, i);
      int best = 0;
      double best_distance = std::numeric_limits<double>::infinity();
      for (size_t c = 0; c < k; ++c) {
        const double dc = FusedSquaredDistance(point, Row(result.centroids, d, c));
        if (dc < best_distance) {
          best_distance = dc;
          best = static_cast<int>(c);
        }
      }
      changed |= result.labels[i] != best;
      result.labels[i] = best;
      distance[i] = best_distance;
      ++count[best];
    }
    // Empty clusters take the farthest point of a cluster that keeps at least one (pigeonhole:
    // k <= n, so while a cluster is empty another holds two or more).
    for (size_t c = 0; c < k; ++c) {
      if (count[c] != 0) continue;
      size_t far = n;
      for (size_t i = 0; i < n; ++i) {
        if (count[result.labels[i]] > 1 && (far == n || distance[i] > distance[far])) far = i;
      }
      --count[result.labels[far]];
      result.labels[far] = static_cast<int>(c);
      distance[far] = 0;
      count[c] = 1;
      changed = true;
    }
    if (!changed) break;
    std::fill(sum.begin(), sum.end(), 0.0);
    for (size_t i = 0; i < n; ++i) {
      double* into = sum.data() + result.labels[i] * d;
      const float* point = points.values.data() + i * d;
      for (size_t j = 0; j < d; ++j) into[j] += point[j];
    }
    for (size_t c = 0; c < k; ++c) {
      for (size_t j = 0; j < d; ++j) {
        result.centroids[c * d + j] = static_cast<float>(sum[c * d + j] / count[c]);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    result.inertia +=
        FusedSquaredDistance(Row(points.values, d, i), Row(result.centroids, d, result.labels[i]));
  }
  return result;
}

}  // namespace

Result<KMeansResult> KMeans(const PointSet& points, size_t k, uint64_t seed, int max_iterations,
                            int restarts) {
  MESHLEARN_RETURN_IF_ERROR(CheckPointSet(points, "kmeans: point set"));
  if (k == 0 || k > points.rows) {
    return Status::InvalidArgument("kmeans: k = " + std::to_string(k) + " is not in [1, " +
                                   std::to_string(points.rows) + "] (the number of points)");
  }
  if (max_iterations < 1 || restarts < 1) {
    return Status::InvalidArgument("kmeans: max_iterations and restarts must be >= 1, got " +
                                   std::to_string(max_iterations) + " and " +
                                   std::to_string(restarts));
  }
  std::mt19937_64 rng(seed);
  KMeansResult best = Run(points, k, max_iterations, rng);
  for (int run = 1; run < restarts; ++run) {
    KMeansResult next = Run(points, k, max_iterations, rng);
    if (next.inertia < best.inertia) best = std::move(next);
  }
  return best;
}

}  // namespace meshlearn::similarity
