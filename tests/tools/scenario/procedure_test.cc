// The scenario's `procedure` (tools/scenario/procedure.h): "paper-code" sets the authors' code's
// settings in the node configs the launcher writes, --set wins over it, the manifest's resolved
// scenario records it, and an unknown procedure is refused.
#include "tools/scenario/procedure.h"
#include "tools/scenario/scenario_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "base/atomic_file.h"

namespace meshlearn::launch {
namespace {

const std::string kScenarios = std::string(MESHLEARN_SOURCE_DIR) + "/configs/scenarios/";

// Shipped scenario `file` loaded with `set` (--set assignments).
Result<Scenario> Shipped(const std::string& file, const std::vector<std::string>& set) {
  ScenarioOverrides overrides;
  overrides.set = set;
  return LoadScenario(kScenarios + file, overrides);
}

// The node config of node "1" (cluster 0) of `method` of `scenario`.
node::NodeConfig ConfigOf(const Scenario& scenario, const MethodSpec& method) {
  auto config = MakeNodeConfig(scenario, method, "1", "tcp://127.0.0.1:9001", "/s.shard", "/out",
                               {{"2", "tcp://127.0.0.1:9002"}}, {{"1", 0}, {"2", 0}}, std::nullopt);
  EXPECT_TRUE(config.ok()) << method.name << ": " << config.status().ToString();
  return config.ok() ? *config : node::NodeConfig{};
}

// Each method's τ, by name.
std::map<std::string, double> TauOf(const Scenario& scenario) {
  std::map<std::string, double> tau;
  for (const MethodSpec& m : scenario.methods) tau[m.name] = ConfigOf(scenario, m).learning.tau;
  return tau;
}

TEST(Procedure, PaperCodeRendersTheAuthorsSettingsIntoEveryNodeConfig) {
  // A scenario file that names the procedure at its top.
  auto text = ReadWholeFile(kScenarios + "fmnist-covariate.toml");
  ASSERT_TRUE(text.ok());
  const std::string path = ::testing::TempDir() + "/paper_code.toml";
  std::ofstream(path) << "procedure = \"paper-code\"\n" << *text;
  auto scenario = LoadScenario(path, {});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  EXPECT_EQ(scenario->procedure, Procedure::kPaperCode);
  EXPECT_EQ(scenario->data.test, TestSet::kCluster);
  EXPECT_EQ(scenario->data.partition.pool_split, training::PoolSplit::kFixed);
  EXPECT_EQ(scenario->schedule, sim::ExchangeSchedule::kSequential);
  for (const MethodSpec& method : scenario->methods) {
    const node::NodeConfig config = ConfigOf(*scenario, method);
    const std::string rendered = node::RenderNodeConfig(config);
    EXPECT_NE(rendered.find("two_hop = 'smallest'"), std::string::npos) << rendered;
    EXPECT_NE(rendered.find("two_hop_row = 'direct'"), std::string::npos) << rendered;
    EXPECT_EQ(config.round.resting, node::RestingRule::kSilent) << method.name;
  }
  // The authors' runs used tau 10 for L2 with FedSim (Table 8: 30); the other τ are Table 8's.
  const auto tau = TauOf(*scenario);
  EXPECT_EQ(tau.at("inv_l2 FedSim"), 10);
  EXPECT_EQ(tau.at("inv_l2"), 10);
  EXPECT_EQ(tau.at("cos_weights"), 2000);
  EXPECT_EQ(tau.at("cos_grad FedSim"), 300);
  // The replaced value is reported; the resolved scenario (the manifest's) records the settings.
  ASSERT_EQ(scenario->procedure_notes.size(), 1u);
  EXPECT_NE(scenario->procedure_notes[0].find(
                "('inv_l2 FedSim') learning.tau = 10 (the file gave 30; test_multiple.py:111-113)"),
            std::string::npos)
      << scenario->procedure_notes[0];
  // (A setting that changes no value, such as resting = "silent", the default, has nothing to
  // record.)
  for (const char* recorded :
       {"procedure = 'paper-code'", "two_hop = 'smallest'", "two_hop_row = 'direct'",
        "stopped_serves = 'last'", "tau = 2000", "test = 'cluster'", "pool_split = 'fixed'",
        "loss_mean = 'batches'"}) {
    EXPECT_NE(scenario->resolved.find(recorded), std::string::npos) << recorded << "\n"
                                                                    << scenario->resolved;
  }
}

// The authors' Random is their Oracle's exchange with delusion -1 (run_experiment.py:483), so it
// merges a stopped peer's last model too; DAC methods keep the best.
TEST(Procedure, PaperCodeMakesOracleAndRandomStoppedNodesServeTheirLastModel) {
  auto scenario = Shipped("fmnist-covariate.toml", {"procedure=paper-code"});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  std::vector<std::string> last;
  for (const MethodSpec& method : scenario->methods) {
    const node::NodeConfig config = ConfigOf(*scenario, method);
    if (config.training.stopped_serves == node::StoppedServes::kLast) last.push_back(method.name);
  }
  EXPECT_EQ(last, (std::vector<std::string>{"oracle", "random"}));
  auto plain = Shipped("fmnist-covariate.toml", {});
  ASSERT_TRUE(plain.ok());
  for (const MethodSpec& method : plain->methods) {
    EXPECT_EQ(ConfigOf(*plain, method).training.stopped_serves, node::StoppedServes::kBest);
  }
  // --set wins, as for every key of the preset.
  auto kept = Shipped("fmnist-covariate.toml",
                      {"procedure=paper-code", "node.training.stopped_serves=best"});
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  for (const MethodSpec& method : kept->methods) {
    EXPECT_EQ(ConfigOf(*kept, method).training.stopped_serves, node::StoppedServes::kBest);
  }
}

TEST(Procedure, PaperCodeGivesTheDomainShiftCnnTheAuthorsTauOnly) {
  auto cnn = Shipped("fmnist-mnist-domain-cnn.toml", {"procedure=paper-code"});
  ASSERT_TRUE(cnn.ok()) << cnn.status().ToString();
  const auto tau = TauOf(*cnn);
  EXPECT_EQ(tau.at("cos_grad"), 2000);
  EXPECT_EQ(tau.at("cos_weights"), 2000);
  EXPECT_EQ(tau.at("inv_l2"), 30);
  EXPECT_EQ(tau.at("cos_grad FedSim"), 100);
  EXPECT_EQ(tau.at("cos_weights FedSim"), 300);
  EXPECT_EQ(tau.at("inv_loss"), 1);        // the same in both
  EXPECT_EQ(tau.at("inv_l2 FedSim"), 30);  // the same in both
  // The MLP's runs used other τ, which the preset does not claim to know.
  auto mlp = Shipped("fmnist-mnist-domain-mlp.toml", {"procedure=paper-code"});
  ASSERT_TRUE(mlp.ok()) << mlp.status().ToString();
  auto table8 = Shipped("fmnist-mnist-domain-mlp.toml", {});
  ASSERT_TRUE(table8.ok()) << table8.status().ToString();
  EXPECT_EQ(TauOf(*mlp), TauOf(*table8));
}

TEST(Procedure, AKeyGivenWithSetWinsOverThePreset) {
  auto scenario =
      Shipped("fmnist-covariate.toml", {"procedure=paper-code", "node.learning.two_hop=largest",
                                        "data.test=per-node", "node.learning.tau=50"});
  ASSERT_TRUE(scenario.ok()) << scenario.status().ToString();
  EXPECT_EQ(scenario->data.test, TestSet::kPerNode);
  const node::NodeConfig config = ConfigOf(*scenario, scenario->methods[0]);
  EXPECT_EQ(config.learning.two_hop, topology::TwoHopRule::kLargest);
  EXPECT_EQ(config.learning.two_hop_row, topology::TwoHopRow::kDirect);  // still the preset's
  // node.learning.tau from --set: the preset leaves every method's τ as the file gives it.
  EXPECT_EQ(TauOf(*scenario).at("inv_l2 FedSim"), 30);
}

TEST(Procedure, TheDefaultChangesNothing) {
  auto plain = Shipped("fmnist-covariate.toml", {});
  auto named = Shipped("fmnist-covariate.toml", {"procedure=meshlearn"});
  ASSERT_TRUE(plain.ok() && named.ok());
  EXPECT_EQ(plain->procedure, Procedure::kMeshlearn);
  EXPECT_EQ(plain->data.test, TestSet::kPerNode);
  EXPECT_TRUE(named->procedure_notes.empty());
  for (size_t i = 0; i < plain->methods.size(); ++i) {
    EXPECT_EQ(ConfigOf(*plain, plain->methods[i]), ConfigOf(*named, named->methods[i]));
  }
  EXPECT_EQ(ConfigOf(*plain, plain->methods[0]).learning.two_hop, topology::TwoHopRule::kLargest);
}

TEST(Procedure, WithoutATestPoolTheDataKeysKeepTheirDefaults) {
  auto synthetic = Shipped("synthetic.toml", {"procedure=paper-code"});
  ASSERT_TRUE(synthetic.ok()) << synthetic.status().ToString();
  EXPECT_EQ(synthetic->data.test, TestSet::kPerNode);
  EXPECT_EQ(synthetic->data.partition.pool_split, training::PoolSplit::kPerSeed);
  EXPECT_EQ(ConfigOf(*synthetic, synthetic->methods[0]).learning.two_hop,
            topology::TwoHopRule::kSmallest);
}

TEST(Procedure, AnUnknownProcedureIsRefusedWithTheKnownOnes) {
  auto scenario = Shipped("fmnist-covariate.toml", {"procedure=paper"});
  ASSERT_FALSE(scenario.ok());
  const std::string message = scenario.status().ToString();
  EXPECT_NE(message.find("--set procedure=paper"), std::string::npos) << message;
  EXPECT_NE(message.find("must be one of \"meshlearn\", \"paper-code\""), std::string::npos)
      << message;
}

}  // namespace
}  // namespace meshlearn::launch
