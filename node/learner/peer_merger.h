#pragma once
// The peer merger: the first half of the learner's round (Learner::RunRound). It scores each peer
// model the round received with the configured similarity metric and merges the scored ones into
// the node's model with the aggregation rule.
//
// Specification.
// - Every answered peer is scored against the node's weights before the merge. Metrics scored by
//   an exchange (emd, centroid) take the score the exchange measured (PeerModel::
//   exchanged_score) and never compute it; a peer it has not measured yet fails scoring.
// - A peer whose scoring failed is left out of the merge, and so is one scoring below
//   merge_min_score (counted in RoundOutcome::excluded_by_min_score).
// - The peers left are merged with the node's model by the merge rule (training/merge_rule.h:
//   [learning] robust over the aggregation's weights); a peer that the rule leaves out (Krum,
//   the distance gate) is not marked merged.
// - Each peer goes to the rule with its staleness ([learning] staleness, training/staleness.h):
//   a peer whose model is of round r_j, merged in round t, is max(0, t − 1 − r_j) rounds behind
//   (0 when its round is unknown).
// - A merge that fails (a plug-in's fault, a result that would hold NaN or Inf) leaves the model
//   as it was: no peer is marked merged, the round trains on, and the failure is one of the
//   round's errors (RoundOutcome::round_errors, logged by the node).
//   Rationale: a merge is one part of a round; a user's rule that fails on one round's inputs
//   should cost that round's merge, not the node's learning.
// - With no peer to merge, the model is left untouched.

#include <memory>
#include <optional>
#include <vector>

#include "base/status.h"
#include "node/logic/learner.h"
#include "similarity/metric.h"
#include "training/dataset.h"
#include "training/merge_rule.h"
#include "training/model.h"

namespace meshlearn::node {

class PeerMerger {
 public:
  // Scores with `metric` and merges with `rule` into `model` (which outlives the merger and holds
  // the shared initial weights now, for metrics that need them); `train` is the node's training
  // data (its size is n_i for FedAvg; a metric that needs the own-data loss scores on it).
  // `merge_min_score`: [learning] merge_min_score, off when empty. `averaging`: how that
  // own-data loss is averaged ([training] loss_mean).
  static Result<std::unique_ptr<PeerMerger>> Create(
      training::Model& model, const training::Dataset& train,
      std::unique_ptr<similarity::SimilarityMetric> metric,
      std::unique_ptr<training::MergeRule> rule, std::optional<double> merge_min_score,
      training::LossAveraging averaging = {});

  // Scores every peer of `job` against `own` (the node's current weights) into out.scores, in
  // the order of job.peers.
  void Score(const RoundJob& job, const std::vector<float>& own, RoundOutcome& out) const;

  // Merges the peers that Score() scored (and that pass merge_min_score) with `own` into `own`
  // and loads the result into the model; marks them merged in out.scores. A failed merge is one
  // of out.round_errors (see the specification); an error is returned only when the model cannot
  // load the merged weights.
  Status Merge(const RoundJob& job, RoundOutcome& out, std::vector<float>& own);

 private:
  PeerMerger(training::Model& model, uint64_t train_size, std::optional<double> merge_min_score)
      : model_(model), train_size_(train_size), merge_min_score_(merge_min_score) {}

  Result<double> ExchangedScore(const PeerModel& peer) const;

  training::Model& model_;
  uint64_t train_size_;
  std::optional<double> merge_min_score_;
  std::unique_ptr<similarity::SimilarityMetric> metric_;
  std::unique_ptr<training::MergeRule> rule_;
  std::vector<float> initial_;  // the shared initial weights
  similarity::LossOfWeights own_data_loss_;
};

}  // namespace meshlearn::node
