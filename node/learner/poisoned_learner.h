#pragma once
// The model attacks of robustness experiments ([attack] in configs/README.md; docs/robustness.md;
// DESIGN.md "Reliability and security"), as a decorator around an honest learner.
//
// Specification.
// - The attacker is an ordinary peer: it knows its own model and data, and the models it fetched
//   this round from the peers its own sampler drew (RoundJob::peers). It cannot tell honest peers
//   from fellow attackers, so a fetched model is used as it came. Nothing here is omniscient.
//   Rationale: the same node runs in a process and under the simulator; an omniscient form would
//   need the simulator's view of every node and is not offered.
// - Every call but RunRound goes to the wrapped learner unchanged. RunRound runs the honest round
//   (except for kFreeRider) and replaces the model it publishes, and its local update when it
//   serves one (clustering policies), as below. w is the attacker's honestly trained model of
//   this round, F the models it fetched this round (possibly none), S = {w} ∪ F.
//   - kSignFlip serves −w and −Δ (file 002's "minus grad" attacker).
//   - kNoise serves Gaussian values with w's root mean square (Δ likewise with Δ's), drawn from
//     the node's seed and the round, so a rerun serves the same noise.
//   - kLabelFlip serves w as the honest round trained it, on the flipped labels that
//     PoisonData gave its shard (FlipLabels below).
//   - kScaling serves λ·w and λ·Δ (λ = [attack] scale).
//   - kAlie serves μ − z·σ coordinate-wise over S: μ the mean, σ the sample standard deviation
//     (n − 1; 0 when |S| = 1). "A little is enough" (Baruch et al. 2019); S stands in for the
//     target's neighbourhood of ClippedGossip's decentralized form (He, Karimireddy, Jaggi 2022),
//     the attacker's own w for the target's model.
//   - kIpm serves −ε·mean(S) (inner-product manipulation, Xie et al. 2020; ClippedGossip's form).
//   - kDissensus serves w − ε·mean_{x∈F}(x − w), which is w when F is empty. ClippedGossip's
//     dissensus attack (He, Karimireddy, Jaggi 2022, Section 5) serves the target's model minus
//     ε times the target's gossip pull Σ_honest W_ik (x_k − x_target) / Σ_byzantine W_ij; a peer
//     knows neither the target's model nor its neighbours, so w stands in for the target's model,
//     F for its neighbours, and equal weights with as many attacking as honest neighbours for W.
//     A receiver near w that merges it then moves by (1 − ε) times its honest pull: ε = 1 cancels
//     gossip, ε > 1 reverses it.
//   - kFreeRider never trains and never merges: RunRound scores nothing and reports NaN metrics.
//     It serves the shared initial model ([attack] stale = "initial"), or a copy of the last model
//     it fetched ("fetched": of this round's fetched models, the one of the smallest peer id; the
//     initial model until it has fetched one). It serves no update.
//   - kTorchScript serves what the module of [attack] attack_path returns for w and F
//     (plugins/script_attack.h). A round in which the module fails serves w, the honest model,
//     and the failure is one of the round's errors (RoundOutcome::round_errors).
//   - kMimic serves a copy of one peer's model (Karimireddy, He, Jaggi 2022, "mimic"): the peer
//     [attack] target, or, when that is empty, the first peer it fetches (the smallest id of that
//     round), kept for the rest of the run. It serves the latest copy it holds (its own w until
//     it has one).
//   For the attacks computed from S or a copy, the served update is the served model minus the
//   model the honest round trained from (w − Δ).

#include <cstdint>
#include <memory>

#include "node/config/config.h"
#include "node/logic/learner.h"
#include "plugins/script_attack.h"
#include "training/dataset.h"
#include "training/shard_file.h"

namespace meshlearn::node {

// The data attacks: what `attack` does to the node's own shard before its learner is built on it
// (CreateLearner, learner_factory.h). kLabelFlip flips the labels of the whole shard
// (FlipLabels), so that early stopping follows the flipped task too; every other kind leaves the
// shard as it is.
void PoisonData(const AttackSection& attack, training::ClientShard& shard);

// Wraps `honest` so that it serves models poisoned by `attack` (attack.PoisonsModels()); `seed` is
// the node's own seed (NodeTrainingSeed); `script` is the loaded module of kTorchScript
// (node/learner/pluggable_parts.h), null for the other kinds. The honest learner's current
// weights are taken as the initial model (a free rider's "initial").
std::unique_ptr<Learner> MakePoisonedLearner(std::unique_ptr<Learner> honest,
                                             const AttackSection& attack, uint64_t seed,
                                             std::unique_ptr<plugins::ScriptAttack> script = {});

// The label-flip attack's data: a classification label y becomes C − 1 − y (C classes; the
// ClippedGossip code's 9 − y for 10), a regression target y becomes −y.
void FlipLabels(training::Dataset& data);

}  // namespace meshlearn::node
