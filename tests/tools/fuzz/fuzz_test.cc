// The fault fuzzer (meshlearn-launch fuzz, tools/fuzz/fuzz.h): its scenarios are a function of
// the seed and load as ordinary scenario files, a few seeds keep every invariant over the real
// simulator, and the canary's planted bug is caught.
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "base/stable_hash.h"
#include "node/host/node_files.h"
#include "node/host/outputs.h"
#include "tests/fresh_dir.h"
#include "tools/fuzz/fuzz.h"
#include "tools/fuzz/fuzz_invariants.h"
#include "tools/fuzz/fuzz_scenario.h"
#include "tools/layout/run_layout.h"
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

// The StableHash chain of seeds 1 to 60's scenario files as main's build wrote them at edd252e,
// before plug-ins were drawn (meshlearn-launch fuzz --replay S for each, scenario.toml).
constexpr uint64_t kMainScenarioDigest = 0x61a05c83c0b30111ull;

// The names of the plug-ins a seed drew, each followed by a space ("" for none).
std::string PlugInsOf(const FuzzScenario& s) {
  std::string names;
  for (FuzzPlugIn p : {s.metric_plugin, s.merge_plugin}) {
    if (p != FuzzPlugIn::kNone) names += std::string(NameOf(FuzzPlugInNames(), p)) + " ";
  }
  return names;
}

// A fifth of the seeds draw plug-ins, every one of them in some seeds, a metric only for DAC
// with a metric computed from the models; turning the plug-ins off gives each seed the scenario
// it drew before plug-ins were drawn: the digest of seeds 1 to 60's files is the one main's
// build wrote at edd252e (the same 60 files, byte for byte), and a seed without a plug-in writes
// the same file either way.
TEST(FuzzScenario, AFifthOfTheSeedsDrawPlugInsAndTheOthersAreUnchanged) {
  uint64_t digest = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    FuzzLimits off;
    off.plugins = false;
    digest = StableHash(ScenarioToml(DrawScenario(seed, off)), digest);
  }
  EXPECT_EQ(digest, kMainScenarioDigest) << "seeds 1 to 60 without plug-ins";
  std::map<FuzzPlugIn, int> drawn;
  int with_plugin = 0;
  for (uint64_t seed = 1; seed <= 1000; ++seed) {
    const FuzzScenario s = DrawScenario(seed);
    FuzzLimits off;
    off.plugins = false;
    const FuzzScenario without = DrawScenario(seed, off);
    if (PlugInsOf(s).empty()) {
      EXPECT_EQ(ScenarioToml(s), ScenarioToml(without)) << "seed " << seed;
      continue;
    }
    ++with_plugin;
    for (FuzzPlugIn p : {s.metric_plugin, s.merge_plugin}) drawn[p] += 1;
    const std::string toml = ScenarioToml(s);
    if (s.metric_plugin != FuzzPlugIn::kNone) {
      EXPECT_EQ(s.sampler, topology::SamplerKind::kDac) << "seed " << seed;
      EXPECT_NE(without.metric, similarity::MetricKind::kEmd) << "seed " << seed;
      EXPECT_NE(without.metric, similarity::MetricKind::kCentroid) << "seed " << seed;
      EXPECT_NE(toml.find("metric_path = '" + PlugInFile(s, s.metric_plugin) + "'"),
                std::string::npos)
          << toml;
    }
    if (s.merge_plugin != FuzzPlugIn::kNone) {
      EXPECT_NE(toml.find("merge_path = '" + PlugInFile(s, s.merge_plugin) + "'"),
                std::string::npos)
          << toml;
    }
    // Only the plug-ins differ.
    FuzzScenario same = s;
    same.metric = without.metric;
    same.metric_plugin = same.merge_plugin = FuzzPlugIn::kNone;
    EXPECT_EQ(ScenarioToml(same), ScenarioToml(without)) << "seed " << seed;
    EXPECT_TRUE(CheckPlugInFiles(s).ok()) << CheckPlugInFiles(s).ToString();
  }
  EXPECT_GT(with_plugin, 160) << "a fifth of 1000";
  EXPECT_LT(with_plugin, 240) << "a fifth of 1000";
  for (const std::string& name : NamesOf(FuzzPlugInNames())) {
    EXPECT_GT(drawn[*ValueNamed(FuzzPlugInNames(), name)], 3) << name;
  }
}

