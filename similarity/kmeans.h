#pragma once
// k-means of a node's embeddings: the data signature FLT sends instead of its data (file 001,
// Algorithm 2 lines 6-10: M_m := {µ_1, ..., µ_k} ← kMEANS(E_m)).
//
// Specification.
// - Lloyd's algorithm on squared Euclidean distance, computed in double from the float points.
//   Each iteration assigns every point to its nearest centroid (the lowest index on a tie), then
//   moves every centroid to the mean of its points. It stops when no assignment changes or after
//   max_iterations assignment steps.
//   Rationale: FLT's clients run scikit-learn's KMeans, which is Lloyd's algorithm on Euclidean
//   distance.
// - Seeding is k-means++ (Arthur and Vassilvitskii 2007): the first centroid is a uniformly drawn
//   point, each next one a point drawn with probability proportional to its squared distance to
//   the nearest centroid chosen so far. When every point already coincides with a chosen
//   centroid, the lowest-index point not chosen yet is taken.
// - A centroid that loses all its points is moved to the point farthest from its own centroid
//   (the lowest index on a tie), which leaves that point's cluster.
//   Rationale: k centroids are promised; scikit-learn relocates empty clusters the same way.
// - `restarts` runs of seeding + Lloyd are made, one after another from the same generator, and
//   the run with the smallest inertia is returned (the first on a tie).
//   Rationale: one k-means++ seeding puts two seeds in one blob often enough to merge two others
//   (a few percent of runs at k = 4); FLT's clients used scikit-learn's KMeans, whose n_init was
//   10 at the time.
// - The result is a pure function of (points, k, seed, max_iterations): every draw comes from
//   std::mt19937_64(seed)'s raw 64-bit output (53 bits per uniform double), never from a std::
//   distribution, and every loop runs in index order.
//   Rationale: two runs of a scenario must send the same signatures (DESIGN.md "Determinism");
//   the std:: distributions differ between standard libraries, the Mersenne Twister does not.
// - Bad input is a Status: points that fail CheckPointSet() (empty, wrong size, NaN/Inf), k = 0,
//   k > rows, max_iterations < 1 or restarts < 1 are kInvalidArgument / kNonFinite.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "similarity/point_set.h"

namespace meshlearn::similarity {

// scikit-learn's default cap on Lloyd iterations.
inline constexpr int kDefaultKMeansIterations = 300;
// scikit-learn's n_init before version 1.4.
inline constexpr int kDefaultKMeansRestarts = 10;

// The outcome of KMeans().
struct KMeansResult {
  // k × cols centroids, row-major (centroid c is centroids[c*cols, (c+1)*cols)).
  std::vector<float> centroids;
  size_t k = 0;
  size_t cols = 0;
  // The centroid index of every point, in point order.
  std::vector<int> labels;
  // The sum over points of the squared distance to their centroid.
  double inertia = 0;
  // Assignment steps of the returned run (1 ≤ iterations ≤ max_iterations).
  int iterations = 0;

  // The centroids as a PointSet view (valid while this result lives).
  PointSet Centroids() const { return {centroids, k, cols}; }
};

// Returns k centroids of `points` as in the header specification, or kInvalidArgument /
// kNonFinite for bad input.
Result<KMeansResult> KMeans(const PointSet& points, size_t k, uint64_t seed,
                            int max_iterations = kDefaultKMeansIterations,
                            int restarts = kDefaultKMeansRestarts);

}  // namespace meshlearn::similarity
