#include "node/logic/learner_jobs.h"

namespace meshlearn::node {

std::optional<LearnerJob> JobOf(Action& action) {
  if (auto* a = std::get_if<StartCompute>(&action)) return LearnerJob(std::move(a->job));
  if (auto* a = std::get_if<StartEmbed>(&action)) return LearnerJob(std::move(a->job));
  if (auto* a = std::get_if<StartEmd>(&action)) return LearnerJob(std::move(a->job));
  if (auto* a = std::get_if<StartOwnProjection>(&action)) return LearnerJob(std::move(a->job));
  if (auto* a = std::get_if<StartWitnessEmd>(&action)) return LearnerJob(std::move(a->job));
  return std::nullopt;
}

LearnerResult RunLearnerJob(Learner& learner, LearnerJob job) {
  if (auto* round = std::get_if<RoundJob>(&job)) {
    Result<RoundOutcome> outcome = learner.RunRound(*round);
    return RoundDone{std::move(outcome), learner.Snapshot()};
  }
  if (auto* embed = std::get_if<EmbedJob>(&job)) {
    auto result =
        learner.EmbedForPeer(embed->weights.view(), embed->projection_seed, embed->max_samples);
    return EmbedDone{std::move(*embed), std::move(result)};
  }
  if (auto* emd = std::get_if<EmdJob>(&job)) {
    auto result = learner.MeasureEmd(emd->peer_validation, emd->projection_seed, emd->max_samples);
    return EmdDone{std::move(*emd), std::move(result)};
  }
  if (auto* own = std::get_if<OwnProjectionJob>(&job)) {
    auto result = learner.ProjectOwnTrain(own->projection_seed, own->max_samples);
    return OwnProjectionDone{std::move(*own), std::move(result)};
  }
  auto& witness = std::get<WitnessEmdJob>(job);
  auto result = learner.WitnessDistance(witness.train, witness.validation);
  return WitnessEmdDone{std::move(witness), std::move(result)};
}

Actions DeliverResult(NodeStateMachine& machine, const LearnerResult& result, TimePoint now) {
  if (const auto* round = std::get_if<RoundDone>(&result)) {
    return machine.OnComputeDone(round->outcome, now);
  }
  if (const auto* embed = std::get_if<EmbedDone>(&result)) {
    return machine.OnEmbedDone(embed->job, embed->result, now);
  }
  if (const auto* emd = std::get_if<EmdDone>(&result)) {
    return machine.OnEmdDone(emd->job, emd->result, now);
  }
  if (const auto* own = std::get_if<OwnProjectionDone>(&result)) {
    return machine.OnOwnProjectionDone(own->job, own->result, now);
  }
  const auto& witness = std::get<WitnessEmdDone>(result);
  return machine.OnWitnessEmdDone(witness.job, witness.result, now);
}

}  // namespace meshlearn::node
