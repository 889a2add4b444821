#include "tools/launch/full_test.h"

#include <cmath>
#include <string>

#include "node/host/checkpoint.h"
#include "node/learner/learner_factory.h"
#include "tools/layout/run_layout.h"
#include "tools/scenario/full_test_csv.h"
#include "training/model.h"
#include "training/trainer.h"

namespace meshlearn::launch {
namespace {

// Tests the best model in the checkpoint of node `n` on `test_set` with `model`.
Result<FullTest> TestNode(const NodeRun& n, const training::Dataset& test_set,
                          training::Model& model) {
  const std::string path = PathIn(n.dir, kCheckpointFile);
  auto checkpoint = node::ReadCheckpoint(path);
  if (!checkpoint.ok()) return checkpoint.status();
  const node::LearnerState& learner = checkpoint->learner;
  const bool has_best = !learner.best_weights.empty();
  MESHLEARN_RETURN_IF_ERROR(
      model.LoadParameters(has_best ? learner.best_weights : learner.weights).WithContext(path));
  auto evaluation = training::Evaluate(model, test_set);
  if (!evaluation.ok()) return evaluation.status().WithContext(path);
  FullTest result;
  result.round = has_best ? learner.best_round : checkpoint->round;
  result.images = static_cast<int64_t>(evaluation->samples);
  result.loss = evaluation->loss;
  result.accuracy = evaluation->accuracy;
  return result;
}

}  // namespace

Status TestOnClusterSets(const node::NodeConfig& config,
                         const std::vector<training::Dataset>& test_sets, MethodRun& run) {
  if (test_sets.empty()) return Status::InvalidArgument("no cluster test sets to test on");
  auto model = training::CreateModel(node::ModelSpecOf(config, test_sets.front()));
  if (!model.ok()) return model.status().WithContext("[model] for the full test sets");
  for (NodeRun& n : run.nodes) {
    if (n.cluster < 0 || static_cast<size_t>(n.cluster) >= test_sets.size()) {
      return Status::InvalidArgument("node " + n.id + " is in cluster " +
                                     std::to_string(n.cluster) + ", which has no test set");
    }
    auto tested = TestNode(n, test_sets[n.cluster], **model);
    if (tested.status().code() == ErrorCode::kNotFound) continue;  // it left no checkpoint
    if (!tested.ok()) return tested.status();
    n.full_test = *tested;
  }
  return WriteFullTestCsv(run);
}

}  // namespace meshlearn::launch
