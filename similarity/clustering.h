#pragma once
// Clustering helpers: clusters from the EMD exchange (DESIGN.md "EMD embedding exchange", step 5:
// "the launcher computes clusters as identical neighbourhoods, and the ARI against the ground
// truth"), and the partitions and the trigger of the clustering policies (DESIGN.md "Other seed
// methods as decentralized policies"; similarity/cluster_policy.h uses them).
//
// Specification of the partitions over a NodeMatrix (Louvain, agglomerative).
// - The input is a symmetric matrix over named nodes. Ids must be non-empty and distinct; the
//   values span must hold n² finite, non-negative entries with m_ij = m_ji (to 1e-12 relative).
//   Anything else is kInvalidArgument (kNonFinite for NaN/Inf). n = 0 gives an empty labelling.
//   Rationale: matrices are built from peers' vectors; a bad one is an error line, not a crash.
// - The result is one label per id, in the input's id order. The nodes are processed in ascending
//   id order, and labels are 0, 1, 2, ... numbered by the first member in ascending id order, so
//   the labelling does not depend on the order the ids are given in.
//   Rationale: a node meets its peers in a timing-dependent order; the clusters must depend only on
//   who was met and what they sent (DESIGN.md "Determinism").
// - Louvain (FLIC, file 002 section 4.1: "the community detection algorithm Louvain method")
//   runs igraph's multilevel modularity optimisation (Blondel et al. 2008) on the weighted graph
//   whose edge i–j has weight m_ij (i < j; zero weights are no edge) and whose vertex i has one
//   self-loop of weight m_ii (none when 0). A loop adds twice its weight to its vertex's strength,
//   as in networkx, where the FLIC code builds its graph. Resolution 1 by default. igraph visits
//   the vertices in a random order; the order is drawn from igraph's Mersenne Twister seeded with
//   `seed`, so the result is a function of (matrix, ids, seed).
//   Rationale: file 002 eq. 7 defines s = 1 + cos, diagonal 2, "positive, upper bounded by 2",
//   because Louvain needs positive weights; the number of clusters is not a parameter.
// - Agglomerative clustering merges, again and again, the two clusters at the smallest linkage
//   distance, while that distance is below `threshold` (scikit-learn's distance_threshold: merging
//   stops at the first distance >= threshold). Linkage distances between clusters A and B: single
//   = min over pairs, complete = max, average = the mean over all |A|·|B| pairs (UPGMA). Ties go
//   to the pair that comes first in ascending id order. The diagonal is not read.
//   Rationale: OCFL (file 003, section IV-B) runs its hierarchical baseline "with a distance
//   threshold in the [0.05, 0.4] range, cosine similarity metric and linkage by averaging"; the
//   default here is average. Single linkage at threshold γ equals the connected components of the
//   graph "D_ij < γ", which is FLT's thresholded adjacency read as clusters (file 001).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace meshlearn::similarity {

// Returns one cluster id per node from an N × N acceptance matrix (accepted[i][j]: the edge i–j
// holds; pass the mutual decisions, DESIGN.md step 4). The neighbourhood of i is {i} ∪ {j :
// accepted[i][j]}; nodes i and j share a cluster iff their neighbourhoods are identical. Ids are
// 0, 1, 2, ... in order of first appearance (node 0 is in cluster 0). Rows shorter than N count
// the missing entries as false; entries beyond N are ignored.
// Rationale: file 000 reads clusters off the accepted sets this way; a node whose neighbourhood
// differs from all others (an inconsistent decision) forms its own cluster, which the ARI punishes.
std::vector<int> ClustersFromNeighbourhoods(const std::vector<std::vector<bool>>& accepted);

// Returns the adjusted Rand index (Hubert and Arabie 1985) between two labelings of the same
// nodes: 1.0 for identical partitions up to relabelling, about 0 for independent ones, negative
// below chance. Follows scikit-learn's adjusted_rand_score, including its degenerate cases: two
// partitions with the same pairs (e.g. both a single cluster, both all singletons, or both empty)
// give 1.0. Labels are arbitrary ints. Returns NaN when the spans differ in length.
double AdjustedRandIndex(std::span<const int> truth, std::span<const int> predicted);

// The version of the igraph library Louvain runs on ("0.10.2"), for run manifests.
std::string IgraphVersion();

// A symmetric n × n matrix over named nodes, row-major: at(i, j) relates ids[i] and ids[j].
struct NodeMatrix {
  std::vector<std::string> ids;
  // ids.size()² entries.
  std::vector<double> values;

  // n, the number of nodes.
  size_t size() const { return ids.size(); }
  // The entry relating ids[i] and ids[j]; requires i, j < n and n² values.
  double at(size_t i, size_t j) const { return values[i * ids.size() + j]; }
};

// FLIC's Louvain resolution (file 002 uses the Louvain method's standard modularity).
inline constexpr double kDefaultLouvainResolution = 1.0;

// Returns the Louvain communities of the similarity graph `similarity` (header specification), one
// label per id in input order, or kInvalidArgument / kNonFinite for a bad matrix or a resolution
// that is not finite and > 0. Thread-safe: igraph keeps global state, so calls are serialised by a
// process-wide lock.
Result<std::vector<int>> LouvainCommunities(const NodeMatrix& similarity, uint64_t seed,
                                            double resolution = kDefaultLouvainResolution);

// How the distance between two clusters is computed from their members' distances.
enum class Linkage {
  kSingle,    // the closest pair
  kComplete,  // the farthest pair
  kAverage,   // the mean over all pairs (UPGMA); OCFL's choice (file 003, section IV-B)
};

// Returns the agglomerative clusters of `distance` cut at `threshold` (header specification), one
// label per id in input order, or kInvalidArgument / kNonFinite for a bad matrix or a threshold
// that is NaN. O(n³) time, O(n²) memory.
Result<std::vector<int>> AgglomerativeClusters(const NodeMatrix& distance, double threshold,
                                               Linkage linkage = Linkage::kAverage);

// Returns OCFL's clustering temperature (file 003, eq. 4 with p = 2 and λ = (n(n−1)·2²)^½)
//     T = ‖D‖_F / (2·√(n(n−1)))
// over a cosine-distance matrix D (entries 1 − cos in [0, 2], zero diagonal): 0 when every
// direction agrees, 1 when every pair is opposite. The Frobenius norm runs over all n² entries,
// both triangles. Requires a valid NodeMatrix (as above) with n >= 2; otherwise kInvalidArgument /
// kNonFinite.
Result<double> ClusteringTemperature(const NodeMatrix& distance);

}  // namespace meshlearn::similarity
