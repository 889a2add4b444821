// Poisoning peers against real nodes through the launcher (issue 8, "Hostile peers" and
// "Poisoned majority"): sign-flipped or noise models end with near-zero sampling probability at
// every honest node, and honest nodes keep their test metric.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "tests/e2e/e2e_support.h"
#include "tools/plot/matrix_csv.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

// Runs configs/scenarios/poison-majority.toml with `sets`, in-process (or as `mode` says);
// returns the output folder.
std::string RunPoisonScenario(const std::string& name, const std::vector<std::string>& sets,
                              const std::string& mode = "--in-process") {
  std::string out = ::testing::TempDir() + "/e2e_poison_" + name;
  std::filesystem::remove_all(out);
  std::filesystem::remove(out + ".log");  // beside the run folder, which must start empty
  std::filesystem::create_directories(out);
  std::vector<std::string> args = {
      MESHLEARN_LAUNCH_BIN,
      std::string(MESHLEARN_SOURCE_DIR) + "/configs/scenarios/poison-majority.toml", "--out", out,
      mode};
  for (const std::string& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  auto launcher = ChildProcess::Start(args, out + ".log");
  EXPECT_TRUE(launcher.has_value());
  if (launcher) {
    EXPECT_TRUE(ExitedWith(launcher->Wait(seconds(900)), 0)) << ReadText(out + ".log");
  }
  std::printf("%s\n", ReadText(out + ".log").c_str());
  return out;
}

// The "mean" cell of the summary row of `method`.
double MeanOf(const std::string& out, const std::string& method) {
  std::istringstream summary(ReadText(out + "/summary.csv"));
  std::string header, row;
  std::getline(summary, header);
  while (std::getline(summary, row)) {
    if (row.rfind("\"" + method + "\"", 0) == 0) {
      return SummaryCell(header, row, "mean").value_or(NAN);
    }
  }
  ADD_FAILURE() << "no summary row for " << method;
  return NAN;
}

// One attacker per cluster of 10 (fraction 0.1: nodes 0 and 10), 20 rounds of cos_weights DAC.
class PoisoningPeer : public ::testing::TestWithParam<const char*> {};

TEST_P(PoisoningPeer, EndsBelowOnePercentAtEveryHonestNodeAndHonestNodesKeepTheirMetric) {
  std::string kind = GetParam();
  std::string out = RunPoisonScenario(
      kind, {"node.attack.kind=" + kind, "node.attack.fraction=0.1", "node.training.rounds=20",
             "methods=[{name = \"clean\", attack = {fraction = 0.0}}, {name = \"attacked\"}]"});
  const std::set<std::string> attackers = {"0", "10"};
  int honest = 0;
  for (int i = 0; i < 20; ++i) {
    std::string id = std::to_string(i);
    if (attackers.count(id)) {
      EXPECT_NE(ReadText(out + "/attacked/node-" + id + "/node.log").find("poisoned models"),
                std::string::npos)
          << "node " << id << " should be an attacker";
      continue;
    }
    ++honest;
    std::istringstream scores(ReadText(out + "/attacked/node-" + id + "/scores.csv"));
    std::string line;
    std::getline(scores, line);  // peer,score,probability
    while (std::getline(scores, line)) {
      std::string peer = line.substr(0, line.find(','));
      if (!attackers.count(peer)) continue;
      double probability = std::stod(line.substr(line.rfind(',') + 1));
      EXPECT_LT(probability, 0.01) << "honest node " << id << " still samples attacker " << peer;
    }
  }
  EXPECT_EQ(honest, 18);
  double clean = MeanOf(out, "clean"), attacked = MeanOf(out, "attacked");
  std::printf("%s: honest mean test MSE %.3f (clean run %.3f)\n", kind.c_str(), attacked, clean);
  EXPECT_LE(attacked, 1.05 * clean) << "honest nodes lost more than 5% to the attack";
}

INSTANTIATE_TEST_SUITE_P(Kinds, PoisoningPeer, ::testing::Values("sign_flip", "noise"));

// The shipped scenario: 60% of every cluster sign-flips. With merge_min_score the honest nodes end
// within 5% of the clean run's test MSE.
TEST(PoisonedMajority, MergeMinScoreKeepsHonestNodesWithinFivePercentOfTheCleanRun) {
  std::string out = RunPoisonScenario("majority", {});
  double clean = MeanOf(out, "clean");
  double defended = MeanOf(out, "attacked merge_min_score");
  std::printf("honest mean test MSE: clean %.3f, attacked %.3f, with merge_min_score %.3f\n", clean,
              MeanOf(out, "attacked"), defended);
  EXPECT_LE(defended, 1.05 * clean);
}

// Issue 47: two scaling attackers per cluster of 10 (they serve 10·w, which DAC's cosine
// similarity cannot tell from w) ruin the undefended honest nodes; self-centred clipping, the
// trimmed mean and the median keep them within 10% of the clean run's test MSE. Simulated, so
// the figures are the same on every run (20 rounds: clean 10.87, attacked 28.39, clip 11.17,
// trimmed mean and median 11.42 when written).
TEST(RobustMergeMesh, ClipTrimmedMeanAndMedianHoldHonestNodesAgainstScalingAttackers) {
  std::string out = RunPoisonScenario(
      "scaling",
      {"node.attack.kind=scaling", "node.attack.fraction=0.2", "node.training.rounds=20",
       "methods=[{name = \"clean\", attack = {fraction = 0.0}}, {name = \"attacked\"}, "
       "{name = \"clip\", learning = {robust = \"clip\"}}, "
       "{name = \"trimmed_mean\", learning = {robust = \"trimmed_mean\"}}, "
       "{name = \"median\", learning = {robust = \"median\"}}]"},
      "--simulate");
  const double clean = MeanOf(out, "clean"), attacked = MeanOf(out, "attacked");
  EXPECT_GE(attacked, 1.5 * clean) << "the scaling attack should hurt an undefended mesh";
  for (const char* rule : {"clip", "trimmed_mean", "median"}) {
    const double defended = MeanOf(out, rule);
    std::printf("%s: honest mean test MSE %.3f (clean %.3f, attacked %.3f)\n", rule, defended,
                clean, attacked);
    EXPECT_LE(defended, 1.10 * clean) << rule;
  }
}

// The share of the draws of the nodes not in `attackers` that went to `attackers`, from the
// heatmap of `method`'s run (cell (i, j): how often node i sampled node j).
double ShareOfDrawsToAttackers(const std::string& out, const std::string& method,
                               const std::set<std::string>& attackers) {
  auto heatmap = plot::ReadMatrixCsv(out + "/" + method + "/heatmap.csv");
  EXPECT_TRUE(heatmap.ok()) << heatmap.status().ToString();
  if (!heatmap.ok()) return NAN;
  double to_attackers = 0, total = 0;
  for (size_t r = 0; r < heatmap->row_ids.size(); ++r) {
    if (attackers.count(heatmap->row_ids[r])) continue;
    for (size_t c = 0; c < heatmap->col_ids.size(); ++c) {
      total += heatmap->at(r, c);
      if (attackers.count(heatmap->col_ids[c])) to_attackers += heatmap->at(r, c);
    }
  }
  return to_attackers / total;
}

// Expects that no node of the 20 in `run` outside `attackers` sampled a made-up identity.
void ExpectNoHonestNodeSampledASybil(const std::string& run,
                                     const std::set<std::string>& attackers) {
  for (int i = 0; i < 20; ++i) {
    if (attackers.count(std::to_string(i))) continue;
    const std::string node = run + "/node-" + std::to_string(i);
    EXPECT_EQ(ReadText(node + "/comm.csv").find("sybil"), std::string::npos)
        << "node " << i << " sampled a made-up identity";
  }
}

// Issue 47, the sampler attacks: two score_lie attackers in each cluster of 10 (nodes 0, 1, 10,
// 11) serve honest models but gossip score rows that promote one another and demote everyone
// else. Under DAC's rule the lie buys them draws; the witness cap takes back part of it, and
// with three rounds of uniform exploration nearly all (docs/robustness.md "Results: who honest
// nodes draw").
// A sybil announcing 100 made-up identities gains nothing: none is ever sampled, and the honest
// nodes draw exactly as in the clean run. Simulated, so the figures are the same on every run
// (when written: clean 0.226, capped 0.355, uncapped 0.424, capped with exploration 0.241,
// sybil 0.226; the attackers' share of the peers an honest node sees is 4/19 = 0.211, and of its
// cluster mates 2/9 = 0.222, which a clustered sampler draws from: docs/robustness.md "Attacks
// on sampling").
TEST(SamplerAttacks, TheWitnessCapTakesBackDrawsAScoreLieBuysAndSybilsGainNone) {
  const std::set<std::string> attackers = {"0", "1", "10", "11"};
  const double share_of_peers = 4.0 / 19;
  std::string out = RunPoisonScenario(
      "score_lie",
      {"node.attack.kind=score_lie", "node.attack.fraction=0.2", "node.training.rounds=20",
       "methods=[{name = \"clean\", attack = {fraction = 0.0}}, {name = \"uncapped\"}, "
       "{name = \"capped\", learning = {two_hop_cap = \"witness\"}}, "
       "{name = \"defended\", learning = {two_hop_cap = \"witness\", explore_rounds = 3}}, "
       "{name = \"sybil\", attack = {kind = \"sybil\"}}]"},
      "--simulate");
  const double clean = ShareOfDrawsToAttackers(out, "clean", attackers);
  const double capped = ShareOfDrawsToAttackers(out, "capped", attackers);
  const double uncapped = ShareOfDrawsToAttackers(out, "uncapped", attackers);
  const double defended = ShareOfDrawsToAttackers(out, "defended", attackers);
  const double sybil = ShareOfDrawsToAttackers(out, "sybil", attackers);
  std::printf(
      "honest draws to nodes 0, 1, 10, 11: clean run %.3f, score_lie capped %.3f, uncapped "
      "%.3f, capped with 3 exploration rounds %.3f, sybil %.3f; their share of the peers %.3f\n",
      clean, capped, uncapped, defended, sybil, share_of_peers);
  EXPECT_GT(uncapped, clean + 0.1) << "uncapped, the lie should buy the attackers draws";
  EXPECT_LT(capped, uncapped - 0.05) << "the cap should take back part of them";
  EXPECT_LE(defended, clean + 0.03) << "with exploration, the cap should take back nearly all";
  EXPECT_LE(sybil, clean) << "made-up identities should buy the sybils nothing";
  ExpectNoHonestNodeSampledASybil(out + "/sybil", attackers);
  EXPECT_NE(ReadText(out + "/sybil/node-2/node.log").find("sybil0"), std::string::npos)
      << "honest node 2 should have heard of the sybils";
}

// Issue 59, the sampler attacks against bounded views (docs/DESIGN.md "Bounded views"): with a
// view of 8 of the 19 peers, one source fills at most ceil(8 / 4) = 2 places of a full view and
// a newcomer enters only above a member it outranks, so the same score_lie buys its allies far
// fewer honest draws than with full membership, and the sybil's made-up identities none.
// Simulated, so the figures are the same on every run (when written: full membership under the
// lie 0.424; views of 8: clean 0.210, under the lie 0.272, sybil 0.210).
TEST(SamplerAttacks, ABoundedViewHoldsAScoreLieBelowFullMembershipAndGivesSybilsNothing) {
  const std::set<std::string> attackers = {"0", "1", "10", "11"};
  std::string out = RunPoisonScenario(
      "views",
      {"node.attack.kind=score_lie", "node.attack.fraction=0.2", "node.training.rounds=20",
       "methods=[{name = \"clean_view\", attack = {fraction = 0.0}, round = {view_size = 8}}, "
       "{name = \"lie_full\"}, {name = \"lie_view\", round = {view_size = 8}}, "
       "{name = \"sybil_view\", attack = {kind = \"sybil\"}, round = {view_size = 8}}]"},
      "--simulate");
  std::map<std::string, double> share;
  for (const char* run : {"clean_view", "lie_full", "lie_view", "sybil_view"}) {
    share[run] = ShareOfDrawsToAttackers(out, run, attackers);
    std::printf("honest draws to nodes 0, 1, 10, 11 in %s: %.3f\n", run, share[run]);
  }
  const double clean = share["clean_view"], lie_full = share["lie_full"];
  const double lie_view = share["lie_view"], sybil = share["sybil_view"];
  EXPECT_LT(lie_view, lie_full - 0.1) << "a bounded view should hold the lie's gain down";
  EXPECT_LE(sybil, clean) << "made-up identities should buy the sybils nothing";
  ExpectNoHonestNodeSampledASybil(out + "/sybil_view", attackers);
}

}  // namespace
}  // namespace meshlearn::e2e