// A drawn plug-in whose file is missing is an error naming the seed, the file and --plugins,
// and stops a fuzz run before it runs that seed.
TEST(FuzzScenario, AMissingPlugInFileIsAClearError) {
  uint64_t seed = 1;
  while (PlugInsOf(DrawScenario(seed)).empty()) ++seed;
  const FuzzScenario s = DrawScenario(seed, {}, "/nonexistent/plugins");
  const Status missing = CheckPlugInFiles(s);
  ASSERT_EQ(missing.code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.message().find("seed " + std::to_string(seed)), std::string::npos);
  EXPECT_NE(missing.message().find("/nonexistent/plugins/"), std::string::npos);
  EXPECT_NE(missing.message().find("--plugins"), std::string::npos);
  FuzzOptions options;
  options.out_dir = meshlearn::testing::FreshTestDir("fuzz");
  options.from = seed;
  options.seeds = 3;
  options.plugin_dir = "/nonexistent/plugins";
  options.reduce = false;
  const FuzzSummary summary = Fuzz(options);
  EXPECT_EQ(summary.error, missing.message());
  EXPECT_EQ(summary.seeds, 0u) << "no seed ran";
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

// The lines of the nodes' logs of the run in `dir` (RunSeed's folder) that name a plug-in's
// file: the start-up lines that say a node runs it, and the others (its faults).
struct LinesNaming {
  int start = 0;
  std::vector<std::string> faults;
};
LinesNaming LogLinesNaming(const std::string& dir, const std::string& file) {
  LinesNaming found;
  auto report = ReadRunReport(PathIn(dir, kFuzzReportFile));
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  if (!report.ok()) return found;
  for (const FuzzNodeEnd& n : report->nodes) {
    std::ifstream in(n.dir + "/" + node::kNodeLogFile);
    std::string line;
    while (std::getline(in, line)) {
      if (line.find(file) == std::string::npos) continue;
      if (line.find("plug-in [") != std::string::npos) {
        ++found.start;
      } else {
        found.faults.push_back(line);
      }
    }
  }
  return found;
}

// The first seeds that draw each plug-in, through the fuzzer's seed runner (5 nodes, 8 rounds):
// every invariant holds, every node says it runs the plug-in, and a misbehaving plug-in's faults
// are error lines naming its file (a peer or a round lost, never a crash) while a worked example
// has none; a seed with a misbehaving plug-in runs twice to the same outputs.
TEST(Fuzz, SeedsThatDrawPlugInsKeepEveryInvariant) {
  std::map<FuzzPlugIn, uint64_t> first;
  for (uint64_t seed = 1; first.size() < NamesOf(FuzzPlugInNames()).size(); ++seed) {
    const FuzzScenario s = DrawScenario(seed);
    for (FuzzPlugIn p : {s.metric_plugin, s.merge_plugin}) {
      if (p != FuzzPlugIn::kNone) first.emplace(p, seed);
    }
  }
  std::set<uint64_t> seeds;
  for (const auto& [plugin, seed] : first) seeds.insert(seed);
  FuzzLimits limits;
  limits.nodes = 5;
  limits.rounds = 8;
  const std::string dir = meshlearn::testing::FreshTestDir("fuzz");
  for (uint64_t seed : seeds) {
    const FuzzScenario s = DrawScenario(seed, limits);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + DescribeScenario(s));
    const bool twice = DrawsMisbehavingPlugIn(s);
    const std::string seed_dir = dir + "/seed-" + std::to_string(seed);
    const SeedResult r = RunSeed(s, seed_dir, {.hash_outputs = twice});
    for (const Violation& v : r.violations) ADD_FAILURE() << v.invariant << ": " << v.detail;
    for (FuzzPlugIn p : {s.metric_plugin, s.merge_plugin}) {
      if (p == FuzzPlugIn::kNone) continue;
      const std::string file = PlugInFile(s, p);
      const LinesNaming lines = LogLinesNaming(seed_dir, file);
      EXPECT_GT(lines.start, 0) << "the nodes run " << file;
      if (Misbehaves(p)) {
        EXPECT_FALSE(lines.faults.empty()) << file << " misbehaves";
      } else {
        EXPECT_TRUE(lines.faults.empty()) << lines.faults.front();
      }
    }
    if (twice) {
      const SeedResult again = RunSeed(s, dir + "/again", {.hash_outputs = true});
      EXPECT_TRUE(again.violations.empty());
      EXPECT_EQ(again.output_hash, r.output_hash) << "the same calls fail in every run";
    }
  }
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

// plugin-faults: a node.log line naming a worked example's file (but its start-up line) breaks
// it; one naming the misbehaving plug-in the scenario drew does not.
TEST(FuzzInvariants, AFaultOfAWellBehavedPlugInBreaksPlugInFaults) {
  FuzzScenario s = DrawScenario(1, {}, "/p");
  s.metric_plugin = FuzzPlugIn::kCosWeights;
  s.merge_plugin = FuzzPlugIn::kMisbehavingMerge;
  const std::string dir = meshlearn::testing::FreshTestDir("fuzz");
  FuzzRunReport report = CleanReport();
  report.nodes.push_back({"n0", dir, "", {}});
  const std::string start =
      "plug-in [learning] metric: /p/cos_weights.pt\nplug-in [learning] robust: "
      "/p/misbehaving_merge.pt\n";
  std::ofstream(dir + "/" + node::kNodeLogFile)
      << start << "round 3: merge left out, the node keeps its model this round: "
      << "/p/misbehaving_merge.pt: forward threw: builtins.RuntimeError\n";
  EXPECT_FALSE(Breaks(CheckRun(s, report), kPlugInFaults));
  std::ofstream(dir + "/" + node::kNodeLogFile, std::ios::app)
      << "round 4: could not score peer 2: /p/cos_weights.pt: forward threw\n";
  EXPECT_TRUE(Breaks(CheckRun(s, report), kPlugInFaults));
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
