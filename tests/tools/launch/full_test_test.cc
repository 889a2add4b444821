// [data] test = "cluster" (tools/launch/full_test.h) on a small real run: 4 simulated nodes of
// real Fashion-MNIST in two clusters rotated 0 and 180 degrees. Every node's figure is its best
// model (the checkpoint's best-validation weights) tested on all 10,000 test images of its
// cluster, rotated as its training images; the report shows them beside the per-node figures.
#include "tools/launch/full_test.h"
#include "tools/scenario/full_test_csv.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "node/host/checkpoint.h"
#include "tools/cli/cli_exit.h"
#include "tools/launch/experiment.h"
#include "tools/launch/run.h"
#include "tools/layout/run_layout.h"
#include "tools/report/report.h"
#include "tools/scenario/run_reader.h"
#include "tools/scenario/scenario_file.h"
#include "training/model.h"
#include "training/partition.h"
#include "training/readers.h"
#include "training/trainer.h"

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;

constexpr const char kScenario[] = R"(name = "full-test"
seed = 2
[data]
dataset = "fashion-mnist"
shift = "covariate"
clients = 4
cluster_sizes = [2, 2]
rotations = [0, 180]
pixel_range = "symmetric"
interpolation = "nearest"
train_per_client = 40
validation_per_client = 20
test_per_client = 10
test = "cluster"
[node.model]
architecture = "mlp"
hidden = 16
[node.training]
rounds = 2
[node.learning]
peers_per_round = 1
[[methods]]
name = "random"
learning = { sampler = "random" }
)";

// The cells of summary.csv's row of `method`, by column name.
std::map<std::string, std::string> SummaryRow(const std::string& out, const std::string& method) {
  auto text = ReadWholeFile(PathIn(out, kSummaryFile));
  EXPECT_TRUE(text.ok());
  auto records = ParseCsv(text.ok() ? *text : "", "summary.csv");
  std::map<std::string, std::string> row;
  if (!records.ok() || records->empty()) return row;
  for (size_t r = 1; r < records->size(); ++r) {
    if ((*records)[r].fields.front() != method) continue;
    for (size_t c = 0; c < records->front().fields.size(); ++c) {
      row[records->front().fields[c]] = (*records)[r].fields.at(c);
    }
  }
  return row;
}

class ClusterTestRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One folder per process: ctest runs each test of the suite in a process of its own, and two
    // of them may run at once.
    dir_ = ::testing::TempDir() + "/full_test_run." + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ + "/scenario.toml") << kScenario;
    RunRequest request;
    request.scenario_path = dir_ + "/scenario.toml";
    request.options.out_dir = dir_ + "/out";
    request.options.runner = kSimulatedRunner;
    request.options.threads = 1;
    request.command = {"meshlearn-launch", request.scenario_path, "--simulate"};
    std::atomic<bool> interrupt{false};
    exit_code_ = Run::Execute(request, interrupt);
  }

  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static inline std::string dir_;
  static inline int exit_code_ = -1;
};

// The run folder's partition: node i in cluster i / 2.
Partition FourNodes() {
  Partition p;
  p.ids = {"0", "1", "2", "3"};
  p.clusters = {0, 0, 1, 1};
  p.num_clusters = 2;
  return p;
}

TEST_F(ClusterTestRun, EachNodesFigureIsItsBestModelOnItsClustersWholeTestSet) {
  ASSERT_EQ(exit_code_, tools::kExitOk);
  const std::string out = dir_ + "/out";
  MethodRun run = ReadMethodRun(MethodDir(out, "random"), "random", FourNodes());
  auto scenario = LoadScenario(dir_ + "/scenario.toml", {});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  auto sets = ClusterTestSets(*scenario);
  ASSERT_TRUE(sets.ok()) << sets.status().ToString();
  ASSERT_EQ(sets->size(), 2u);

  training::ModelSpec spec;
  spec.architecture = training::Architecture::kMlp;
  spec.hidden = 16;
  spec.input_shape = {1, 28, 28};
  spec.num_outputs = 10;
  auto model = training::CreateModel(spec);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  double percent_sum = 0;
  for (const NodeRun& n : run.nodes) {
    ASSERT_TRUE(n.full_test.has_value()) << n.id;
    const training::Dataset& set = (*sets)[n.cluster];
    EXPECT_EQ(n.full_test->images, 10000) << n.id;
    EXPECT_EQ(set.size(), 10000u);
    // The model tested is the one the table reports: its first round of lowest validation loss.
    const node::RoundRow* best = &n.rounds.front();
    for (const node::RoundRow& r : n.rounds) {
      if (r.val_loss < best->val_loss) best = &r;
    }
    EXPECT_EQ(n.full_test->round, best->round) << n.id;
    // Its figure is that model, from its checkpoint, evaluated on its cluster's set here; the two
    // nodes of a cluster are both tested on that one set.
    auto checkpoint = node::ReadCheckpoint(PathIn(n.dir, kCheckpointFile));
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
    ASSERT_TRUE((*model)->LoadParameters(checkpoint->learner.best_weights).ok());
    auto direct = training::Evaluate(**model, set);
    ASSERT_TRUE(direct.ok()) << direct.status().ToString();
    EXPECT_EQ(n.full_test->accuracy, direct->accuracy) << n.id;
    EXPECT_EQ(n.full_test->loss, direct->loss) << n.id;
    percent_sum += 100 * n.full_test->accuracy;
  }
  // summary.csv adds the mean per cluster and overall beside the per-node columns.
  std::map<std::string, std::string> row = SummaryRow(out, "random");
  ASSERT_TRUE(row.count("full_test_mean")) << "no full_test_mean column";
  EXPECT_DOUBLE_EQ(std::stod(row["full_test_mean"]), percent_sum / 4);
  EXPECT_TRUE(row.count("full_test_cluster_0") && row.count("full_test_cluster_1"));
  EXPECT_FALSE(row["mean"].empty());
}

