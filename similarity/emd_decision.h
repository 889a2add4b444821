#pragma once
// The EMD-CFL decision rule and the `emd` similarity metric (file 000; DESIGN.md "EMD embedding
// exchange", step 4, and "Similarity metrics").
//
// Specification.
// - Node i measures EMD_ij = W(train_i, val_j) and its reference ref_i = W(train_i, val_i)
//   (similarity/emd.h). The excess EMD_ij − ref_i is how much farther j's data lies from i's
//   training data than i's own validation data does.
// - i accepts j iff EMD_ij − ref_i < ε (default ε = 0.1). An edge holds only if both accept
//   (decided by the caller, which exchanges decisions).
//   Rationale: ref_i absorbs the sampling noise of two finite samples of one distribution, so the
//   threshold compares distributions, not sample sizes.
// - Automatic ε (issue 19): a node that has measured its peers places ε in the largest gap of its
//   sorted excess values, but never below a floor of kAutomaticEpsilonFloor · ref_i
//   (AutomaticEpsilon). Mutual acceptance stays.
//   Rationale: within a cluster the excess is sampling noise around 0, across clusters it is
//   offset by how far the distributions lie apart; the largest jump in the sorted row separates the
//   two whatever their scale, which depends on the embedding, the projection and the data (the
//   fixed ε of emd-rotated-fmnist, 0.009, gave ARI 0.69 and 0.86 on seeds 2 and 3; the MNIST
//   digits' excess values overlap across rows, so no single ε fits every node). The floor keeps a
//   row of one distribution whole: without a real gap, its largest jump lies inside the noise,
//   whose scale is that of ref_i, itself the EMD between two samples of one distribution.
// - The `emd` metric turns the excess into a score for the DAC sampler: s_ij = −max(0, EMD_ij −
//   ref_i), 0 for "same distribution", more negative the farther apart.
//   Rationale: an excess below 0 is sampling noise, not extra similarity, so it is clipped.

#include <span>
#include <string_view>

#include "similarity/metric.h"

namespace meshlearn::similarity {

// DESIGN.md "EMD embedding exchange", step 4: ε = 0.1.
inline constexpr double kDefaultEmdAcceptance = 0.1;

// Returns true iff emd_ij − reference_i < epsilon (file 000's acceptance test; DESIGN.md step 4).
// A NaN anywhere rejects the peer.
bool AcceptPeer(double emd_ij, double reference_i, double epsilon = kDefaultEmdAcceptance);

// The floor of the automatic ε, relative to ref_i (see the specification).
inline constexpr double kAutomaticEpsilonFloor = 0.25;

// Returns node i's automatic ε for its excess values EMD_ij − ref_i over the peers it measured
// (any order): the midpoint of the largest gap between consecutive sorted values, or
// kAutomaticEpsilonFloor · `reference_i` when that is larger (also with fewer than two values).
// Non-finite values are ignored.
double AutomaticEpsilon(std::span<const double> excess, double reference_i);

// Returns the `emd` score −max(0, excess) of an excess EMD_ij − ref_i (DESIGN.md "Similarity
// metrics"). Requires a finite excess; the metric below checks it.
double EmdScore(double excess);

// `emd`: s_ij = −max(0, EMD_ij − ref_i), from MetricInput::exchanged_score = EMD_ij − ref_i
// computed by the embedding exchange. Reads no weights. A missing exchanged score is
// kInvalidArgument, a NaN or Inf one kNonFinite. Not symmetric: ref_i belongs to node i.
class EmdMetric final : public SimilarityMetric {
 public:
  std::string_view Name() const override { return "emd"; }
  MetricNeeds Needs() const override { return {.weights = false, .exchanged_score = true}; }
  bool Symmetric() const override { return false; }
  Result<double> Score(const MetricInput& input) const override;
};

}  // namespace meshlearn::similarity
