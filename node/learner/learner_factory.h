#pragma once
// How a node's learner is made from its config: the training learner (node/learner/
// training_learner.cc) behind the torch-free Learner interface (node/logic/learner.h), wrapped in
// the poisoning decorator (node/learner/poisoned_learner.h) for an [attack].

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "node/config/config.h"
#include "node/logic/learner.h"
#include "training/dataset.h"
#include "training/model.h"

namespace meshlearn::node {

// Builds the learner of `config`: reads its shard (which a data attack then poisons,
// PoisonData), builds the model (same seed on every node), the metric and the merge rule, and
// sets the compute threads; with an [attack] kind that poisons models, the honest learner is
// wrapped in the poisoning decorator (node/learner/poisoned_learner.h). Errors name the file or
// key.
Result<std::unique_ptr<Learner>> CreateLearner(const NodeConfig& config);

// The seed of the node's own randomness (its training batches, its sample choices): the mesh's
// seed salted with the node id, so that nodes differ but every run of a node is the same.
uint64_t NodeTrainingSeed(const NodeConfig& config);

// The model every node of `config` builds, for samples shaped like `samples`' (its [model] keys,
// the mesh's seed, and outputs: `samples`' classes, or 1 for regression). Rationale: a node and
// a tool that loads its weights (the launcher's full test) must build the same model.
training::ModelSpec ModelSpecOf(const NodeConfig& config, const training::Dataset& samples);

}  // namespace meshlearn::node
