#pragma once
// FLT's data signatures (file 001, Algorithm 2; DESIGN.md "Other seed methods", FLT): each node
// sends the k-means centroids of its embeddings under a shared encoder (similarity/kmeans.h), and
// two nodes are as related as their centroid sets are close.
//
// Specification.
// - The distance between centroid sets A (k_a points) and B (k_b points) of the same dimension is
//   the minimum-matching distance
//       D(A, B) = sqrt( min_π Σ_{r=1..s} ‖a_r − b_π(r)‖₂² ) / s,   s = min(k_a, k_b),
//   the minimum over one-to-one matchings π of the smaller set into the larger one (written here
//   with A the smaller): Euclidean (L2) point distance, squared and summed over the matched pairs,
//   then square-rooted and divided by the number of pairs. The matching is found by the Hungarian
//   method on the squared Euclidean distances (similarity/assignment.h), not by trying the k!
//   permutations.
//   Rationale: this is the `min_matching_distance` of FLT's released code (squared L2 summed over
//   the matched pairs, square root, divided by the size of the smaller set). The paper's text
//   writes A_ij = min_{r,s} ‖u_i,r − u_j,s‖₂, the single closest pair, under which two nodes that
//   share one class out of k would be at distance ~0; the matching compares whole signatures.
// - D is symmetric, invariant under reordering either set, ≥ 0, and 0 for identical sets.
// - FLT applies UMAP to all clients' centroids at the server before measuring; meshlearn measures
//   in the encoder's space.
//   Rationale: UMAP is fitted on every node's centroids at once, which needs a server, and has
//   no torch-free C++ implementation here. The paper's PCA+kM+HC baseline also skips it and does
//   worse than FLT, so expect the encoder to carry more of the separation.
// - Adjacency (file 001: Ã_ij = Γ(A_ij − γ)): nodes i and j are related iff D < threshold γ.
//   Hard clusters: single-linkage agglomerative clustering at γ (similarity/clustering.h), which
//   is exactly the connected components of that adjacency graph; or, per node, "uniform within
//   the peers closer than γ" (the `emd_cluster`-style sampler fed +1/−1 decisions).
// - The `centroid` metric (DESIGN.md "Similarity metrics") turns D into a DAC score s_ij = −D.
// - Centroid sets come from peers: a set failing CheckPointSet() is kInvalidArgument/kNonFinite,
//   different dimensions kLayoutMismatch, more than kMaxCentroids points kTooMany.

#include <cstddef>
#include <string_view>

#include "base/status.h"
#include "similarity/metric.h"
#include "similarity/point_set.h"

namespace meshlearn::similarity {

// The most centroids a signature may hold (FLT uses k = 5).
// Rationale: the matching costs O(k³); a peer must not make it expensive.
inline constexpr size_t kMaxCentroids = 1024;

// Returns D(a, b), the minimum-matching distance between two centroid sets (header
// specification), or an input error. Never NaN or Inf.
Result<double> CentroidSetDistance(const PointSet& a, const PointSet& b);

// Returns true iff `distance` < `threshold`: FLT's hard threshold Γ on one pair (file 001,
// Ã_ij). A NaN anywhere gives false.
bool CentroidsRelated(double distance, double threshold);

// `centroid`: s_ij = −D(C_i, C_j) from MetricInput::exchanged_score = D(C_i, C_j), computed by the
// node with CentroidSetDistance() from the two signatures. Reads no weights. A missing exchanged
// score is kInvalidArgument, a NaN or Inf one kNonFinite, a negative one kInvalidArgument.
// Symmetric, since D is.
class CentroidMetric final : public SimilarityMetric {
 public:
  std::string_view Name() const override { return "centroid"; }
  MetricNeeds Needs() const override { return {.weights = false, .exchanged_score = true}; }
  bool Symmetric() const override { return true; }
  Result<double> Score(const MetricInput& input) const override;
};

}  // namespace meshlearn::similarity
