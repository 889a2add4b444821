#include "tools/launch/full_test.h"

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <string_view>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "node/host/checkpoint.h"
#include "node/learner/learner_factory.h"
#include "tools/launch/run_layout.h"
#include "training/model.h"
#include "training/trainer.h"

namespace meshlearn::launch {
namespace {

constexpr const char kFullTestHeader[] = "node,cluster,round,images,test_loss,test_acc";
constexpr size_t kFullTestColumns = 6;

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

Status WriteFullTestCsv(const MethodRun& run) {
  std::ostringstream csv;
  csv << kFullTestHeader << '\n';
  for (const NodeRun& n : run.nodes) {
    if (!n.full_test) continue;
    const FullTest& t = *n.full_test;
    csv << CsvField(n.id) << ',' << n.cluster << ',' << t.round << ',' << t.images << ','
        << ExactNumber(t.loss) << ',' << ExactNumber(t.accuracy) << '\n';
  }
  return WriteFileAtomically(PathIn(run.dir, kFullTestFile), csv.str());
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

Status ReadFullTestCsv(MethodRun& run) {
  const std::string path = PathIn(run.dir, kFullTestFile);
  auto text = ReadWholeFile(path);
  if (!text.ok()) return Status::Ok();
  if (std::string_view(*text).substr(0, text->find('\n')) != kFullTestHeader) {
    return Status::Malformed(path + ":1: header is not '" + kFullTestHeader + "'");
  }
  auto records = ParseCsv(*text, path);
  if (!records.ok()) return records.status();
  std::map<std::string, FullTest> by_node;
  for (size_t r = 1; r < records->size(); ++r) {
    const CsvRecord& record = (*records)[r];
    if (record.fields.size() != kFullTestColumns) {
      return Status::Malformed(path + ":" + std::to_string(record.line) + ": expected " +
                               kFullTestHeader);
    }
    FullTest t;
    auto round = CsvNumber<int64_t>(path, record, 2, "round");
    auto images = CsvNumber<int64_t>(path, record, 3, "images", {.min = 0});
    auto loss = CsvNumber<double>(path, record, 4, "test_loss", kExactNumberForm);
    auto accuracy = CsvNumber<double>(path, record, 5, "test_acc", kExactNumberForm);
    for (const Status& s : {round.status(), images.status(), loss.status(), accuracy.status()}) {
      MESHLEARN_RETURN_IF_ERROR(s);
    }
    t.round = *round;
    t.images = *images;
    t.loss = *loss;
    t.accuracy = *accuracy;
    by_node[record.fields[0]] = t;
  }
  for (NodeRun& n : run.nodes) {
    auto found = by_node.find(n.id);
    if (found != by_node.end()) n.full_test = found->second;
  }
  return Status::Ok();
}

}  // namespace meshlearn::launch
