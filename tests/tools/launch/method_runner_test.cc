// The runner table (tools/launch/method_runner.h): a runner added to the table alone runs a
// whole scenario through Run::Execute, with the run folder, manifest, table and summary.csv
// every runner gets.
#include "tools/launch/method_runner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "base/atomic_file.h"
#include "node/host/outputs.h"
#include "tools/cli/cli_exit.h"
#include "tools/launch/experiment.h"
#include "tools/launch/run.h"
#include "tools/layout/run_layout.h"
#include "tools/scenario/manifest.h"

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;

// What the toy runner was asked to run: per method, the ids of its nodes' configs.
struct Asked {
  std::string method;
  std::vector<std::string> ids;
  bool each_node_has_a_folder = true;
};

// A runner that records what it was asked to run and lets every node "finish" its rounds by
// writing their rounds.csv (test loss 9 + round), as a node would.
class ToyRunner : public MethodRunner {
 public:
  explicit ToyRunner(std::vector<Asked>* asked) : asked_(asked) {}
  std::string Mode() const override { return "toy"; }
  Status Run(const MethodJob& job, MethodRun& run) override {
    Asked a{run.method.name, {}};
    for (size_t i = 0; i < job.configs.size(); ++i) {
      a.ids.push_back(job.configs[i].id);
      a.each_node_has_a_folder = a.each_node_has_a_folder && fs::is_directory(run.nodes[i].dir);
      auto outputs = node::NodeOutputs::Open(run.nodes[i].dir, -1);
      if (!outputs.ok()) return outputs.status();
      for (int64_t r = 0; r <= job.configs[i].training.rounds; ++r) {
        node::RoundRecord record;
        record.round = r;
        record.wall_seconds = static_cast<double>(r);
        record.outcome.val_loss = 20.0 - static_cast<double>(r);
        record.outcome.test_loss = 9.0 + static_cast<double>(r);
        MESHLEARN_RETURN_IF_ERROR(outputs->AppendRound(record, 0, 0));
      }
    }
    asked_->push_back(std::move(a));
    return Status::Ok();
  }

 private:
  std::vector<Asked>* asked_;
};

// A launch of the scenario `text`, written into a fresh folder `name` of the test's, by the toy
// runner, which records in `asked` what it runs.
RunRequest ToyLaunch(const std::string& name, const std::string& text, std::vector<Asked>* asked) {
  std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  RunRequest request;
  request.scenario_path = dir + "/scenario.toml";
  std::ofstream(request.scenario_path) << text;
  Runners().Add("toy", [asked] { return std::make_unique<ToyRunner>(asked); });
  request.options.out_dir = dir + "/out";
  request.options.runner = "toy";
  request.command = {"meshlearn-launch", request.scenario_path, "--engine", "toy"};
  return request;
}

TEST(RunnerTable, ARunnerAddedToTheTableRunsAScenario) {
  std::vector<Asked> asked;
  RunRequest request =
      ToyLaunch("runner_table_toy",
                "name = \"toy\"\nseed = 3\n"
                "[data]\ndataset = \"synthetic\"\nshift = \"synthetic\"\nclients = 4\n"
                "cluster_sizes = [2, 2]\ntrain_per_client = 20\n"
                "validation_per_client = 10\ntest_per_client = 10\n"
                "[node.model]\narchitecture = \"linear\"\n"
                "[node.training]\nrounds = 2\n"
                "[node.learning]\npeers_per_round = 1\n"
                "[[methods]]\nname = \"random\"\nlearning = { sampler = \"random\" }\n"
                "[[methods]]\nname = \"oracle\"\nlearning = { sampler = \"oracle\" }\n",
                &asked);
  std::atomic<bool> interrupt{false};
  EXPECT_EQ(Run::Execute(request, interrupt), tools::kExitOk);

  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[0].method, "random");
  EXPECT_EQ(asked[1].method, "oracle");
  for (const Asked& a : asked) {
    EXPECT_EQ(a.ids, (std::vector<std::string>{"0", "1", "2", "3"})) << a.method;
    EXPECT_TRUE(a.each_node_has_a_folder) << a.method;
  }
  // The manifest names the runner's mode; both methods completed.
  auto text = ReadWholeFile(PathIn(request.options.out_dir, kManifestFile));
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto manifest = ParseManifest(*text, "manifest.toml");
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  ASSERT_EQ(manifest->launches.size(), 1u);
  EXPECT_EQ(manifest->launches[0].mode, "toy");
  EXPECT_EQ(manifest->status, kComplete);
  ASSERT_EQ(manifest->methods.size(), 2u);
  EXPECT_EQ(manifest->methods[1].last_node_round, 2);
  // summary.csv reports the toy nodes' best-validation test MSE: round 2, 9 + 2.
  auto summary = ReadWholeFile(PathIn(request.options.out_dir, kSummaryFile));
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_NE(summary->find("\"random\",mse,11,11,11,"), std::string::npos) << *summary;
  EXPECT_NE(summary->find("\"oracle\",mse,11,11,11,"), std::string::npos) << *summary;
}

// [network] schedule = "sequential" is the simulator's: a runner on real ports refuses it before
// it claims a folder or runs a node, saying what, where and what is allowed.
TEST(RunnerTable, ARunnerOnRealPortsRefusesTheSequentialSchedule) {
  std::vector<Asked> asked;
  RunRequest request = ToyLaunch("runner_table_sequential",
                                 "name = \"toy\"\n[data]\ndataset = \"synthetic\"\nclients = 4\n"
                                 "[node.model]\narchitecture = \"linear\"\n"
                                 "[network]\nschedule = \"sequential\"\n",
                                 &asked);
  std::atomic<bool> interrupt{false};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Run::Execute(request, interrupt), tools::kExitBadInput);
  std::string error = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(asked.empty());
  EXPECT_FALSE(fs::exists(request.options.out_dir));
  EXPECT_NE(
      error.find(request.scenario_path + ": [network] schedule = \"sequential\" needs --simulate"),
      std::string::npos)
      << error;
  EXPECT_NE(error.find("in toy mode (allowed here: schedule = \"synchronous\""), std::string::npos)
      << error;
}

TEST(RunnerTable, AnUnknownRunnerIsNamedWithTheKnownOnes) {
  auto runner = Runners().Make("pbs");
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.status().message().find(
                "no runner 'pbs'; the runners are processes, in-process, simulated, slurm, mpirun"),
            std::string::npos)
      << runner.status().message();
}

}  // namespace
}  // namespace meshlearn::launch

namespace meshlearn::launch {
namespace {

TEST(SimulatedEndpoint, EveryNodeOfAHundredThousandHasItsOwnAndTheFirstFortyThousandKeepTheirs) {
  EXPECT_EQ(SimulatedEndpoint(0), "tcp://127.0.0.1:20000");
  EXPECT_EQ(SimulatedEndpoint(39999), "tcp://127.0.0.1:59999");
  EXPECT_EQ(SimulatedEndpoint(40000), "tcp://127.0.0.2:20000");
  EXPECT_EQ(SimulatedEndpoint(254 * 40000), "tcp://127.0.1.1:20000");
  std::set<std::string> seen;
  for (size_t i = 0; i < 200000; ++i) {
    ASSERT_TRUE(seen.insert(SimulatedEndpoint(i)).second) << i << ": " << SimulatedEndpoint(i);
  }
}

}  // namespace
}  // namespace meshlearn::launch
