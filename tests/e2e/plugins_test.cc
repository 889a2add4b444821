// The plug-ins (docs/plugins.md) in real meshlearn-node processes on loopback: three nodes with
// one plug-in of each kind (the worked examples' cos_weights metric and FedAvg merge, and a
// min-max attacker), over compressed and uncompressed links; plug-ins that fail on every third
// call, which cost rounds and peers error lines but never the node; and a file that breaks its
// contract, refused at start-up. Through meshlearn-launch, in threads and simulated: the
// cos_weights example summed in the built-in's order gives the built-in's run byte for byte, and
// (simulated) so does the FedAvg example added in the built-in merge's order.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/e2e/launcher_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

std::string Example(const std::string& name) {
  return std::string(MESHLEARN_PLUGIN_EXAMPLES) + "/" + name + ".pt";
}
std::string Fixture(const std::string& name) {
  return std::string(MESHLEARN_PLUGIN_FIXTURES) + "/" + name + ".pt";
}

const std::vector<std::string> kIds = {"attacker", "honest-a", "honest-b"};

// Runs the three nodes of kIds in `dir`, 8 rounds, every node the metric and merge rule of the
// files given, "attacker" the attack of `attack`, "honest-b" with int8 compression; expects
// each to exit 0 after round 8, and returns their logs.
std::vector<std::string> RunMesh(const std::string& dir, const std::string& metric,
                                 const std::string& merge, const std::string& attack) {
  std::filesystem::remove_all(dir);
  auto configs = WriteFullMesh(dir, kIds, 11, [&](node::NodeConfig& c) {
    c.training.rounds = 8;
    c.round.min_round_s = 0.05;
    c.learning.peers_per_round = 2;
    c.learning.metric = similarity::MetricKind::kTorchScript;
    c.learning.metric_path = metric;
    c.learning.robust.kind = training::RobustKind::kTorchScript;
    c.learning.merge_path = merge;
    if (c.id == "attacker") {
      c.attack.kind = node::AttackKind::kTorchScript;
      c.attack.attack_path = attack;
    }
    if (c.id == "honest-b") c.compression.codec = CompressionCodec::kInt8;
  });
  EXPECT_EQ(configs.size(), kIds.size());
  std::vector<ChildProcess> nodes;
  for (size_t i = 0; i < configs.size(); ++i) {
    auto child = ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", configs[i]},
                                     dir + "/" + kIds[i] + ".log");
    EXPECT_TRUE(child.has_value());
    if (child) nodes.push_back(std::move(*child));
  }
  std::vector<std::string> logs;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const bool exited = ExitedWith(nodes[i].Wait(seconds(300)), 0);
    logs.push_back(ReadText(dir + "/" + kIds[i] + ".log"));
    EXPECT_TRUE(exited) << kIds[i] << " log:\n" << logs.back();
    EXPECT_EQ(LastRound(dir + "/" + kIds[i]), 8) << kIds[i] << " log:\n" << logs.back();
  }
  return logs;
}

