// The fault fuzzer (meshlearn-launch fuzz, tools/fuzz/fuzz.h): its scenarios are a function of
// the seed and load as ordinary scenario files, a few seeds keep every invariant over the real
// simulator, and the canary's planted bug is caught.
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "node/host/node_files.h"
#include "node/host/outputs.h"
#include "tests/fresh_dir.h"
#include "tools/fuzz/fuzz.h"
#include "tools/fuzz/fuzz_invariants.h"
#include "tools/fuzz/fuzz_scenario.h"
#include "tools/scenario/scenario_file.h"
#include "training/model.h"

namespace meshlearn::launch {
namespace {

TEST(FuzzScenario, IsAFunctionOfTheSeedWithinItsBounds) {
  int small = 0, one_way = 0, symmetric = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    FuzzScenario s = DrawScenario(seed);
    EXPECT_EQ(ScenarioToml(s), ScenarioToml(DrawScenario(seed)));
    EXPECT_GE(s.nodes, 3);
    EXPECT_LE(s.nodes, 40);
    EXPECT_GE(s.rounds, 5);
    EXPECT_LE(s.rounds, 60);
    small += s.nodes <= 10;
    for (const FuzzPartition& p : s.partitions) {
      EXPECT_LE(p.to_round, s.rounds) << "heals";
      (p.one_way ? one_way : symmetric) += 1;
    }
    for (const FuzzOutage& o : s.outages) {
      if (o.pause) {
        EXPECT_GT(o.seconds, s.round_deadline_s) << "longer than the deadline";
      }
    }
  }
  EXPECT_GT(small, 150) << "biased to small meshes";
  EXPECT_GT(one_way, 10);
  EXPECT_GT(symmetric, 10);
  EXPECT_NE(ScenarioToml(DrawScenario(1)), ScenarioToml(DrawScenario(2)));
}

TEST(FuzzScenario, LimitsLeaveTheOtherDrawsAlone) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    FuzzScenario full = DrawScenario(seed);
    FuzzLimits limits;
    limits.nodes = 3;
    limits.kinds = std::set<FaultKind>{FaultKind::kLoss};
    FuzzScenario small = DrawScenario(seed, limits);
    EXPECT_EQ(small.nodes, 3);
    EXPECT_EQ(small.rounds, full.rounds);
    EXPECT_EQ(small.sampler, full.sampler);
    EXPECT_EQ(small.loss, full.loss);
    EXPECT_TRUE(small.outages.empty() && small.partitions.empty() && small.corrupt == 0);
  }
}

// A seed's node settings are a value; the scenario file it writes reads back to that value.
TEST(FuzzScenario, TheScenarioFileReadsBackToTheDrawnNodeSettings) {
  const std::string path = ::testing::TempDir() + "/fuzz_node_settings.toml";
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const FuzzScenario s = DrawScenario(seed);
    std::ofstream(path) << ScenarioToml(s);
    auto scenario = LoadScenario(path, {});
    ASSERT_TRUE(scenario.ok()) << "seed " << seed << ": " << scenario.status().ToString();
    ASSERT_EQ(scenario->methods.size(), 1u);
    EXPECT_EQ(scenario->methods[0].node_keys, NodeSettings(s)) << "seed " << seed;
  }
}

TEST(FuzzScenario, DrawsTheDataExchangingMethodsAndTopkWithWhatTheyNeed) {
  std::map<std::string, int> drawn;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    FuzzScenario s = DrawScenario(seed);
    const std::string toml = ScenarioToml(s);
    const std::string sampler(NameOf(topology::SamplerKindNames(), s.sampler));
    const std::string method =
        s.sampler == topology::SamplerKind::kDac
            ? sampler + "/" + std::string(NameOf(similarity::MetricKindNames(), s.metric))
            : sampler;
    drawn[method] += 1;
    drawn[std::string(NameOf(CompressionCodecNames(), s.codec))] += 1;
    const bool emd = method == "emd_cluster" || method == "dac/emd";
    const bool signatures = method == "centroid_cluster" || method == "dac/centroid";
    EXPECT_EQ(toml.find("[node.emd]") != std::string::npos, emd) << "seed " << seed;
    EXPECT_EQ(toml.find("[node.signature]") != std::string::npos, signatures) << "seed " << seed;
    if (emd || signatures) {
      EXPECT_EQ(NodeSettings(s).model.architecture, training::Architecture::kMlp)
          << "seed " << seed;
    }
  }
  for (const char* wanted :
       {"emd_cluster", "dac/emd", "centroid_cluster", "dac/centroid", "topk"}) {
    EXPECT_GT(drawn[wanted], 5) << wanted;
  }
}

