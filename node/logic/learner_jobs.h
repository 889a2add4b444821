#pragma once
// The learner's jobs as the state machine asks for them (StartCompute, StartEmbed, ... in
// node/logic/actions.h), how one is run, and how its result goes back to the state machine. Shared
// by the node's worker thread (node/learner/learner_worker.h) and any other runner of the same
// logic.

#include <variant>

#include "node/logic/actions.h"
#include "node/logic/learner.h"
#include "node/logic/state_machine.h"

namespace meshlearn::node {

// A job for the learner.
using LearnerJob = std::variant<RoundJob, EmbedJob, EmdJob, OwnProjectionJob, WitnessEmdJob>;

// A finished round job, with the learner's state after it (for the checkpoint).
struct RoundDone {
  Result<RoundOutcome> outcome;
  LearnerState state;
};
// A finished job of the EMD exchange and its result.
template <class JobType, class ResultType>
struct JobDone {
  JobType job;
  Result<ResultType> result;
};
using EmbedDone = JobDone<EmbedJob, ProjectedEmbeddings>;
using EmdDone = JobDone<EmdJob, EmdMeasure>;
using OwnProjectionDone = JobDone<OwnProjectionJob, OwnProjection>;
using WitnessEmdDone = JobDone<WitnessEmdJob, double>;

// The result of a LearnerJob.
using LearnerResult =
    std::variant<RoundDone, EmbedDone, EmdDone, OwnProjectionDone, WitnessEmdDone>;

// The job a Start* action asks for; nullopt for an action that is not a learner job.
std::optional<LearnerJob> JobOf(Action& action);

// Runs `job` on `learner` (on the caller's thread) and returns its result.
LearnerResult RunLearnerJob(Learner& learner, LearnerJob job);

// Hands `result` to `machine` at `now`; the actions it gives back.
Actions DeliverResult(NodeStateMachine& machine, const LearnerResult& result, TimePoint now);

}  // namespace meshlearn::node
