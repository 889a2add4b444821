// meshlearn-launch as a user runs it: a small scenario, every output file. A secure mesh and a node
// killed mid-run: launcher_reliability_test.cc.
#include <gtest/gtest.h>

#include <map>

#include "base/csv.h"
#include "tests/e2e/launcher_support.h"
#include "tools/plot/matrix_csv.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

void ExpectCompleteRun(const std::string& out, int rounds) {
  // summary.csv: a header and one row per method, with both clusters.
  std::string summary = ReadText(out + "/summary.csv");
  EXPECT_EQ(summary.rfind("method,metric,cluster_0,cluster_1,mean,in_cluster", 0), 0u) << summary;
  EXPECT_NE(summary.find("\"random\",mse"), std::string::npos);
  EXPECT_NE(summary.find("\"cos_weights\",mse"), std::string::npos);
  EXPECT_TRUE(IsPng(out + "/curves.png"));
  EXPECT_EQ(ReadText(out + "/clusters.csv"), "node,cluster\n0,0\n1,0\n2,0\n3,1\n4,1\n5,1\n");
  for (const char* method : {"random", "cos_weights"}) {
    std::string dir = out + "/" + method;
    for (int i = 0; i < 6; ++i) {
      std::string node = dir + "/node-" + std::to_string(i);
      EXPECT_EQ(Rounds(node).size(), static_cast<size_t>(rounds + 1)) << node;
      for (const char* file : {"comm.csv", "scores.csv", "checkpoint.bin", "node.log"}) {
        EXPECT_TRUE(std::filesystem::exists(node + "/" + file)) << node << "/" << file;
      }
    }
    auto heatmap = plot::ReadMatrixCsv(dir + "/heatmap.csv");
    ASSERT_TRUE(heatmap.ok()) << heatmap.status().ToString();
    EXPECT_EQ(heatmap->row_ids, (std::vector<std::string>{"0", "1", "2", "3", "4", "5"}));
    EXPECT_EQ(heatmap->col_ids, heatmap->row_ids);
    double total = 0;
    for (size_t r = 0; r < 6; ++r) {
      EXPECT_EQ(heatmap->at(r, r), 0) << "a node never samples itself";
      // Each cell is what the row's node sampled, round by round, in its rounds.csv.
      std::vector<double> tally(6, 0);
      for (const auto& row : Rounds(dir + "/node-" + std::to_string(r))) {
        for (const auto& peer : row.peers) tally[std::stoul(peer)] += 1;
      }
      for (size_t c = 0; c < 6; ++c) {
        EXPECT_EQ(heatmap->at(r, c), tally[c]) << method << " heatmap cell " << r << "," << c;
        total += heatmap->at(r, c);
      }
    }
    EXPECT_EQ(total, 6.0 * rounds * 2) << "every node samples 2 peers in every round >= 1";
    EXPECT_TRUE(IsPng(dir + "/heatmap.png"));
  }
}

// Runs the 6-node, 5-round scenario through meshlearn-launch with `mode_args`, into
// "<temp>/<name>/out", checks that it wrote every output, and returns "<temp>/<name>".
std::string LaunchSmallScenario(const std::string& name,
                                const std::vector<std::string>& mode_args) {
  std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::string scenario = WriteScenario(dir, 5, 0);
  std::vector<std::string> args = {MESHLEARN_LAUNCH_BIN, scenario, "--out", dir + "/out"};
  args.insert(args.end(), mode_args.begin(), mode_args.end());
  auto launcher = ChildProcess::Start(args, dir + "/launch.log");
  EXPECT_TRUE(launcher.has_value());
  if (!launcher) return dir;
  EXPECT_TRUE(ExitedWith(launcher->Wait(seconds(300)), 0)) << ReadText(dir + "/launch.log");
  ExpectCompleteRun(dir + "/out", 5);
  return dir;
}

TEST(Launcher, SmallScenarioWritesEveryOutputWithNodeProcesses) {
  std::string dir = LaunchSmallScenario("e2e_launch_process", {});
  std::string log = ReadText(dir + "/launch.log");
  EXPECT_NE(log.find("Test MSE at each node's best-validation round"), std::string::npos) << log;
  EXPECT_NE(log.find("heatmap.png"), std::string::npos);
  // Real nodes: one clock, the real one.
  EXPECT_NE(log.find("in-cluster    wall  overhead\n"), std::string::npos) << log;
  EXPECT_NE(log.find("overhead: each node's share of its real time outside training"),
            std::string::npos)
      << log;
  EXPECT_EQ(RowOf(dir + "/out/summary.csv", "random")["simulated_s"], "");
}