TEST(FuzzScenario, EveryDrawnScenarioLoadsAsAScenarioFile) {
  const std::string dir = meshlearn::testing::FreshTestDir("fuzz");
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const std::string path = dir + "/scenario.toml";
    std::ofstream(path) << ScenarioToml(DrawScenario(seed));
    auto scenario = LoadScenario(path, {});
    ASSERT_TRUE(scenario.ok()) << "seed " << seed << ": " << scenario.status().ToString();
  }
}

TEST(FuzzScenario, FaultListsReadBack) {
  auto kinds = ParseFaultKinds("loss,death");
  ASSERT_TRUE(kinds.ok());
  EXPECT_EQ(FaultKindList(*kinds), "loss,death");
  EXPECT_EQ(FaultKindList(*ParseFaultKinds("none")), "none");
  auto bad = ParseFaultKinds("loss,fire");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'fire'"), std::string::npos);
}

// Seeds 1 to 3, at most `nodes` nodes and `rounds` rounds, into a fresh folder, not reduced.
FuzzOptions FirstSeeds(int nodes, int64_t rounds) {
  FuzzOptions options;
  options.out_dir = meshlearn::testing::FreshTestDir("fuzz");
  options.from = 1;
  options.seeds = 3;
  options.limits.nodes = nodes;
  options.limits.rounds = rounds;
  options.reduce = false;
  return options;
}

// A handful of seeds over the real simulator keep every invariant; seed 2 also runs twice for
// determinism. The passing seeds' folders are deleted.
TEST(Fuzz, AHandfulOfSeedsKeepEveryInvariant) {
  FuzzOptions options = FirstSeeds(6, 8);
  options.determinism_every = 2;
  FuzzSummary summary = Fuzz(options);
  EXPECT_EQ(summary.seeds, 3u);
  EXPECT_EQ(summary.failed, 0u);
  EXPECT_EQ(summary.determinism_checks, 1u);
  EXPECT_EQ(summary.invariant_checks, 3 * (InvariantNames().size() - 1) + 1);
  // Only the summary is left: the seeds, their size, the faults injected, the invariants.
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(options.out_dir)) {
    left.push_back(entry.path().filename().string());
  }
  EXPECT_EQ(left, std::vector<std::string>{"fuzz.csv"});
  std::ifstream in(options.out_dir + "/fuzz.csv");
  std::string csv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* row : {"seeds,3\n", "seeds_per_hour,", "mean_nodes,", "mean_rounds,",
                          "invariant_counters-balance,checked", "injected_death,"}) {
    EXPECT_NE(csv.find(row), std::string::npos) << row << " in\n" << csv;
  }
  EXPECT_GT(summary.faults["death"], 0u) << "seeds 1 to 3 draw a death";
}

// A report whose every node ran cleanly, with a balanced ledger.
FuzzRunReport CleanReport() {
  FuzzRunReport report;
  report.ledger.sent = 10;
  report.ledger.received = 7;
  report.ledger.lost = 2;
  report.ledger.dropped = 1;
  report.faults["lost"] = 2;
  return report;
}

bool Breaks(const std::vector<Violation>& violations, const std::string& invariant) {
  for (const Violation& v : violations) {
    if (v.invariant == invariant) return true;
  }
  return false;
}

