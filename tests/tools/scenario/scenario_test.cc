// The launcher's scenario files: the [network] section of --simulate (sim/network_model.h), where
// errors in node keys point, [data] pixel_range and test, and the node configs built from them.
#include "tools/scenario/scenario.h"
#include "tools/scenario/scenario_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "tests/fresh_dir.h"
#include "tools/scenario/scenario_network.h"

namespace meshlearn::launch {
namespace {

// A 4-node synthetic scenario with `network` appended, in a file of the running test's own (ctest
// runs the tests of this file side by side).
Result<Scenario> WithNetwork(const std::string& network) {
  std::string path = meshlearn::testing::TestOwnPath("scenario_network.toml");
  std::ofstream(path) << "name = \"net\"\n[data]\ndataset = \"synthetic\"\nclients = 4\n"
                         "[node.model]\narchitecture = \"linear\"\n"
                      << network;
  return LoadScenario(path, {});
}

// The message of the error `network` gives (fails the test when it parses).
std::string ErrorOf(const std::string& network) {
  auto scenario = WithNetwork(network);
  EXPECT_FALSE(scenario.ok()) << network;
  return scenario.ok() ? "" : scenario.status().ToString();
}

TEST(ScenarioNetwork, EveryKeyIsReadIntoTheModel) {
  auto scenario = WithNetwork(R"([network]
latency_ms = 20
bandwidth_mbit_s = 8
loss = 0.01
round_compute_s = 0.5
[[network.outages]]
node = "2"
kind = "pause"
after_round = 3
seconds = 10
[[network.partitions]]
groups = [["0", "1"], ["2", "3"]]
from_round = 5
to_round = 8
)");
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  const sim::NetworkModel& n = scenario->network;
  EXPECT_TRUE(scenario->has_network);
  EXPECT_DOUBLE_EQ(n.latency_s, 0.02);
  EXPECT_DOUBLE_EQ(n.bandwidth_bytes_per_s, 1e6);
  EXPECT_DOUBLE_EQ(n.TransferSeconds(500'000), 0.52);
  EXPECT_DOUBLE_EQ(n.loss, 0.01);
  EXPECT_DOUBLE_EQ(n.round_compute_s, 0.5);
  ASSERT_EQ(n.outages.size(), 1u);
  EXPECT_EQ(n.outages[0].node, "2");
  EXPECT_EQ(n.outages[0].kind, sim::OutageKind::kPause);
  EXPECT_EQ(n.outages[0].after_round, 3);
  ASSERT_EQ(n.partitions.size(), 1u);
  EXPECT_TRUE(n.Cut("0", "3", 5));
  EXPECT_FALSE(n.Cut("0", "1", 5));
  EXPECT_FALSE(n.Cut("0", "3", 8));
}

TEST(ScenarioNetwork, AOneWayPartitionCutsOnlyFromItsFirstGroup) {
  auto scenario = WithNetwork(R"([network]
[[network.partitions]]
groups = [["0", "1"], ["2"], ["3"]]
from_round = 2
to_round = 4
one_way = true
)");
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  const sim::NetworkModel& n = scenario->network;
  EXPECT_TRUE(n.Cut("0", "2", 2));
  EXPECT_TRUE(n.Cut("1", "3", 3));
  EXPECT_FALSE(n.Cut("2", "0", 2)) << "the other way passes";
  EXPECT_FALSE(n.Cut("2", "3", 2)) << "only the first group is cut off";
  EXPECT_FALSE(n.Cut("0", "1", 2));
  EXPECT_FALSE(n.Cut("0", "2", 4)) << "healed";
}

TEST(ScenarioNetwork, WithoutTheSectionTheNetworkIsPerfect) {
  auto scenario = WithNetwork("");
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  EXPECT_FALSE(scenario->has_network);
  EXPECT_EQ(scenario->network.TransferSeconds(1 << 30), 0.0);
  EXPECT_EQ(scenario->network.loss, 0.0);
}

TEST(ScenarioNetwork, TheScheduleIsSynchronousUnlessSetAndABadOneNamesWhatIsAllowed) {
  auto plain = WithNetwork("[network]\nlatency_ms = 1\n");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->schedule, sim::ExchangeSchedule::kSynchronous);
  auto sequential = WithNetwork("[network]\nschedule = \"sequential\"\n");
  ASSERT_TRUE(sequential.ok()) << sequential.status().ToString();
  EXPECT_EQ(sequential->schedule, sim::ExchangeSchedule::kSequential);
  std::string bad = ErrorOf("[network]\nschedule = \"turns\"\n");
  EXPECT_NE(bad.find(":8: 'network.schedule' = 'turns' must be one of \"synchronous\", "
                     "\"sequential\""),
            std::string::npos)
      << bad;
}

TEST(ScenarioNetwork, BadValuesNameTheFileLineKeyAndWhatIsAllowed) {
  std::string loss = ErrorOf("[network]\nloss = 1.5\n");
  EXPECT_NE(loss.find("scenario_network.toml:8:"), std::string::npos) << loss;
  EXPECT_NE(loss.find("'network.loss' = 1.5 must be in [0, 0.99]"), std::string::npos) << loss;
  std::string kind = ErrorOf("[[network.outages]]\nnode = \"1\"\nkind = \"crash\"\nseconds = 1\n");
  EXPECT_NE(kind.find("must be one of \"death\", \"pause\""), std::string::npos) << kind;
  std::string unknown = ErrorOf("[network]\njitter_ms = 3\n");
  EXPECT_NE(unknown.find("network.jitter_ms"), std::string::npos) << unknown;
  std::string order = ErrorOf(
      "[[network.partitions]]\ngroups = [[\"0\"], [\"1\"]]\nfrom_round = 4\nto_round = 4\n");
  EXPECT_NE(order.find("to_round (4) must be above from_round (4)"), std::string::npos) << order;
  std::string groups = ErrorOf("[[network.partitions]]\ngroups = [[\"0\", \"1\"]]\nto_round = 4\n");
  EXPECT_NE(groups.find("must be an array of groups of node ids"), std::string::npos) << groups;
  std::string node = ErrorOf("[[network.outages]]\nnode = \"7\"\nseconds = 1\n");
  EXPECT_NE(node.find("names node '7'; the nodes of this run are \"0\" to \"3\""),
            std::string::npos)
      << node;
  std::string seconds = ErrorOf("[[network.outages]]\nnode = \"1\"\nseconds = 0\n");
  EXPECT_NE(seconds.find("'network.outages[0].seconds' = 0"), std::string::npos) << seconds;
}

// Heterogeneity (issue 48): per-node draws, slow nodes, a node's and a cluster's own values, and
// churn drawn or from a trace, read into the model (sim/heterogeneity.h draws them).
TEST(ScenarioNetwork, HeterogeneityKeysAreReadAndClustersBecomeTheirNodes) {
  auto scenario = WithNetwork(R"([network]
compute = { distribution = "lognormal", sigma = 0.5 }
latency = { distribution = "uniform", min = 1, max = 4 }
slow = { count = 1, factor = 10 }
[[network.nodes]]
cluster = 0
compute = 3
[[network.nodes]]
node = "3"
latency_ms = 50
bandwidth_mbit_s = 8
[network.churn]
fraction = 0.5
mean_up_s = 600
mean_down_s = 60
)");
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  const sim::NetworkModel& n = scenario->network;
  EXPECT_EQ(n.compute.kind, sim::SpreadKind::kLogNormal);
  EXPECT_EQ(n.compute.sigma, 0.5);
  EXPECT_EQ(n.latency.kind, sim::SpreadKind::kUniform);
  EXPECT_EQ(n.latency.max, 4);
  EXPECT_EQ(n.bandwidth.kind, sim::SpreadKind::kNone);
  EXPECT_EQ(n.slow.count, 1);
  EXPECT_EQ(n.slow.factor, 10);
  EXPECT_EQ(n.churn.fraction, 0.5);
  EXPECT_EQ(n.churn.mean_down_s, 60);
  ASSERT_EQ(n.nodes.size(), 5u) << "cluster 0's four nodes, then node 3's own entry";
  EXPECT_EQ(n.nodes[0].node, "0");
  EXPECT_EQ(*n.nodes[0].compute, 3);
  EXPECT_EQ(n.nodes.back().node, "3");
  EXPECT_EQ(*n.nodes.back().latency_s, 0.05);
  EXPECT_EQ(*n.nodes.back().bandwidth_bytes_per_s, 1e6);
}

// A cluster's entry gives its values to each node of its contiguous block.
TEST(ScenarioNetwork, AClustersEntryBecomesAnEntryPerNodeOfTheCluster) {
  NetworkToResolve later;
  sim::NodeNetwork values;
  values.compute = 3;
  later.clusters.emplace_back(1, values);
  sim::NetworkModel network;
  ASSERT_TRUE(ResolveNetwork("s.toml", {2, 3}, later, network).ok());
  ASSERT_EQ(network.nodes.size(), 3u);
  EXPECT_EQ(network.nodes[0].node, "2");
  EXPECT_EQ(network.nodes[2].node, "4");
  EXPECT_EQ(*network.nodes[2].compute, 3);
}

TEST(ScenarioNetwork, BadHeterogeneityValuesAreRefusedByKey) {
  std::string negative = ErrorOf("[[network.nodes]]\nnode = \"1\"\ncompute = -2\n");
  EXPECT_NE(negative.find("'network.nodes[0].compute' = -2 must be in (0, "), std::string::npos)
      << negative;
  std::string unknown = ErrorOf("[[network.nodes]]\nnode = \"9\"\ncompute = 2\n");
  EXPECT_NE(unknown.find("nodes names node '9'; the nodes of this run are \"0\" to \"3\""),
            std::string::npos)
      << unknown;
  std::string cluster = ErrorOf("[[network.nodes]]\ncluster = 5\ncompute = 2\n");
  EXPECT_NE(cluster.find("names cluster 5"), std::string::npos) << cluster;
  std::string both = ErrorOf("[[network.nodes]]\nnode = \"1\"\ncluster = 0\ncompute = 2\n");
  EXPECT_NE(both.find("needs one of node"), std::string::npos) << both;
  std::string distribution = ErrorOf("[network]\ncompute = { distribution = \"gamma\" }\n");
  EXPECT_NE(distribution.find("must be one of \"lognormal\", \"uniform\""), std::string::npos)
      << distribution;
  std::string stray = ErrorOf(
      "[network]\ncompute = { distribution = \"uniform\", min = 1, "
      "max = 2, sigma = 1 }\n");
  EXPECT_NE(stray.find("unknown key 'network.compute.sigma'"), std::string::npos) << stray;
  std::string slow = ErrorOf("[network]\nslow = { count = 1, fraction = 0.5, factor = 10 }\n");
  EXPECT_NE(slow.find("needs one of count"), std::string::npos) << slow;
  std::string churn = ErrorOf("[network.churn]\nfraction = 0.5\nmean_up_s = 10\n");
  EXPECT_NE(churn.find("needs trace"), std::string::npos) << churn;
}

// A churn trace: rows of node,leave_s,return_s; a bad row is refused by its file and line.
TEST(ScenarioNetwork, AChurnTraceIsReadAndItsBadRowsAreRefusedByLine) {
  const std::string trace = ::testing::TempDir() + "/churn_trace.csv";
  auto with_trace = [&](const std::string& rows) {
    std::ofstream(trace) << "node,leave_s,return_s\n" << rows;
    return WithNetwork("[network.churn]\ntrace = \"" + trace + "\"\n");
  };
  auto good = with_trace("1,10,20\n1,30,40.5\n2,0,5\n");
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  ASSERT_EQ(good->network.churn_trace.size(), 3u);
  EXPECT_EQ(good->network.churn_trace[1].return_s, 40.5);
  for (const auto& [rows, says] : std::vector<std::pair<std::string, std::string>>{
           {"1,10,20\n7,1,2\n", "line 3: names node '7'"},
           {"1,10,x\n", "line 2, column 3 (return_s): 'x' is not a number"},
           {"1,-1,2\n", "line 2, column 2 (leave_s)"},
           {"1,10,5\n", "line 2: return_s must be after leave_s"},
           {"1,10,20\n1,15,30\n", "line 3: node 1 leaves before it returned"},
           {"1,10\n", "line 2: expected 3 cells"}}) {
    auto bad = with_trace(rows);
    ASSERT_FALSE(bad.ok()) << rows;
    EXPECT_NE(bad.status().message().find(says), std::string::npos) << bad.status().ToString();
  }
  auto missing = WithNetwork("[network.churn]\ntrace = \"/nonexistent/trace.csv\"\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
}

// A scenario file with node keys: `rounds` of the template on line 8, `tau` of method b on line 13.
std::string WriteScenarioWithNodeKeys(const std::string& name, const std::string& template_rounds,
                                      const std::string& method_tau) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << "name = \"keys\"\n"                               // 1
                         "[data]\ndataset = \"synthetic\"\nclients = 4\n"  // 2-4
                         "[node.model]\narchitecture = \"linear\"\n"       // 5-6
                         "[node.training]\nrounds = "                      // 7
                      << template_rounds
                      << "\n"                                             // 8
                         "[[methods]]\nname = \"a\"\n"                    // 9-10
                         "[[methods]]\nname = \"b\"\n"                    // 11-12
                         "learning = { metric = \"cos_weights\", tau = "  // 13
                      << method_tau << " }\n";
  return path;
}

TEST(ScenarioNodeKeys, ABadValueInTheFilePointsAtItsLineNotAtTheGeneratedConfig) {
  std::string path = WriteScenarioWithNodeKeys("node_keys_file.toml", "-1", "30");
  auto scenario = LoadScenario(path, {});
  ASSERT_FALSE(scenario.ok());
  std::string message = scenario.status().message();
  EXPECT_EQ(message.rfind(path + ":8: 'training.rounds' = -1 must be in [", 0), 0u) << message;
  EXPECT_NE(message.find("(method 'a')"), std::string::npos) << message;
  EXPECT_EQ(message.find("generated"), std::string::npos) << message;

  path = WriteScenarioWithNodeKeys("node_keys_method.toml", "5", "-1");
  scenario = LoadScenario(path, {});
  ASSERT_FALSE(scenario.ok());
  message = scenario.status().message();
  EXPECT_EQ(message.rfind(path + ":13: 'learning.tau' = -1 must be in", 0), 0u) << message;
  EXPECT_NE(message.find("(method 'b')"), std::string::npos) << message;
}

// A method's node settings are read once, merged with the template's: an unknown key or a bad
// [attack] fraction is still reported with the method, the key and where in the file it is.
TEST(ScenarioNodeKeys, AnUnknownKeyOrABadFractionNamesTheMethodTheKeyAndTheFile) {
  std::string path = WriteScenarioWithNodeKeys("node_keys_unknown.toml", "5", "30, nonesuch = 1");
  auto scenario = LoadScenario(path, {});
  ASSERT_FALSE(scenario.ok());
  std::string message = scenario.status().message();
  EXPECT_EQ(message.rfind(path + ":13: unknown key 'learning.nonesuch'", 0), 0u) << message;
  EXPECT_NE(message.find("(method 'b')"), std::string::npos) << message;

  path =
      WriteScenarioWithNodeKeys("node_keys_fraction.toml", "5\n[node.attack]\nfraction = 2", "30");
  scenario = LoadScenario(path, {});
  ASSERT_FALSE(scenario.ok());
  message = scenario.status().message();
  EXPECT_EQ(message.rfind(path + ":10: 'attack.fraction' = 2 must be in [0, 1]", 0), 0u) << message;
  EXPECT_NE(message.find("(method 'a')"), std::string::npos) << message;
}

// The template's keys reach every method, a method's own key replaces the template's, and the
// [attack] fraction is the launcher's: it is read as the method's share of attackers.
TEST(ScenarioNodeKeys, EachMethodHoldsTheTemplateMergedWithItsOwnKeys) {
  std::string path = WriteScenarioWithNodeKeys(
      "node_keys_merged.toml", "7\n[node.attack]\nkind = \"sign_flip\"\nfraction = 0.25", "12");
  auto scenario = LoadScenario(path, {});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  ASSERT_EQ(scenario->methods.size(), 2u);
  for (const MethodSpec& method : scenario->methods) {
    EXPECT_EQ(method.node_keys.training.rounds, 7) << method.name;
    EXPECT_EQ(method.node_keys.attack.kind, node::AttackKind::kSignFlip) << method.name;
    EXPECT_EQ(method.attack_fraction, 0.25) << method.name;
  }
  EXPECT_EQ(scenario->methods[0].node_keys.learning.tau, node::LearningSection{}.tau);
  EXPECT_EQ(scenario->methods[1].node_keys.learning.tau, 12);
  EXPECT_EQ(scenario->methods[1].origins.at("learning.tau"), path + ":16");
}

TEST(ScenarioNodeKeys, ABadValueFromSetPointsAtTheSet) {
  std::string path = WriteScenarioWithNodeKeys("node_keys_set.toml", "5", "30");
  ScenarioOverrides overrides;
  overrides.set = {"node.training.rounds=-1"};
  auto scenario = LoadScenario(path, overrides);
  ASSERT_FALSE(scenario.ok());
  std::string message = scenario.status().message();
  EXPECT_EQ(message.rfind("--set node.training.rounds=-1: 'training.rounds' = -1 must be in [", 0),
            0u)
      << message;
  EXPECT_EQ(message.find("generated"), std::string::npos) << message;

  overrides.set = {"methods=[{name=\"x\", learning={sampler=\"nonesuch\"}}]"};
  scenario = LoadScenario(path, overrides);
  ASSERT_FALSE(scenario.ok());
  message = scenario.status().message();
  EXPECT_EQ(message.rfind("--set methods=[{name=\"x\", learning={sampler=\"nonesuch\"}}]: "
                          "'learning.sampler' = 'nonesuch' must be one of",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("(method 'x')"), std::string::npos) << message;

  overrides.set = {"node.learning.nonesuch=1"};
  scenario = LoadScenario(path, overrides);
  ASSERT_FALSE(scenario.ok());
  message = scenario.status().message();
  EXPECT_EQ(message.rfind("--set node.learning.nonesuch=1: unknown key 'learning.nonesuch'", 0), 0u)
      << message;
}

// A 4-node scenario of `dataset` with `data_keys` added to its [data] section, in a file of the
// running test's own.
Result<Scenario> WithData(const std::string& dataset, const std::string& data_keys) {
  std::string path = meshlearn::testing::TestOwnPath("scenario_data.toml");
  std::ofstream(path) << "name = \"data\"\n[data]\ndataset = \"" << dataset << "\"\nclients = 4\n"
                      << data_keys << "[node.model]\narchitecture = \"linear\"\n";
  return LoadScenario(path, {});
}

TEST(ScenarioData, PixelRangeIsReadForImagesAndRefusedWithoutPixels) {
  auto unset = WithData("fashion-mnist", "");
  ASSERT_TRUE(unset.ok()) << unset.status().ToString();
  EXPECT_EQ(unset->data.partition.pixel_range, training::PixelRange::kUnit);
  auto symmetric = WithData("fashion-mnist", "pixel_range = \"symmetric\"\n");
  ASSERT_TRUE(symmetric.ok()) << symmetric.status().ToString();
  EXPECT_EQ(symmetric->data.partition.pixel_range, training::PixelRange::kSymmetric);
  auto unknown = WithData("fashion-mnist", "pixel_range = \"0-255\"\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().ToString().find("must be one of \"unit\", \"symmetric\""),
            std::string::npos)
      << unknown.status().ToString();
  auto synthetic = WithData("synthetic", "pixel_range = \"symmetric\"\n");
  ASSERT_FALSE(synthetic.ok());
  EXPECT_NE(synthetic.status().ToString().find("pixel_range applies to image datasets"),
            std::string::npos)
      << synthetic.status().ToString();
}

TEST(ScenarioData, InterpolationDefaultsToBilinearAndNamesItsChoicesWhenWrong) {
  auto unset = WithData("fashion-mnist", "");
  ASSERT_TRUE(unset.ok()) << unset.status().ToString();
  EXPECT_EQ(unset->data.partition.interpolation, training::Interpolation::kBilinear);
  auto nearest = WithData("fashion-mnist", "interpolation = \"nearest\"\n");
  ASSERT_TRUE(nearest.ok()) << nearest.status().ToString();
  EXPECT_EQ(nearest->data.partition.interpolation, training::Interpolation::kNearest);
  auto unknown = WithData("fashion-mnist", "interpolation = \"bicubic\"\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().ToString().find("must be one of \"bilinear\", \"nearest\""),
            std::string::npos)
      << unknown.status().ToString();
}

TEST(ScenarioData, TheTestSetIsPerNodeByDefaultAndItsBadValuesAreRefused) {
  auto unset = WithData("fashion-mnist", "");
  ASSERT_TRUE(unset.ok()) << unset.status().ToString();
  EXPECT_EQ(unset->data.test, TestSet::kPerNode);
  auto cluster = WithData("fashion-mnist", "test = \"cluster\"\n");
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_EQ(cluster->data.test, TestSet::kCluster);
  auto unknown = WithData("fashion-mnist", "test = \"full\"\n");
  ASSERT_FALSE(unknown.ok());
  for (const char* said :
       {"scenario_data.toml:5: 'data.test' = ", "must be one of \"per-node\", \"cluster\""}) {
    EXPECT_NE(unknown.status().ToString().find(said), std::string::npos)
        << unknown.status().ToString();
  }
  auto synthetic = WithData("synthetic", "test = \"cluster\"\n");
  ASSERT_FALSE(synthetic.ok());
  EXPECT_NE(synthetic.status().ToString().find(
                "[data] test = \"cluster\" needs a test pool to test on, and \"synthetic\" has "
                "none"),
            std::string::npos)
      << synthetic.status().ToString();
}

// The node configs of every method of `scenario`: nodes "0", "1", "2" and "10" of two clusters,
// the first an attacker, each knowing all others; with [security] when `secure`.
std::vector<node::NodeConfig> ConfigsOf(const Scenario& scenario, bool secure) {
  const std::vector<std::pair<std::string, int>> clusters = {
      {"0", 0}, {"1", 1}, {"2", 0}, {"10", 1}};
  std::vector<node::NodeConfig> configs;
  for (const MethodSpec& method : scenario.methods) {
    for (size_t i = 0; i < clusters.size(); ++i) {
      std::vector<node::PeerAddress> peers;
      for (size_t k = 0; k < clusters.size(); ++k) {
        if (k == i) continue;
        node::PeerAddress peer{clusters[k].first, "tcp://127.0.0.1:" + std::to_string(20000 + k)};
        if (secure) peer.public_key = std::string(40, 'a');
        peers.push_back(peer);
      }
      std::optional<node::SecuritySection> security;
      if (secure) security = node::SecuritySection{"/keys/node.key", {}, "/keys/allowed_keys"};
      auto config = MakeNodeConfig(
          scenario, method, clusters[i].first, "tcp://127.0.0.1:" + std::to_string(20000 + i),
          "/shards/x.shard", "/out/node-" + clusters[i].first, peers, clusters, security,
          /*attacker=*/i == 0);
      EXPECT_TRUE(config.ok()) << scenario.file << " " << method.name << ": "
                               << config.status().ToString();
      if (config.ok()) configs.push_back(std::move(*config));
    }
  }
  return configs;
}

// The launcher writes node configs with the node's own key writer; every shipped scenario's
// configs must read back, with the node's own parser, to the very config the launcher built (and
// write again to the same bytes).
TEST(ScenarioNodeConfigs, EveryShippedScenariosConfigsReadBackEqual) {
  std::vector<std::string> files = {std::string(MESHLEARN_SOURCE_DIR) + "/configs/quickstart.toml"};
  for (const auto& entry : std::filesystem::directory_iterator(std::string(MESHLEARN_SOURCE_DIR) +
                                                               "/configs/scenarios")) {
    files.push_back(entry.path().string());
  }
  size_t checked = 0;
  for (const std::string& file : files) {
    auto scenario = LoadScenario(file, {});
    ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
    for (bool secure : {false, true}) {
      for (const node::NodeConfig& config : ConfigsOf(*scenario, secure)) {
        const std::string text = node::RenderNodeConfig(config);
        auto again = node::ParseNodeConfig(text, "node.toml");
        ASSERT_TRUE(again.ok()) << file << ": " << again.status().ToString() << "\n" << text;
        EXPECT_EQ(*again, config) << file << "\n" << text;
        EXPECT_EQ(node::RenderNodeConfig(*again), text) << file;
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, files.size() * 8);
}

// A scenario's node keys reach the config as a node config file with the same keys would give
// them: the template's, a method's overrides, the oracle's clusters in node id order, and the
// attack kind for attackers only.
TEST(ScenarioNodeConfigs, TheConfigIsTheOneAFileWithTheSameKeysReadsTo) {
  const std::string path = ::testing::TempDir() + "/node_configs.toml";
  std::ofstream(path) << "name = \"configs\"\n[data]\ndataset = \"synthetic\"\nclients = 4\n"
                         "[node.model]\narchitecture = \"linear\"\n"
                         "[node.training]\nrounds = 7\nlearning_rate = 0.1\n"
                         "[node.attack]\nkind = \"sign_flip\"\nfraction = 0.25\n"
                         "[[methods]]\nname = \"oracle\"\n"
                         "learning = { sampler = \"oracle\", tau = 12.5 }\n"
                         "round = { max_protocol_version = 2 }\n";
  auto scenario = LoadScenario(path, {});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  const std::vector<std::pair<std::string, int>> clusters = {
      {"0", 0}, {"1", 1}, {"2", 0}, {"10", 1}};
  auto built = MakeNodeConfig(*scenario, scenario->methods[0], "2", "tcp://127.0.0.1:9002",
                              "/shards/client-2.shard", "/out/node-2",
                              {{"0", "tcp://127.0.0.1:9000"}, {"10", "tcp://127.0.0.1:9010"}},
                              clusters, std::nullopt, /*attacker=*/false);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  auto expected = node::ParseNodeConfig(R"(id = "2"
listen = "tcp://127.0.0.1:9002"
seed = 1
output_dir = "/out/node-2"
[data]
shard = "/shards/client-2.shard"
[model]
architecture = "linear"
[training]
rounds = 7
learning_rate = 0.1
[learning]
sampler = "oracle"
tau = 12.5
[learning.clusters]
"0" = 0
"1" = 1
"2" = 0
"10" = 1
[round]
max_protocol_version = 2
[[peers]]
id = "0"
address = "tcp://127.0.0.1:9000"
[[peers]]
id = "10"
address = "tcp://127.0.0.1:9010"
)",
                                        "expected.toml");
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  EXPECT_EQ(*built, *expected) << node::RenderNodeConfig(*built);

  auto attacker = MakeNodeConfig(*scenario, scenario->methods[0], "0", "tcp://127.0.0.1:9000",
                                 "/shards/client-0.shard", "/out/node-0",
                                 {{"2", "tcp://127.0.0.1:9002"}}, clusters, std::nullopt,
                                 /*attacker=*/true);
  ASSERT_TRUE(attacker.ok()) << attacker.status().ToString();
  EXPECT_EQ(attacker->attack.kind, node::AttackKind::kSignFlip);
}

// The node config's rules between keys name the scenario file and the method.
TEST(ScenarioNodeConfigs, ARuleBetweenKeysNamesTheScenarioAndTheMethod) {
  const std::string path = ::testing::TempDir() + "/node_configs_rule.toml";
  std::ofstream(path) << "name = \"rule\"\n[data]\ndataset = \"synthetic\"\nclients = 4\n"
                         "[node.model]\narchitecture = \"linear\"\n"
                         "[[methods]]\nname = \"emd\"\nlearning = { metric = \"emd\" }\n";
  auto scenario = LoadScenario(path, {});
  ASSERT_FALSE(scenario.ok());
  EXPECT_EQ(scenario.status().message().rfind(path + " (method 'emd'): metric \"emd\"", 0), 0u)
      << scenario.status().message();
}

}  // namespace
}  // namespace meshlearn::launch
