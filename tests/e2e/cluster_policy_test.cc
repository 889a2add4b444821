// The FLIC, OCFL and FLT clustering policies run from their scenario files through the launcher
// (issue 9): every node clusters what it has seen, and the summary scores it against the truth.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

// Runs `methods` of `scenario` (a file in configs/scenarios) in-process with the overrides `sets`
// and returns the output folder.
std::string RunScenario(const std::string& name, const std::string& scenario,
                        const std::string& methods, const std::vector<std::string>& sets) {
  std::string out = ::testing::TempDir() + "/e2e_policy_" + name;
  std::filesystem::remove_all(out);
  std::filesystem::remove(out + ".log");  // beside the run folder, which must start empty
  std::filesystem::create_directories(out);
  std::vector<std::string> args = {
      MESHLEARN_LAUNCH_BIN,
      std::string(MESHLEARN_SOURCE_DIR) + "/configs/scenarios/" + scenario,
      "--out",
      out,
      "--in-process",
      "--methods",
      methods};
  for (const std::string& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  auto launcher = ChildProcess::Start(args, out + ".log");
  EXPECT_TRUE(launcher.has_value());
  if (!launcher) return "";
  EXPECT_TRUE(ExitedWith(launcher->Wait(seconds(1200)), 0)) << ReadText(out + ".log");
  std::printf("%s\n", ReadText(out + ".log").c_str());
  return out;
}

// Expects `methods` rows of `out`/summary.csv whose method name starts with `prefix`, each with a
// mean per-node ARI >= 0.9 and a mean clustering round >= `first_round` (cluster_after for FLIC and
// OCFL).
void ExpectClustersFound(const std::string& out, const std::string& prefix, int methods,
                         double first_round = 10) {
  std::istringstream summary(ReadText(out + "/summary.csv"));
  std::string header, row;
  std::getline(summary, header);
  int found = 0;
  while (std::getline(summary, row)) {
    if (row.rfind("\"" + prefix, 0) != 0) continue;
    ++found;
    std::optional<double> ari = SummaryCell(header, row, "ari");
    std::optional<double> round = SummaryCell(header, row, "cluster_round");
    ASSERT_TRUE(ari && round) << header << "\n" << row;
    EXPECT_GE(*ari, 0.9) << row;
    EXPECT_GE(*round, first_round) << row;
  }
  EXPECT_EQ(found, methods) << ReadText(out + "/summary.csv");
}

// OCFL's small scenario: 15 nodes, 3 label clusters (5/5/5), 18 rounds. The temperature is
// recorded every round, each node clusters once at a round >= cluster_after (10) where it rose,
// and the partitions match the truth (mean per-node ARI >= 0.9; measured 0.99 and 1.0 over the
// nodes that clustered by round 14). 18 rounds, not 14: with peers' own local updates as
// directions, T rises from round 1 to about 10, 14 nodes see it rise again at round 10 or 11,
// and node-0 only at round 16 (seed 1).
TEST(ClusterPolicies, OcflTemperaturePolicyFindsTheLabelClusters) {
  std::string out = RunScenario("ocfl", "ocfl-label-clusters.toml",
                                "ocfl agglomerative,ocfl louvain", {"node.training.rounds=18"});
  ExpectClustersFound(out, "ocfl", 2);
  for (const char* method : {"ocfl-agglomerative", "ocfl-louvain"}) {
    for (int i = 0; i < 15; ++i) {
      std::string node = out + "/" + method + "/node-" + std::to_string(i);
      EXPECT_TRUE(std::filesystem::exists(node + "/cluster.csv")) << node;
      std::vector<node::RoundRow> rounds = Rounds(node);
      ASSERT_EQ(rounds.size(), 19u) << node;
      for (size_t r = 1; r < rounds.size(); ++r) {
        EXPECT_TRUE(std::isfinite(rounds[r].temperature)) << node << " round " << r;
      }
    }
  }
}

// FLIC's small scenario: the label swap, 20 nodes in 5 clusters of 4, 12 rounds. Every node
// clusters its peers' own last local updates once, with Louvain at round 10, and the partitions
// match the truth (mean per-node ARI >= 0.9). With a peer's direction taken as its model minus the
// receiver's merged model instead, the ARI was 0.83 (seed 1, clustering once).
TEST(ClusterPolicies, FlicLouvainPolicyFindsTheLabelSwapClusters) {
  std::string out =
      RunScenario("flic", "flic-label-swap.toml", "flic louvain", {"node.training.rounds=12"});
  ExpectClustersFound(out, "flic", 1);
  for (int i = 0; i < 20; ++i) {
    std::string node = out + "/flic-louvain/node-" + std::to_string(i);
    EXPECT_TRUE(std::filesystem::exists(node + "/cluster.csv")) << node;
    EXPECT_EQ(Rounds(node).size(), 13u) << node;
  }
}

// FLT's small scenario: 15 nodes in 5 clusters x 2 Fashion-MNIST classes, 3 rounds. Every node
// gets every peer's data signature in round 1 (signature.csv), the hard clusters match the truth
// (ARI >= 0.9; measured 1.0 on seeds 1-4), and both the hard clusters and the centroid DAC scores
// keep most sampling within the cluster (round 1 samples before the signatures arrive).
TEST(ClusterPolicies, FltSignaturesFindTheLabelClusters) {
  std::string out =
      RunScenario("flt", "flt-label-pairs.toml", "flt centroid_cluster,flt centroid dac",
                  {"node.training.rounds=3"});
  ExpectClustersFound(out, "flt centroid_cluster", 1, 1);
  std::istringstream summary(ReadText(out + "/summary.csv"));
  std::string header, row;
  std::getline(summary, header);
  int methods = 0;
  while (std::getline(summary, row)) {
    if (row.rfind("\"flt", 0) != 0) continue;
    ++methods;
    std::optional<double> in_cluster = SummaryCell(header, row, "in_cluster");
    ASSERT_TRUE(in_cluster) << header << "\n" << row;
    EXPECT_GE(*in_cluster, 0.5) << row;
  }
  EXPECT_EQ(methods, 2) << ReadText(out + "/summary.csv");
  for (int i = 0; i < 15; ++i) {
    std::string node = out + "/flt-centroid_cluster/node-" + std::to_string(i);
    EXPECT_TRUE(std::filesystem::exists(node + "/cluster.csv")) << node;
    std::istringstream signatures(ReadText(node + "/signature.csv"));
    std::string line;
    std::getline(signatures, line);
    EXPECT_EQ(line, "peer,distance,related");
    int peers = 0;
    while (std::getline(signatures, line)) ++peers;
    EXPECT_EQ(peers, 14) << node;
  }
}

}  // namespace
}  // namespace meshlearn::e2e