// checkpoint-agrees accepts a torn checkpoint that a restart refused (the node restarted clean),
// and fails when a restart loaded one as if it were whole.
TEST(FuzzInvariants, ATornCheckpointLoadedAtARestartBreaksCheckpointAgrees) {
  FuzzScenario s = DrawScenario(1);
  FuzzRunReport refused = CleanReport();
  refused.faults["checkpoint_torn"] = 1;
  refused.faults["torn_refused"] = 1;
  EXPECT_FALSE(Breaks(CheckRun(s, refused), kCheckpointAgrees));
  FuzzRunReport loaded = refused;
  loaded.faults["torn_refused"] = 0;
  loaded.faults["torn_loaded"] = 1;
  EXPECT_TRUE(Breaks(CheckRun(s, loaded), kCheckpointAgrees));
}

// counters-balance fails when a message has no fate, two fates, or when the network and the
// fault model disagree on how many were lost or copied; an interrupted run is not balanced yet.
TEST(FuzzInvariants, AMessageWithoutItsFateBreaksCountersBalance) {
  FuzzScenario s = DrawScenario(1);
  EXPECT_FALSE(Breaks(CheckRun(s, CleanReport()), kCountersBalance));
  FuzzRunReport vanished = CleanReport();
  vanished.ledger.sent = 11;
  EXPECT_TRUE(Breaks(CheckRun(s, vanished), kCountersBalance));
  FuzzRunReport twice = CleanReport();
  twice.ledger.received_bytes = 5;
  EXPECT_TRUE(Breaks(CheckRun(s, twice), kCountersBalance));
  FuzzRunReport model = CleanReport();
  model.faults["duplicated"] = 1;
  EXPECT_TRUE(Breaks(CheckRun(s, model), kCountersBalance));
  vanished.interrupted = true;
  EXPECT_FALSE(Breaks(CheckRun(s, vanished), kCountersBalance));
}

// counters-balance also fails when a node's byte totals in rounds.csv fall from one row to the
// next (a restart that counted from zero again).
TEST(FuzzInvariants, ByteTotalsThatFallAfterARestartBreakCountersBalance) {
  FuzzScenario s = DrawScenario(1);
  const std::string dir = meshlearn::testing::FreshTestDir("fuzz");
  FuzzRunReport report = CleanReport();
  report.nodes.push_back({"n0", dir, "", {}});
  const auto rows_with = [&](int second_bytes_out) {
    std::ofstream(dir + "/" + node::kRoundsFile)
        << node::RoundsCsvHeader() << "\n0,1,0.5,0.5,0.9,,,2,2,100,100,0,0.1,0.1,1,,a;b\n"
        << "1,2,0.5,0.5,0.9,,,2,2,150," << second_bytes_out << ",0,0.1,0.1,1,,a;b\n";
  };
  rows_with(160);
  EXPECT_FALSE(Breaks(CheckRun(s, report), kCountersBalance));
  rows_with(40);
  EXPECT_TRUE(Breaks(CheckRun(s, report), kCountersBalance));
}

// memory-bound: a run may grow by kMemoryBaseMib + kMemoryPerNodeMib per node, not more.
TEST(FuzzInvariants, MemoryAboveTheBoundPerNodeBreaksMemoryBound) {
  FuzzScenario s = DrawScenario(1);
  FuzzRunReport report = CleanReport();
  report.memory_growth_mib = kMemoryBaseMib + kMemoryPerNodeMib * s.nodes;
  EXPECT_FALSE(Breaks(CheckRun(s, report), kMemoryBound));
  report.memory_growth_mib += 1;
  EXPECT_TRUE(Breaks(CheckRun(s, report), kMemoryBound));
}

// The canary (a restarted node drops one rounds.csv row too many) is caught by rounds-contiguous
// within 3 seeds, and the failing seed's folder is kept with a replay line naming the canary.
TEST(FuzzCanary, IsCaughtWithinThreeSeeds) {
  FuzzOptions options = FirstSeeds(5, 5);
  options.canary = true;
  options.determinism_every = 0;
  FuzzSummary summary = Fuzz(options);
  ASSERT_EQ(summary.fastest.count(kRoundsContiguous), 1u);
  const uint64_t seed = summary.fastest.at(kRoundsContiguous).seed;
  EXPECT_TRUE(std::filesystem::exists(options.out_dir + "/seed-" + std::to_string(seed)));
  EXPECT_NE(ReplayCommand(seed, options).find("--canary"), std::string::npos);
}

}  // namespace
}  // namespace meshlearn::launch
