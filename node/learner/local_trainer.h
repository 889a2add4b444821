#pragma once
// The local trainer: the second half of the learner's round (Learner::RunRound). It trains the
// node's model on its own data, evaluates it, and keeps early stopping and the privacy budget.
//
// Specification.
// - A round trains config.epochs passes over the training data with the round's seed (the node's
//   own seed + the round), then evaluates on the validation and test data (NaN metrics for an
//   empty split).
// - After training, the validation loss feeds early stopping. Once it stops, the model is set back
//   to its best-validation weights and that is what the node publishes.
// - A stopped node, or one whose privacy budget would run out this round, neither trains nor
//   merges: it serves its best model (its current one before any finite validation loss) and
//   reports the metrics of its last trained round.
//   Rationale: file 004 / DESIGN.md: a stopped node serves its best model; the privacy budget
//   stops a node the same way (docs/privacy.md).
// - With `serve_last` ([training] stopped_serves = "last") a stopped node keeps and serves its last
//   trained weights instead, as file 004's code does for its Oracle (utils/training_utils.py:326
//   merges a stopped peer's local_model, which its early stopping never resets). Its best weights
//   are still kept (Snapshot().best_weights) for the test of its best model.

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "node/learner/privacy_budget.h"
#include "node/logic/learner.h"
#include "training/dataset.h"
#include "training/early_stopping.h"
#include "training/model.h"
#include "training/partition.h"
#include "training/trainer.h"

namespace meshlearn::node {

class LocalTrainer {
 public:
  // Trains `model` on `shard` (both outlive the trainer) with `config` (its privacy is taken
  // from `privacy` when set), seeding round t with `train_seed` + t, and evaluates as
  // `averaging` says ([training] loss_mean); `patience` is early stopping's; `serve_last`: a
  // stopped node serves its last trained weights, not its best.
  LocalTrainer(training::Model& model, const training::ClientShard& shard,
               training::TrainConfig config, training::LossAveraging averaging, int patience,
               bool serve_last, uint64_t train_seed, std::optional<PrivacyBudget> privacy);

  // True when the node must neither train nor merge this round: early stopping has stopped it, or
  // the round would exhaust its privacy budget.
  bool MustRest() const;
  // Fills `out` for a round in which the node rests (MustRest()): the last metrics, stopped, and
  // the weights it serves: its best ones, or `own` (its current weights) before any.
  void Rest(std::vector<float> own, RoundOutcome& out) const;

  // Trains the round `round` and evaluates the result: the train and eval seconds into `out`, the
  // losses and accuracies kept for FillMetrics().
  Status TrainAndEvaluate(int64_t round, RoundOutcome& out);
  // Ends round `round` whose training produced `trained`: observes early stopping and fills the
  // metrics, stopped and the published weights into `out`.
  Status Finish(int64_t round, std::vector<float> trained, RoundOutcome& out);

  // The node's checkpointable state: the model's weights, the last metrics, early stopping and
  // the privacy steps.
  LearnerState Snapshot() const;
  // Restores a state made by Snapshot(). Refuses weights that do not fit the model.
  Status Restore(const LearnerState& state);

 private:
  void FillMetrics(RoundOutcome& out) const;

  training::Model& model_;
  const training::ClientShard& shard_;
  training::TrainConfig config_;
  training::LossAveraging averaging_;  // how validation and test losses are averaged
  uint64_t train_seed_;
  bool serve_last_;  // a stopped node serves its last trained weights ([training] stopped_serves)
  training::EarlyStopping stopping_;
  std::optional<PrivacyBudget> privacy_;  // set when [privacy] is enabled
  LearnerState last_;                     // the last metrics (no weights)
};

}  // namespace meshlearn::node
