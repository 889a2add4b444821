#include "node/learner/pluggable_parts.h"

#include "plugins/script_merge.h"
#include "plugins/script_metric.h"
#include "training/robust_merge.h"

namespace meshlearn::node {

Result<std::unique_ptr<similarity::SimilarityMetric>> MakeMetric(const LearningSection& learning,
                                                                 size_t floats) {
  if (learning.metric != similarity::MetricKind::kTorchScript) {
    return similarity::MakeSimilarityMetric(learning.metric);
  }
  auto metric = plugins::LoadScriptMetric(learning.metric_path, floats);
  if (!metric.ok()) return metric.status().WithContext("[learning] metric_path");
  return metric;
}

Result<std::unique_ptr<training::MergeRule>> MakeMergeRule(const LearningSection& learning,
                                                           size_t floats) {
  const training::MergeWeights weights{learning.aggregation, learning.staleness};
  if (learning.robust.kind != training::RobustKind::kTorchScript) {
    return training::CreateMergeRule(weights, learning.robust);
  }
  auto rule = plugins::LoadScriptMergeRule(learning.merge_path, weights, floats);
  if (!rule.ok()) return rule.status().WithContext("[learning] merge_path");
  return rule;
}

Result<std::unique_ptr<plugins::ScriptAttack>> MakeScriptAttack(const AttackSection& attack,
                                                                size_t floats) {
  if (attack.kind != AttackKind::kTorchScript) return std::unique_ptr<plugins::ScriptAttack>();
  auto script = plugins::LoadScriptAttack(attack.attack_path, floats);
  if (!script.ok()) return script.status().WithContext("[attack] attack_path");
  return script;
}

}  // namespace meshlearn::node
