#pragma once
// Aggregation: the weighted average of the node's own model and the models of the sampled peers
// that answered, and the coefficients FedAvg and FedSim give it. DESIGN.md "Aggregation"; file
// 004 equation 5 (FedSim). The merge rules built on it are in training/merge_rule.h.
//
// A weighted merge computes out = sum_k c_k * w_k over the own model and the peers, with
// coefficients c_k >= 0 that sum to 1. The pass over the weights is one fused,
// blocked loop over contiguous floats, with no allocation inside it.
// Rationale: merging is memory-bandwidth bound, so each input float is read exactly once.
//
// The result does not depend on the order of `peers`: contributions are put in a canonical
// order before summing, so float rounding is the same for every arrival order.
// Rationale: with sync = true two runs must give the same metrics even if replies race.
//
// Leaving out a peer whose fresh score is below merge_min_score is the caller's decision: pass
// only the peers to merge.
//
// AggregationKindNames() is the only place where config strings meet aggregation kinds.

#include <cstdint>
#include <span>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"

namespace meshlearn::training {

// One model taking part in a merge.
struct MergeInput {
  std::span<const float> weights;  // the flat parameter vector (same layout for every input)
  uint64_t train_size = 0;         // n_j: samples in that node's training set (FedAvg)
  double probability = 0;          // p_ij before this round's update (FedSim; peers only)
  int64_t staleness = 0;  // rounds the peer's model is behind the own (training/staleness.h)
};

// The aggregation rules (DESIGN.md "Aggregation"): how the coefficients of a merge are weighed.
enum class AggregationKind {
  kFedAvg,  // "fedavg"
  kFedSim,  // "fedsim"
};

// The config name of every AggregationKind ([learning] aggregation), in documentation order.
NameTable<AggregationKind> AggregationKindNames();

// The coefficients of `own` (first) and of every peer (in the order given) under `kind`, summing
// to 1:
// - kFedAvg (McMahan et al. 2017): c_j = n_j / sum(n) over the node and its peers;
//   kInvalidArgument when every train_size is 0.
// - kFedSim (file 004, eq. 5): each peer weighs its sampling probability p_ij from before this
//   round's update, the node itself weighs max_j p_ij, and all are normalised to sum 1. With no
//   peers, or when every probability is 0, the node keeps its own model (c_own = 1).
//   kInvalidArgument when a probability is negative or not finite.
// Staleness weights (training/staleness.h) come on top of these (training/merge_rule.h).
Result<std::vector<double>> AggregationCoefficients(AggregationKind kind, const MergeInput& own,
                                                    std::span<const MergeInput> peers);

// out = sum_k coefficients[k] * inputs[k], in one blocked pass; all spans have out.size()
// floats (unchecked). Returns false when the result holds NaN or Inf. Exposed for benchmarks
// and for callers that compute their own coefficients.
bool WeightedSum(std::span<const std::span<const float>> inputs,
                 std::span<const float> coefficients, std::span<float> out);

// kLayoutMismatch, naming the input, when the weights of `own` or of a peer do not hold `floats`
// floats.
Status CheckMergeLayout(const MergeInput& own, std::span<const MergeInput> peers, size_t floats);

// Writes sum_k coefficients[k] * w_k over `own` (k = 0) and `peers` (k = 1...) into `out` (which
// may alias own.weights), summing in a canonical order (see the top of this header);
// `coefficients` holds
// peers.size() + 1 values. kLayoutMismatch when a weight vector's length differs from out.size();
// kNonFinite, naming the input, when an input holds NaN/Inf or the sum overflows (then `out` is
// unspecified).
Status MergeWeighted(const MergeInput& own, std::span<const MergeInput> peers,
                     std::span<const double> coefficients, std::span<float> out);

}  // namespace meshlearn::training
