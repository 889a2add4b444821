#pragma once
// The learner's pluggable parts as a node config chooses them (DESIGN.md "Layout and dependency
// rules"; docs/plugins.md): the similarity metric, the merge rule and the model attack's served
// model, each built in or a user's TorchScript module loaded from the file the config names
// (plugins/). The one place where a config's "torchscript" choice meets a file.
//
// Specification.
// - A file is loaded only from the node's own config, never from a peer: nothing a peer sends
//   names or carries a plug-in (docs/plugins.md, "Threat model").
// - A plug-in is loaded and probed on models of `floats` floats, the node's model size, when the
//   learner is made; a refusal is the node's start-up error, naming the key and the file.

#include <memory>

#include "base/status.h"
#include "node/config/config.h"
#include "plugins/script_attack.h"
#include "similarity/metric.h"
#include "training/merge_rule.h"

namespace meshlearn::node {

// The metric of [learning] metric (metric_path for "torchscript").
Result<std::unique_ptr<similarity::SimilarityMetric>> MakeMetric(const LearningSection& learning,
                                                                 size_t floats);

// The merge rule of [learning] robust over its aggregation and staleness weights (merge_path for
// "torchscript").
Result<std::unique_ptr<training::MergeRule>> MakeMergeRule(const LearningSection& learning,
                                                           size_t floats);

// The module of [attack] attack_path for kind "torchscript"; null for every other kind.
Result<std::unique_ptr<plugins::ScriptAttack>> MakeScriptAttack(const AttackSection& attack,
                                                                size_t floats);

}  // namespace meshlearn::node