TEST_F(ClusterTestRun, TheSetsAreTheWholeTestSplitRotatedAsTheTrainingImages) {
  ASSERT_EQ(exit_code_, tools::kExitOk);
  auto scenario = LoadScenario(dir_ + "/scenario.toml", {});
  ASSERT_TRUE(scenario.ok());
  auto sets = ClusterTestSets(*scenario);
  ASSERT_TRUE(sets.ok()) << sets.status().ToString();
  auto t10k = training::ReadFashionMnist(training::kDebianFashionMnistDir, "t10k");
  ASSERT_TRUE(t10k.ok()) << t10k.status().ToString();
  for (size_t i : {size_t{0}, size_t{4321}, size_t{9999}}) {
    std::vector<float> grey(t10k->Sample(i).begin(), t10k->Sample(i).end());
    for (float& x : grey) x = (x - 0.5f) / 0.5f;  // pixel_range = "symmetric"
    std::vector<float> rotated(grey.size());
    training::RotateImage(grey.data(), rotated.data(), 1, 28, 28, 180,
                          training::Interpolation::kNearest);
    const auto upright = (*sets)[0].Sample(i), turned = (*sets)[1].Sample(i);
    EXPECT_EQ(std::vector<float>(upright.begin(), upright.end()), grey) << i;
    EXPECT_EQ(std::vector<float>(turned.begin(), turned.end()), rotated) << i;
    EXPECT_EQ((*sets)[1].labels[i], t10k->labels[i]);
  }
}

TEST_F(ClusterTestRun, TheReportReadsTheFiguresBackAndOldFoldersWithout) {
  ASSERT_EQ(exit_code_, tools::kExitOk);
  const std::string method_dir = MethodDir(dir_ + "/out", "random");
  MethodRun run = ReadMethodRun(method_dir, "random", FourNodes());
  ASSERT_TRUE(run.nodes[3].full_test.has_value());
  // A folder written before [data] test existed has no full_test.csv: no figures, no columns.
  fs::rename(PathIn(method_dir, kFullTestFile), dir_ + "/kept.csv");
  MethodRun old = ReadMethodRun(method_dir, "random", FourNodes());
  fs::rename(dir_ + "/kept.csv", PathIn(method_dir, kFullTestFile));
  EXPECT_FALSE(old.nodes[3].full_test.has_value());
  MethodSummary summary = Summarize(old, FourNodes());
  EXPECT_FALSE(summary.full_test_mean.has_value());
  const std::string path = dir_ + "/old_summary.csv";
  ASSERT_TRUE(WriteSummaryCsv(path, {summary}, 2).ok());
  auto text = ReadWholeFile(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->find("full_test"), std::string::npos) << *text;
  EXPECT_EQ(FormatTable({summary}, 2).find("full test set"), std::string::npos);
  EXPECT_NE(FormatTable({Summarize(run, FourNodes())}, 2).find("full test set (up to 10000"),
            std::string::npos);
}

// A full_test.csv that is not the launcher's is refused with its file and line, and no node gets
// a figure from it.
TEST(FullTestCsv, AWrongHeaderOrShortRowIsRefusedWithItsLine) {
  const std::string dir = ::testing::TempDir() + "/full_test_csv." + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  MethodRun run;
  run.dir = dir;
  run.nodes.resize(1);
  run.nodes[0].id = "0";
  const std::string path = PathIn(dir, kFullTestFile);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"node,cluster,round,images,test_loss\n0,0,1,10,0.5\n",
       path + " line 1, column 6: the header's end where the column 'test_acc' belongs; allowed: "
              "the header node,cluster,round,images,test_loss,test_acc"},
      {"node,cluster,round,images,test_loss,test_acc\n0,0,1,10,0.5\n",
       path + " line 2: 5 cells; allowed: 6, one per column of the header"},
      {"node,cluster,round,images,test_loss,test_acc\n0,0,1,-10,0.5,0.9\n",
       path + " line 2, column 4 (images): '-10' is out of range; allowed: a whole number >= 0"}};
  for (const auto& [text, message] : cases) {
    std::ofstream(path) << text;
    const Status status = ReadFullTestCsv(run);
    EXPECT_EQ(status.code(), ErrorCode::kMalformed) << text;
    EXPECT_EQ(status.message(), message);
    EXPECT_FALSE(run.nodes[0].full_test.has_value());
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace meshlearn::launch
