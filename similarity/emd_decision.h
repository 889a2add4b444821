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
// - Automatic rule (issue 19; `epsilon = "auto"`): no ε. Node i describes each pair by its ratio
//   ρ_ij = EMD_ij / ref_i, averaged with the peer's own ratio ρ_ji = EMD_ji / ref_j once the peer's
//   decision has brought it (EmdDecision carries EMD_ji and ref_j). It accepts j iff ρ < t, where
//   t is the geometric midpoint of the largest gap between consecutive sorted log ρ of its row,
//   and never below kAutomaticRatioFloor (AutomaticThreshold). Mutual acceptance stays.
//   Rationale:
//   - within a cluster EMD_ij is sampling noise at the scale of ref_i (ρ ≈ 1); across clusters it
//     grows with how far the distributions lie apart, so the row is a tight low group and a spread
//     upper one. On a log scale the spread of the far clusters shrinks, so the largest jump is the
//     one above the low group. The scale of EMD (embedding, projection, data) cancels in ρ.
//   - ρ_ij alone differs from ρ_ji (φ_i embeds j's data and φ_j embeds i's), and a pair one side
//     accepts and the other rejects breaks the cluster for both. Their mean is the same number on
//     both sides.
//   - Measured on the stored emd.csv of 12 runs of emd-rotated-fmnist (16 nodes), re-deciding
//     offline: the largest gap of the linear excess EMD_ij − ref_i gave ARI 1 in 8, as low as
//     0.53, because a far cluster (180°) often opens a wider gap than the own cluster's; the log
//     gap of ρ_ij alone in 7; the log gap of the mean ratio in 11 (0.86 in the twelfth).
//   - The floor keeps a row of one distribution whole: without a real gap, its largest jump lies
//     inside the noise, at ρ near 1.
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

// The automatic rule accepts every pair whose ratio ρ is below this (see the specification).
inline constexpr double kAutomaticRatioFloor = 1.25;

// Returns node i's automatic threshold t over its pairs' ratios ρ (any order; non-finite and
// non-positive values are ignored): the geometric midpoint of the largest gap between consecutive
// sorted log ρ, or kAutomaticRatioFloor when that is larger (also with fewer than two values).
// Node i accepts j iff ρ_ij < t.
double AutomaticThreshold(std::span<const double> ratios);
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
