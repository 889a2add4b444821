#include "node/learner/local_trainer.h"

#include <chrono>
#include <limits>
#include <string>
#include <utility>

namespace meshlearn::node {
namespace {

using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

Status EvaluateInto(training::Model& model, const training::Dataset& data,
                    training::LossAveraging averaging, double* loss, double* accuracy) {
  if (data.size() == 0) {
    *loss = *accuracy = std::numeric_limits<double>::quiet_NaN();
    return Status::Ok();
  }
  auto eval = training::Evaluate(model, data, averaging);
  if (!eval.ok()) return eval.status();
  *loss = eval->loss;
  *accuracy = eval->accuracy;
  return Status::Ok();
}

}  // namespace

LocalTrainer::LocalTrainer(training::Model& model, const training::ClientShard& shard,
                           training::TrainConfig config, training::LossAveraging averaging,
                           int patience, bool serve_last, uint64_t train_seed,
                           std::optional<PrivacyBudget> privacy)
    : model_(model),
      shard_(shard),
      config_(std::move(config)),
      averaging_(averaging),
      train_seed_(train_seed),
      serve_last_(serve_last),
      stopping_(patience),
      privacy_(std::move(privacy)) {
  if (privacy_) config_.privacy = privacy_->dp();
}

bool LocalTrainer::MustRest() const {
  return stopping_.stopped() || (privacy_ && privacy_->WouldRunOut());
}

void LocalTrainer::Rest(std::vector<float> own, RoundOutcome& out) const {
  FillMetrics(out);
  out.stopped = true;
  out.published_weights = FloatArray::Own(
      stopping_.has_best() && !serve_last_ ? stopping_.best_weights() : std::move(own));
}

Status LocalTrainer::TrainAndEvaluate(int64_t round, RoundOutcome& out) {
  auto train_start = SteadyClock::now();
  auto stats = training::TrainLocal(model_, shard_.train, config_,
                                    train_seed_ + static_cast<uint64_t>(round));
  if (!stats.ok()) {
    return stats.status().WithContext("local training of round " + std::to_string(round));
  }
  out.train_seconds = SecondsSince(train_start);
  last_.train_loss = stats->mean_loss;
  if (privacy_) MESHLEARN_RETURN_IF_ERROR(privacy_->Spend(stats->steps));

  auto eval_start = SteadyClock::now();
  MESHLEARN_RETURN_IF_ERROR(
      EvaluateInto(model_, shard_.validation, averaging_, &last_.val_loss, &last_.val_acc));
  MESHLEARN_RETURN_IF_ERROR(
      EvaluateInto(model_, shard_.test, averaging_, &last_.test_loss, &last_.test_acc));
  out.eval_seconds = SecondsSince(eval_start);
  return Status::Ok();
}

Status LocalTrainer::Finish(int64_t round, std::vector<float> trained, RoundOutcome& out) {
  stopping_.Observe(round, last_.val_loss, trained);
  FillMetrics(out);
  out.stopped = stopping_.stopped();
  if (out.stopped && !serve_last_) {
    MESHLEARN_RETURN_IF_ERROR(model_.LoadParameters(stopping_.best_weights()));
    out.published_weights = FloatArray::Own(stopping_.best_weights());
  } else {
    out.published_weights = FloatArray::Own(std::move(trained));
  }
  return Status::Ok();
}

LearnerState LocalTrainer::Snapshot() const {
  LearnerState s = last_;
  s.weights = model_.Parameters();
  s.best_loss = stopping_.best_loss();
  s.best_round = stopping_.best_round();
  s.best_weights = stopping_.best_weights();
  s.rounds_without_improvement = stopping_.rounds_without_improvement();
  s.privacy_steps = privacy_ ? privacy_->steps() : 0;
  return s;
}

Status LocalTrainer::Restore(const LearnerState& state) {
  MESHLEARN_RETURN_IF_ERROR(model_.LoadParameters(state.weights).WithContext("checkpoint"));
  if (!state.best_weights.empty() && state.best_weights.size() != state.weights.size()) {
    return Status::LayoutMismatch("checkpoint: best weights do not fit the model");
  }
  stopping_.Restore(state.best_loss, state.best_round, state.best_weights,
                    state.rounds_without_improvement);
  if (privacy_) MESHLEARN_RETURN_IF_ERROR(privacy_->Restore(state.privacy_steps));
  last_ = state;
  last_.weights.clear();
  last_.best_weights.clear();
  return Status::Ok();
}

void LocalTrainer::FillMetrics(RoundOutcome& out) const {
  if (privacy_) out.epsilon = privacy_->Epsilon();
  out.train_loss = last_.train_loss;
  out.val_loss = last_.val_loss;
  out.val_acc = last_.val_acc;
  out.test_loss = last_.test_loss;
  out.test_acc = last_.test_acc;
}

}  // namespace meshlearn::node