// Expects every round of `node_dir` to have a finite test loss: nothing non-finite was merged.
void ExpectFiniteTestLoss(const std::string& node_dir) {
  for (const node::RoundRow& row : Rounds(node_dir)) {
    EXPECT_TRUE(std::isfinite(row.test_loss)) << node_dir << " round " << row.round;
  }
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(PlugIns, OneOfEachKindRunsInNodeProcessesWithAndWithoutCompression) {
  const std::string dir = ::testing::TempDir() + "/e2e_plugins";
  const auto logs = RunMesh(dir, Example("cos_weights"), Example("fedavg"), Example("min_max"));
  ASSERT_EQ(logs.size(), 3u);
  EXPECT_NE(logs[0].find("serves poisoned models"), std::string::npos) << logs[0];
  for (size_t i = 0; i < logs.size(); ++i) {
    EXPECT_NE(logs[i].find("plug-in [learning] metric: " + Example("cos_weights")),
              std::string::npos)
        << kIds[i] << ":\n"
        << logs[i];
    EXPECT_NE(logs[i].find("plug-in [learning] robust: " + Example("fedavg")), std::string::npos);
    EXPECT_EQ(logs[i].find("error"), std::string::npos) << kIds[i] << ":\n" << logs[i];
    std::set<std::string> others(kIds.begin(), kIds.end());
    others.erase(kIds[i]);
    EXPECT_EQ(ScoredPeers(dir + "/" + kIds[i]), others) << kIds[i];
    ExpectFiniteTestLoss(dir + "/" + kIds[i]);
  }
}

TEST(PlugIns, APlugInThatFailsSometimesCostsPeersAndRoundsAnErrorLineNeverTheNode) {
  const std::string dir = ::testing::TempDir() + "/e2e_plugins_faulty";
  const auto logs = RunMesh(dir, Fixture("metric_every_third_nan"),
                            Fixture("merge_every_third_throws"), Fixture("attack_every_third_nan"));
  ASSERT_EQ(logs.size(), 3u);
  std::string all;
  for (const std::string& log : logs) all += log;
  EXPECT_GT(Count(all, "metric_every_third_nan.pt: forward returned a float (nan)"), 0u) << all;
  EXPECT_GT(Count(all, "merge left out, the node keeps its model this round"), 0u) << all;
  EXPECT_GT(Count(all,
                  "merge_every_third_throws.pt: forward threw: builtins.RuntimeError: every "
                  "third merge fails"),
            0u)
      << all;
  EXPECT_GT(Count(logs[0], "[attack] failed, the honest model is served this round"), 0u)
      << logs[0];
  EXPECT_GT(Count(logs[0], "attack_every_third_nan.pt: the served model holds NaN or Inf"), 0u)
      << logs[0];
  for (const std::string& id : kIds) ExpectFiniteTestLoss(dir + "/" + id);
}

TEST(PlugIns, AFileThatBreaksItsContractIsRefusedAtStartNamingTheFile) {
  const std::string dir = ::testing::TempDir() + "/e2e_plugins_refused";
  std::filesystem::remove_all(dir);
  const std::string bad = Fixture("merge_one_argument");
  auto configs = WriteFullMesh(dir, {"n0", "n1"}, 12, [&](node::NodeConfig& c) {
    c.learning.robust.kind = training::RobustKind::kTorchScript;
    c.learning.merge_path = bad;
  });
  ASSERT_EQ(configs.size(), 2u);
  Finished run =
      RunToEnd({MESHLEARN_NODE_BIN, "--config", configs[0]}, dir + "/n0.log", seconds(120));
  EXPECT_TRUE(run.status && WIFEXITED(*run.status) && WEXITSTATUS(*run.status) != 0) << run.log;
  EXPECT_NE(run.log.find("[learning] merge_path: " + bad +
                         ": forward must be forward(self, own: "
                         "Tensor, peers: List[Tensor], coefficients: Tensor) -> Tensor"),
            std::string::npos)
      << run.log;
}

// Runs the 6-node synthetic scenario of launcher_support.h, 5 rounds, with one method "dac"
// whose learning table is `learning`, in `mode`; returns the run folder.
std::string LaunchDac(const std::string& name, const std::string& learning,
                      const std::string& mode) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  const std::string scenario = WriteScenario(dir, 5, 0);
  Finished run = RunToEnd({MESHLEARN_LAUNCH_BIN, scenario, "--out", dir + "/out", mode, "--set",
                           "methods=[{name = \"dac\", learning = {" + learning + "}}]"},
                          dir + "/launch.log", seconds(600));
  EXPECT_TRUE(ExitedWith(run.status, 0)) << run.log;
  return dir + "/out";
}

TEST(PlugIns, TheCosWeightsExampleInTheBuiltInsOrderGivesTheBuiltInsRunInEveryMode) {
  for (const std::string mode : {"--in-process", "--simulate"}) {
    const std::string builtin =
        LaunchDac("e2e_plugins_builtin" + mode, "metric = \"cos_weights\", tau = 140", mode);
    const std::string plugin = LaunchDac("e2e_plugins_script" + mode,
                                         "metric = \"torchscript\", metric_path = \"" +
                                             Example("cos_weights_builtin_order") + "\", tau = 140",
                                         mode);
    // A sync run samples the same peers in every round of every node, and reaches the same
    // losses (as launcher_test.cc's simulated and deployed runs); simulated, every byte is the
    // seed's.
    for (int i = 0; i < 6; ++i) {
      const std::string node = "/dac/node-" + std::to_string(i);
      const auto expected = Rounds(builtin + node), got = Rounds(plugin + node);
      ASSERT_EQ(expected.size(), 6u) << mode << node;
      ASSERT_EQ(got.size(), expected.size()) << mode << node;
      for (size_t r = 0; r < got.size(); ++r) {
        EXPECT_EQ(got[r].peers, expected[r].peers) << mode << node << " round " << r;
        EXPECT_NEAR(got[r].test_loss, expected[r].test_loss, 1e-6 * expected[r].test_loss)
            << mode << node << " round " << r;
      }
    }
    if (mode == "--simulate") ExpectIdenticalMethodFiles(builtin, plugin, "dac", 6);
    EXPECT_NE(ReadText(plugin + "/dac/node-0/node.log").find("plug-in [learning] metric"),
              std::string::npos);
  }
}

// The built-in merge (robust = "none") sums in a canonical order; the FedAvg example in that
// order gives the built-in's run byte for byte.
TEST(PlugIns, TheFedAvgExampleInTheBuiltInsOrderGivesTheBuiltInsRun) {
  const std::string builtin =
      LaunchDac("e2e_plugins_fedavg_builtin", "metric = \"cos_weights\", tau = 140", "--simulate");
  const std::string plugin = LaunchDac("e2e_plugins_fedavg_script",
                                       "metric = \"cos_weights\", tau = 140, robust = "
                                       "\"torchscript\", merge_path = \"" +
                                           Example("fedavg_builtin_order") + "\"",
                                       "--simulate");
  ExpectIdenticalMethodFiles(builtin, plugin, "dac", 6);
  EXPECT_NE(ReadText(plugin + "/dac/node-0/node.log").find("plug-in [learning] robust"),
            std::string::npos);
}

}  // namespace
}  // namespace meshlearn::e2e
