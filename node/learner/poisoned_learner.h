#pragma once
// The attack of robustness experiments ([attack] in configs/README.md; DESIGN.md "Reliability
// and security": a poisoned peer must end with near-zero sampling probability), as a decorator
// around an honest learner.
//
// Specification.
// - The node learns honestly: every call goes to the wrapped learner unchanged, except that the
//   model a round publishes is poisoned, and so is its local update when it serves one.
// - kSignFlip serves −w (file 002's "minus grad" attacker for the update, −δ).
// - kNoise serves Gaussian values with w's root mean square, drawn from the node's seed and the
//   round, so a rerun serves the same noise.

#include <cstdint>
#include <memory>

#include "node/config/config.h"
#include "node/logic/learner.h"

namespace meshlearn::node {

// Wraps `honest` so that it serves models poisoned by `attack` (not kNone); `seed` is the node's
// own seed (NodeTrainingSeed).
std::unique_ptr<Learner> MakePoisonedLearner(std::unique_ptr<Learner> honest, AttackKind attack,
                                             uint64_t seed);

}  // namespace meshlearn::node