// --dashboard follows threads and simulations too, and reports what it cost (dashboard.csv).
// The page itself is tested in a browser (tests/browser/dashboard_test.py).
TEST(Launcher, DashboardFollowsThreadsAndSimulationsAndReportsItsCost) {
  for (const std::string mode : {"--in-process", "--simulate"}) {
    std::string dir =
        LaunchSmallScenario("e2e_launch_dashboard" + mode, {mode, "--dashboard", "0"});
    std::string log = ReadText(dir + "/launch.log");
    EXPECT_NE(log.find("dashboard: http://127.0.0.1:"), std::string::npos) << log;
    std::string csv = ReadText(dir + "/out/dashboard.csv");
    std::vector<std::string> lines;
    for (size_t at = 0, end; (end = csv.find('\n', at)) != std::string::npos; at = end + 1) {
      lines.push_back(csv.substr(at, end - at));
    }
    ASSERT_EQ(lines.size(), 3u) << mode << ": a header and a row per method:\n" << csv;
    for (const std::string method : {"random", "cos_weights"}) {
      EXPECT_NE(log.find("dashboard (" + method + "): "), std::string::npos) << log;
    }
    if (mode == "--in-process") {  // seconds long: polled at least once (a simulation may not be)
      std::string polls = lines[1].substr(lines[1].rfind(',', lines[1].rfind(',') - 1) + 1);
      EXPECT_GE(std::stoi(polls), 1) << lines[1];
    }
  }
}

TEST(Launcher, SmallScenarioWritesEveryOutputWithThreads) {
  LaunchSmallScenario("e2e_launch_threads", {"--in-process"});
}

TEST(Launcher, SmallScenarioWritesEveryOutputSimulated) {
  std::string dir = LaunchSmallScenario("e2e_launch_simulated", {"--simulate"});
  std::string log = ReadText(dir + "/launch.log");
  EXPECT_NE(log.find("simulation (cos_weights): "), std::string::npos) << log;
  EXPECT_NE(ReadText(dir + "/out/simulation.csv").find("\"random\","), std::string::npos);
  // Issue 34, item 7: the table and summary.csv show the real and the simulated seconds, each
  // named so; the simulated ones are the simulation's own, the real ones include them.
  EXPECT_NE(log.find("in-cluster    real  simulated  overhead\n"), std::string::npos) << log;
  EXPECT_NE(log.find("overhead: each node's share of its simulated time outside training"),
            std::string::npos)
      << log;
  for (const std::string method : {"random", "cos_weights"}) {
    auto summary = RowOf(dir + "/out/summary.csv", method);
    auto simulation = RowOf(dir + "/out/simulation.csv", method);
    ASSERT_FALSE(summary["simulated_s"].empty()) << method;
    EXPECT_NEAR(std::stod(summary["simulated_s"]), std::stod(simulation["simulated_s"]),
                1e-4 * std::stod(simulation["simulated_s"]) + 1e-6)
        << method;
    EXPECT_GE(std::stod(summary["wall_s"]) * (1 + 1e-5), std::stod(simulation["real_s"])) << method;
  }
}

// The same logic simulated and deployed: a sync run of the synthetic scenario samples the same
// peers in every round of every node, and reaches the same losses, as node processes on loopback.
TEST(Launcher, ASimulatedRunMatchesTheRunOfNodeProcesses) {
  std::string dir = ::testing::TempDir() + "/e2e_launch_match";
  std::filesystem::remove_all(dir);
  std::string scenario = WriteScenario(dir, 8, 0);
  for (const char* mode : {"process", "simulate"}) {
    std::vector<std::string> args = {MESHLEARN_LAUNCH_BIN, scenario,    "--out",
                                     dir + "/" + mode,     "--methods", "cos_weights"};
    if (std::string(mode) == "simulate") args.push_back("--simulate");
    auto launcher = ChildProcess::Start(args, dir + "/" + mode + ".log");
    ASSERT_TRUE(launcher.has_value());
    EXPECT_TRUE(ExitedWith(launcher->Wait(seconds(300)), 0)) << ReadText(dir + "/" + mode + ".log");
  }
  for (int i = 0; i < 6; ++i) {
    std::string node = "/cos_weights/node-" + std::to_string(i);
    auto real = Rounds(dir + "/process" + node);
    auto simulated = Rounds(dir + "/simulate" + node);
    ASSERT_EQ(real.size(), 9u) << node;
    ASSERT_EQ(simulated.size(), real.size()) << node;
    for (size_t r = 0; r < real.size(); ++r) {
      EXPECT_EQ(simulated[r].peers, real[r].peers) << node << " round " << r;
      EXPECT_NEAR(simulated[r].test_loss, real[r].test_loss, 1e-6 * real[r].test_loss)
          << node << " round " << r;
      EXPECT_NEAR(simulated[r].val_loss, real[r].val_loss, 1e-6 * real[r].val_loss)
          << node << " round " << r;
    }
  }
}

}  // namespace
}  // namespace meshlearn::e2e
