#pragma once
// Staleness-aware merge weights ([learning] staleness; DESIGN.md "Aggregation"): in asynchronous
// mode a peer may serve a model several rounds older than the node's own, and such a model is
// merged with less weight (FedAsync, Xie, Koyejo, Gupta 2019, section 5.2).
//
// Specification. The node merges in round t; its own model is of round t − 1 and peer j's of
// round r_j (Model.round). The staleness is d_j = max(0, t − 1 − r_j) (MergeInput::staleness).
// - s(d) is the weight of a peer d rounds behind: kNone s = 1; kPolynomial s = (1 + d)^−a;
//   kHinge s = 1 for d ≤ b, else 1 / (a (d − b) + 1) (FedAsync's two functions).
// - Over an aggregation's coefficients c_own, c_j the merge takes c_j s(d_j) for each
//   peer, and the node's own model keeps the rest: c_own + Σ c_j (1 − s(d_j)). The coefficients
//   still sum to 1.
//   Rationale: FedAsync mixes x ← (1 − α s) x + α s x_new, so the weight a stale model loses
//   stays with the node's own model; renormalising among the peers instead would leave a round
//   in which every peer is equally stale unchanged.
// - A fresh peer (d = 0) keeps its coefficient under every kind, so a synchronous run (every
//   served model is of round ≥ t − 1) merges exactly as without staleness weights.
// - With robust trimmed_mean or median (unweighted rules) the weights have no effect.

#include <cstdint>
#include <span>
#include <vector>

#include "base/named_value.h"
#include "training/aggregation.h"

namespace meshlearn::training {

// The staleness functions ([learning] staleness).
enum class StalenessKind {
  kNone,        // "none"
  kPolynomial,  // "polynomial"
  kHinge,       // "hinge"
};

// The config names of every StalenessKind, in documentation order.
NameTable<StalenessKind> StalenessKindNames();

// A staleness function and its parameters ([learning] staleness, staleness_a, staleness_b).
struct StalenessOptions {
  StalenessKind kind = StalenessKind::kNone;
  double a = 0.5;  // polynomial: the exponent; hinge: the slope past b
  double b = 4;    // hinge: the rounds of staleness that cost nothing
  bool operator==(const StalenessOptions&) const = default;
};

// s(staleness) under `options` (see the specification); 1 for staleness ≤ 0.
double StalenessWeight(const StalenessOptions& options, int64_t staleness);

// Puts the staleness weights on `coefficients` (the aggregation's c_own, c_j over own and
// `peers`, as AggregationCoefficients gives them; see the specification): c_j becomes
// c_j s(d_j) and c_own takes the rest. Leaves them as they are when options.kind is kNone.
void ApplyStalenessWeights(const StalenessOptions& options, std::span<const MergeInput> peers,
                           std::vector<double>& coefficients);

}  // namespace meshlearn::training
