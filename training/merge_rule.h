#pragma once
// The merge rule: how a node's own model and the models of its peers become its next model
// (DESIGN.md "Aggregation"). Every merge a node makes has this one shape: the weighted average of
// FedAvg or FedSim ([learning] robust = "none"), each robust rule of training/robust_merge.h, and
// a user's TorchScript rule (plugins/script_merge.h).
//
// Specification.
// - The inputs are the node's own model x_i and the peers' x_j that the caller merges (those left
//   after merge_min_score), each a MergeInput: its flat weights, its coefficient inputs (n_j for
//   FedAvg, p_ij for FedSim) and its staleness d_j (training/staleness.h).
// - A rule's coefficients are MergeWeights::Coefficients: the aggregation's c_own, c_j
//   (AggregationCoefficients) with the staleness weights on them (ApplyStalenessWeights). A rule
//   uses them or ignores them (the coordinate-wise rules are unweighted), but weighs a model no
//   other way.
//   Rationale: one place says what a model weighs, so that every rule, a plug-in included, sees
//   the same FedAvg, FedSim and staleness weights.
// - The own model always takes part. With no peers every rule gives the weighted average of the
//   own model alone (the own model, or the coefficients' error).
// - Merge checks every weight vector's length against `out` first (kLayoutMismatch, naming the
//   input). A merge whose result would hold NaN or Inf fails with kNonFinite, and `out` is then
//   unspecified: nothing non-finite is ever taken for a model.
// - `out` may alias own.weights.
// - What a rule did with each peer is in its MergeReport: kept (false: the rule left the peer
//   out) and clipped.
// - A rule is const once made: one instance may merge from several threads at once.

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "training/aggregation.h"
#include "training/staleness.h"

namespace meshlearn::training {

// What a model weighs in a merge: the aggregation rule's coefficients with the staleness weights
// on them ([learning] aggregation and staleness).
struct MergeWeights {
  AggregationKind aggregation = AggregationKind::kFedAvg;
  StalenessOptions staleness;  // kNone: every model at the aggregation's weight

  // c_own (first) and c_j of every peer (in the order given), summing to 1; the errors of
  // AggregationCoefficients.
  Result<std::vector<double>> Coefficients(const MergeInput& own,
                                           std::span<const MergeInput> peers) const;
  bool operator==(const MergeWeights&) const = default;
};

// What a merge did with each peer (in the order given).
struct MergeReport {
  std::vector<bool> kept;     // the peer took part (false: the rule left it out)
  std::vector<bool> clipped;  // the rule moved the peer's model before weighing it (clip)
};

// A merge rule (see the specification above).
class MergeRule {
 public:
  explicit MergeRule(const MergeWeights& weights) : weights_(weights) {}
  virtual ~MergeRule() = default;

  // The rule's [learning] robust name ("none", "clip", ..., "torchscript").
  virtual std::string_view Name() const = 0;
  // The weights the rule's coefficients come from.
  const MergeWeights& Weights() const { return weights_; }

  // Merges `own` and `peers` into `out` and fills `report` when it is not null (see the
  // specification). Errors: kLayoutMismatch, kNonFinite, the coefficients' kInvalidArgument, and
  // those a rule states.
  Status Merge(const MergeInput& own, std::span<const MergeInput> peers, std::span<float> out,
               MergeReport* report = nullptr) const;

 protected:
  // The rule itself, over at least one peer: every weight vector has out.size() floats, and
  // `report` says every peer is kept and none clipped until the rule says otherwise.
  virtual Status MergePeers(const MergeInput& own, std::span<const MergeInput> peers,
                            std::span<float> out, MergeReport& report) const = 0;
  // Σ c_k x_k over `own` and `peers` with the coefficients of Weights() (MergeWeighted).
  Status WeightedAverage(const MergeInput& own, std::span<const MergeInput> peers,
                         std::span<float> out) const;

 private:
  MergeWeights weights_;
};

}  // namespace meshlearn::training
