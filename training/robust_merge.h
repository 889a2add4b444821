#pragma once
// Robust merges ([learning] robust; DESIGN.md "Aggregation"; docs/robustness.md): the node's
// defence against peers that serve poisoned models, as merge rules (training/merge_rule.h) on
// top of the aggregation's weights.
//
// Specification. x_i is the node's own model, x_j the peers' (those the caller merges: after
// merge_min_score), c_k the rule's coefficients (MergeWeights: FedAvg or FedSim, with the
// staleness weights) over the own model and the peers given.
// - The own model is always part of the merge: no rule can leave it out or clip it.
//   Rationale: the node's own model is the one input it can trust.
// - kNone: the weighted average, Σ c_k x_k.
// - kClip: self-centred clipping (ClippedGossip, He, Karimireddy, Jaggi 2022):
//   z_j = x_i + min(1, τ/‖x_j − x_i‖)·(x_j − x_i), then the rule's weighted average of x_i and
//   the z_j, with the rule's coefficients of x_i and x_j unchanged. τ is `clip_tau`, or, when it
//   is unset (adaptive), the distance of the (k+1)-th farthest peer with
//   k = min(⌈clip_share · n⌉, n − 1) for n peers, so that the k farthest are clipped. The
//   default share 0.5 clips the farther half (2 of 4 peers, 3 of 5); share 0.2 with 2 to 5 peers
//   is ClippedGossip's code's rule (τ = the second largest distance: only the farthest is
//   clipped); with one peer nothing is clipped.
//   Rationale: a clipped peer moves x_i by at most c_j·τ, whatever it serves. The default is 0.5
//   because a node that draws 4 peers where a fifth of the mesh attacks draws two attackers
//   often: with share 0.2 the second one is merged whole (docs/robustness.md, result set (c)).
// - kTrimmedMean: the coordinate-wise mean of the n + 1 models (own included) without the
//   `trim` smallest and the `trim` largest values of each coordinate, trim lowered to
//   ⌊n/2⌋ when fewer models came (at least one value stays). Unweighted: every model has one
//   vote, whatever c_k.
//   Rationale: n_j is what the peer says, and p_ij follows scores the attacker shapes, so a
//   weighted trim would let an attacker buy a larger share of the coordinates it survives in.
// - kMedian: the coordinate-wise median of the n + 1 models, unweighted (the mean of the two
//   middle values when n + 1 is even): the trimmed mean with the largest trim.
// - kKrum, kMultiKrum (Blanchard et al. 2017): each peer's score is the sum of its squared
//   distances to its k nearest other models (own included), k = n + 1 − f − 2 with f =
//   `krum_f`, at least 1 and at most n. Krum keeps the peer of the smallest score; multi-Krum
//   the `krum_m` smallest (0: n − f, at least 1). The kept peers are merged with x_i by the
//   weights over them (the coefficients recomputed for the kept peers, as if only they had been
//   passed). Ties go to the model whose bytes compare smaller.
// - kDistanceGate (after BALANCE, Fang et al. 2024, with a fixed threshold): a peer is kept when
//   ‖x_j − x_i‖ ≤ γ·‖x_i‖ (γ = `gate_gamma`), then merged as for Krum.
// - With no peer kept (the gate with every peer too far), x_i alone.
// - The result does not depend on the order of `peers` (the rules sort their inputs by content
//   where order could change the rounding), and a merge reads every model a bounded number of
//   times: the distances of kClip, kKrum and kDistanceGate are taken in one pass over the models
//   in cache-sized chunks.

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"
#include "training/merge_rule.h"

namespace meshlearn::training {

// The robust rules ([learning] robust).
enum class RobustKind {
  kNone,          // "none"
  kClip,          // "clip"
  kTrimmedMean,   // "trimmed_mean"
  kMedian,        // "median"
  kKrum,          // "krum"
  kMultiKrum,     // "multi_krum"
  kDistanceGate,  // "distance_gate"
  kTorchScript,   // "torchscript": a user's rule from a file (plugins/script_merge.h)
};

// The config names of every RobustKind, in documentation order.
NameTable<RobustKind> RobustKindNames();

// The names of the built-in rules: every kind but kTorchScript, in documentation order.
NameTable<RobustKind> BuiltInRobustKindNames();

// A robust rule and its parameters (the [learning] keys of the same names).
struct RobustOptions {
  RobustKind kind = RobustKind::kNone;
  std::optional<double> clip_tau;  // clip: fixed τ ≥ 0; empty: adaptive (clip_share)
  double clip_share = 0.5;         // clip, adaptive: the share of peers clipped
  int trim = 1;                    // trimmed_mean: values dropped from each side
  int krum_f = 1;                  // krum, multi_krum: the attackers assumed among the peers
  int krum_m = 0;                  // multi_krum: peers kept; 0: n − f
  double gate_gamma = 0.5;         // distance_gate: γ
  bool operator==(const RobustOptions&) const = default;
};

// The built-in merge rule of `robust` over `weights` (see the specification above); null for
// kTorchScript, whose rule comes from a file (plugins::LoadScriptMergeRule, made by the node's
// learner from [learning] merge_path).
std::unique_ptr<MergeRule> CreateMergeRule(const MergeWeights& weights,
                                           const RobustOptions& robust);

// out[c] = the mean of the values of `models` at coordinate c without the `trim` smallest and
// the `trim` largest (requires 2·trim < models.size() and every model of out.size() floats),
// summed in the order of `models` after the trim. Exposed for the benchmarks.
void TrimmedMean(std::span<const std::span<const float>> models, size_t trim, std::span<float> out);

// The n × n matrix (row-major) of squared distances between `models` (all of one size), from one
// pass over them in chunks. Only the pairs that hold one of the first `rows` models are
// measured (the others stay 0): rows = 1 gives the distances from models[0], rows = n all.
std::vector<double> SquaredDistances(std::span<const std::span<const float>> models, size_t rows);

}  // namespace meshlearn::training
