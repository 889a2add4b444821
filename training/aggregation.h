#pragma once
// Aggregation rules: merge the node's own model with the models of the sampled peers that
// answered. DESIGN.md "Aggregation"; file 004 equation 5 (FedSim).
//
// Every rule computes out = sum_k c_k * w_k over the own model and the peers, with coefficients
// c_k >= 0 that sum to 1 and depend only on the rule. The pass over the weights is one fused,
// blocked loop over contiguous floats, with no allocation inside it.
// Rationale: merging is memory-bandwidth bound, so each input float is read exactly once.
//
// The result does not depend on the order of `peers`: contributions are put in a canonical
// order before summing, so float rounding is the same for every arrival order.
// Rationale: with sync = true two runs must give the same metrics even if replies race.
//
// Leaving out a peer whose fresh score is below merge_min_score is the caller's decision: pass
// only the peers to merge.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
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

// A rule that merges flat parameter vectors.
class AggregationRule {
 public:
  virtual ~AggregationRule() = default;
  // The config name of the rule ("fedavg", "fedsim").
  virtual std::string_view Name() const = 0;
  // The coefficients of `own` (first) and of every peer (in the order given), summing to 1.
  // kInvalidArgument when the rule's inputs are unusable (e.g. every train_size is 0, or a
  // probability is negative or not finite).
  virtual Result<std::vector<double>> Coefficients(const MergeInput& own,
                                                   std::span<const MergeInput> peers) const = 0;
  // Writes the merge of `own` and `peers` into `out` (which may alias own.weights).
  // kLayoutMismatch when a weight vector's length differs from out.size(); kNonFinite when an
  // input holds NaN/Inf or the sum overflows (then `out` is unspecified); errors of
  // Coefficients() otherwise.
  Status Merge(const MergeInput& own, std::span<const MergeInput> peers,
               std::span<float> out) const;
};

// FedAvg (McMahan et al. 2017): c_j = n_j / sum(n) over the node and its peers.
class FedAvgRule final : public AggregationRule {
 public:
  std::string_view Name() const override { return "fedavg"; }
  Result<std::vector<double>> Coefficients(const MergeInput& own,
                                           std::span<const MergeInput> peers) const override;
};

// FedSim (file 004, eq. 5): each peer weighs its sampling probability p_ij from before this
// round's update, the node itself weighs max_j p_ij, and all are normalised to sum 1. With no
// peers, or when every probability is 0, the node keeps its own model (c_own = 1).
class FedSimRule final : public AggregationRule {
 public:
  std::string_view Name() const override { return "fedsim"; }
  Result<std::vector<double>> Coefficients(const MergeInput& own,
                                           std::span<const MergeInput> peers) const override;
};

// The aggregation rules (DESIGN.md "Aggregation").
enum class AggregationKind {
  kFedAvg,  // "fedavg"
  kFedSim,  // "fedsim"
};

// The config name of every AggregationKind ([learning] aggregation), in documentation order.
NameTable<AggregationKind> AggregationKindNames();

// Builds the rule of `kind`.
std::unique_ptr<AggregationRule> CreateAggregationRule(AggregationKind kind);

// out = sum_k coefficients[k] * inputs[k], in one blocked pass; all spans have out.size()
// floats (unchecked). Returns false when the result holds NaN or Inf. Exposed for benchmarks
// and for callers that compute their own coefficients.
bool WeightedSum(std::span<const std::span<const float>> inputs,
                 std::span<const float> coefficients, std::span<float> out);

// kLayoutMismatch, naming the input, when the weights of `own` or of a peer do not hold `floats`
// floats.
Status CheckMergeLayout(const MergeInput& own, std::span<const MergeInput> peers, size_t floats);

// Writes sum_k coefficients[k] * w_k over `own` (k = 0) and `peers` (k = 1...) into `out` (which
// may alias own.weights), summing in a canonical order (see the top of this header), as
// AggregationRule::Merge does with its rule's coefficients; `coefficients` holds
// peers.size() + 1 values. Errors as Merge's.
Status MergeWeighted(const MergeInput& own, std::span<const MergeInput> peers,
                     std::span<const double> coefficients, std::span<float> out);

}  // namespace meshlearn::training
