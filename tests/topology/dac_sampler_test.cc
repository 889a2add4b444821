// Hand-computed checks of every DAC rule (DESIGN.md "DAC sampler"), and the PeerSampler contract
// (topology/sampler.h) as the DAC sampler exercises it.

#include "topology/dac_sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace meshlearn::topology {
namespace {

using Scores = std::vector<std::optional<double>>;

std::unique_ptr<DacSampler> MakeDac(DacOptions options, std::vector<std::string> peers) {
  auto dac = DacSampler::Create("a", options);
  EXPECT_TRUE(dac.ok());
  for (const std::string& peer : peers) EXPECT_TRUE((*dac)->AddPeer(peer).ok());
  return std::move(dac).value();
}

DacOptions Options(double tau, TwoHopRule two_hop = TwoHopRule::kLargest) {
  DacOptions options;
  options.tau = tau;
  options.two_hop = two_hop;
  return options;
}

DacOptions WithWitnessCap(DacOptions options) {
  options.two_hop_cap = TwoHopCap::kWitness;
  return options;
}

std::map<std::string, std::optional<double>> ScoreMap(const PeerSampler& sampler) {
  std::map<std::string, std::optional<double>> scores;
  for (const PeerRecord& record : sampler.Records()) scores[record.peer] = record.score;
  return scores;
}

double ProbabilityOf(const PeerSampler& sampler, const std::string& peer) {
  return sampler.Find(peer)->probability;
}

TEST(DacProbabilitiesTest, ExcludeFloorsUnscoredAndNonPositiveThenRenormalises) {
  // Softmax over {1, 0.5} at τ = 2: 1/(1+e^-1) and e^-1/(1+e^-1); two floors of 1e-6.
  const Scores scores = {1.0, 0.5, std::nullopt, -0.2};
  const std::vector<double> p =
      DacProbabilities(scores, 2, UnscoredRule::kExclude, ScoreNormalization::kNone);
  const double total = 1 + 2e-6;
  EXPECT_NEAR(p[0], (1 / (1 + std::exp(-1.0))) / total, 1e-15);
  EXPECT_NEAR(p[1], (std::exp(-1.0) / (1 + std::exp(-1.0))) / total, 1e-15);
  EXPECT_NEAR(p[2], 1e-6 / total, 1e-18);
  EXPECT_NEAR(p[3], 1e-6 / total, 1e-18);
}

TEST(DacProbabilitiesTest, ZeroCountsUnscoredAsScoreZero) {
  // τ = ln 3: weights e^0 = 1 for s = 1 and e^(-ln 3) = 1/3 for the unscored peer.
  const Scores scores = {1.0, std::nullopt};
  const std::vector<double> p =
      DacProbabilities(scores, std::log(3.0), UnscoredRule::kZero, ScoreNormalization::kNone);
  EXPECT_NEAR(p[0], 0.75, 1e-15);
  EXPECT_NEAR(p[1], 0.25, 1e-15);
}

TEST(DacProbabilitiesTest, MinMaxMapsScoresToUnitRangeBeforeSoftmax) {
  // {10, 20, 30} -> {0, 0.5, 1}; τ = ln 4 gives weights 1/4, 1/2, 1.
  const Scores scores = {10.0, 20.0, 30.0};
  const std::vector<double> p =
      DacProbabilities(scores, std::log(4.0), UnscoredRule::kExclude, ScoreNormalization::kMinMax);
  EXPECT_NEAR(p[0], 1.0 / 7, 1e-15);
  EXPECT_NEAR(p[1], 2.0 / 7, 1e-15);
  EXPECT_NEAR(p[2], 4.0 / 7, 1e-15);
}

TEST(DacProbabilitiesTest, MinMaxOfEqualScoresIsUniformOverThem) {
  const Scores scores = {5.0, 5.0, std::nullopt};
  const std::vector<double> p =
      DacProbabilities(scores, 100, UnscoredRule::kExclude, ScoreNormalization::kMinMax);
  EXPECT_NEAR(p[0], 0.5 / (1 + 1e-6), 1e-15);
  EXPECT_DOUBLE_EQ(p[0], p[1]);
}

TEST(DacProbabilitiesTest, NoScoresGiveTheUniformPrior) {
  const Scores scores = {std::nullopt, -1.0, 0.0, std::nullopt};
  for (double pk : DacProbabilities(scores, 5, UnscoredRule::kExclude, ScoreNormalization::kNone)) {
    EXPECT_DOUBLE_EQ(pk, 0.25);
  }
  EXPECT_TRUE(DacProbabilities({}, 5, UnscoredRule::kExclude, ScoreNormalization::kNone).empty());
}

TEST(DacProbabilitiesTest, HugeTauStaysFinite) {
  // Table 8 uses τ = 10000 with inverse-loss scores; the max shift keeps exp() finite.
  const Scores scores = {0.9, 0.8, 3.0};
  const std::vector<double> p =
      DacProbabilities(scores, 10000, UnscoredRule::kExclude, ScoreNormalization::kNone);
  EXPECT_DOUBLE_EQ(p[2], 1.0);
  EXPECT_EQ(p[0], 0.0);
}

TEST(TauAtTest, SigmoidRisesFromOneTowardsTauPlusOne) {
  EXPECT_DOUBLE_EQ(TauAt(10, TauSchedule::kConstant, 7), 10);
  EXPECT_DOUBLE_EQ(TauAt(10, TauSchedule::kSigmoid, 0), 1);
  // 2·10 / (1 + e^(-1)) - 10 + 1.
  EXPECT_NEAR(TauAt(10, TauSchedule::kSigmoid, 5), 20 / (1 + std::exp(-1.0)) - 9, 1e-12);
  EXPECT_NEAR(TauAt(10, TauSchedule::kSigmoid, 1000), 11, 1e-12);
}

TEST(DacSamplerTest, PriorIsUniformOverKnownPeersAndSelfIsNoPeer) {
  auto dac = MakeDac(Options(5), {"b", "c", "d", "e"});
  for (const PeerRecord& record : dac->Records()) EXPECT_DOUBLE_EQ(record.probability, 0.25);
  EXPECT_FALSE(dac->AddPeer("a").ok());
  EXPECT_FALSE(dac->AddPeer("").ok());
  EXPECT_FALSE(dac->HasPeer("a"));
}

TEST(DacSamplerTest, UpdateSetsScoresOfSampledPeersAndAppliesSoftmax) {
  auto dac = MakeDac(Options(2, TwoHopRule::kOff), {"b", "c", "d", "e"});
  const std::vector<PeerObservation> seen = {{"b", 1.0, {}}, {"c", 0.5, {}}, {"e", -0.2, {}}};
  ASSERT_TRUE(dac->Update(1, seen).ok());
  const std::vector<double> expected = DacProbabilities(
      Scores{1.0, 0.5, std::nullopt, -0.2}, 2, UnscoredRule::kExclude, ScoreNormalization::kNone);
  for (size_t k = 0; k < expected.size(); ++k) {
    EXPECT_DOUBLE_EQ(dac->Records()[k].probability, expected[k]);
  }
  EXPECT_TRUE(dac->Find("b")->sampled_directly);
  EXPECT_FALSE(dac->Find("d")->sampled_directly);
}

TEST(DacSamplerTest, TwoHopTakesTheRowOfTheMostSimilarSampledPeer) {
  // b (s_ab = 0.9) and c (s_ac = 0.5) were sampled. d is scored positively by both rows: the DAC
  // rule trusts b, the paper code's variant trusts c. Only b scores e positively, and the DAC rule
  // takes it; the paper code's variant copies c's -0.1 as it is. a is self.
  const std::vector<PeerObservation> seen = {
      {"b", 0.9, {{"a", 0.9}, {"d", 0.3}, {"e", 0.8}}},
      {"c", 0.5, {{"d", 0.7}, {"e", -0.1}}},
  };
  auto largest = MakeDac(Options(1, TwoHopRule::kLargest), {"b", "c", "d", "e"});
  ASSERT_TRUE(largest->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*largest)["d"], 0.3);
  EXPECT_EQ(ScoreMap(*largest)["e"], 0.8);
  // With the witness cap d takes the widest path: max(min(0.9, 0.3), min(0.5, 0.7)) = 0.5
  // through c.
  auto capped = MakeDac(WithWitnessCap(Options(1)), {"b", "c", "d", "e"});
  ASSERT_TRUE(capped->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*capped)["d"], 0.5);
  EXPECT_EQ(ScoreMap(*capped)["e"], 0.8);

  auto smallest = MakeDac(Options(1, TwoHopRule::kSmallest), {"b", "c", "d", "e"});
  ASSERT_TRUE(smallest->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*smallest)["d"], 0.7);
  EXPECT_EQ(ScoreMap(*smallest)["e"], -0.1);

  auto off = MakeDac(Options(1, TwoHopRule::kOff), {"b", "c", "d", "e"});
  ASSERT_TRUE(off->Update(1, seen).ok());
  EXPECT_FALSE(ScoreMap(*off)["d"].has_value());
  EXPECT_FALSE(ScoreMap(*off)["e"].has_value());
}

TEST(DacSamplerTest, TwoHopNeverOverwritesDirectScoresAndKeepsOldEstimates) {
  auto dac = MakeDac(Options(1), {"b", "c", "d", "e"});
  ASSERT_TRUE(
      dac->Update(1, std::vector<PeerObservation>{{"b", 0.9, {{"d", 0.3}, {"e", 0.8}}}}).ok());
  ASSERT_TRUE(dac->Update(2, std::vector<PeerObservation>{{"d", 0.1, {}}}).ok());
  // d was scored directly in round 2, so b's row no longer moves it; c's row has no positive
  // score of e, so e keeps its round-1 estimate.
  ASSERT_TRUE(dac->Update(3, std::vector<PeerObservation>{{"b", 0.9, {{"d", 0.95}}},
                                                          {"c", 0.2, {{"e", -1.0}}}})
                  .ok());
  EXPECT_EQ(ScoreMap(*dac)["d"], 0.1);
  EXPECT_EQ(ScoreMap(*dac)["e"], 0.8);
}

TEST(DacSamplerTest, TwoHopTieGoesToTheSmallerPeerIdWhateverTheOrder) {
  auto dac = MakeDac(Options(1), {"b", "c", "d"});
  // Listed c first: the tie on s_ij = 0.5 still goes to b.
  ASSERT_TRUE(dac->Update(1, std::vector<PeerObservation>{{"c", 0.5, {{"d", 0.4}}},
                                                          {"b", 0.5, {{"d", 0.2}}}})
                  .ok());
  EXPECT_EQ(ScoreMap(*dac)["d"], 0.2);
}

TEST(DacSamplerTest, SigmoidScheduleUsesTheRoundOfTheUpdate) {
  DacOptions options = Options(10, TwoHopRule::kOff);
  options.tau_schedule = TauSchedule::kSigmoid;
  auto dac = MakeDac(options, {"b", "c"});
  ASSERT_TRUE(dac->Update(5, std::vector<PeerObservation>{{"b", 1.0, {}}, {"c", 0.5, {}}}).ok());
  const std::vector<double> expected =
      DacProbabilities(Scores{1.0, 0.5}, TauAt(10, TauSchedule::kSigmoid, 5),
                       UnscoredRule::kExclude, ScoreNormalization::kNone);
  EXPECT_DOUBLE_EQ(ProbabilityOf(*dac, "b"), expected[0]);
}

TEST(DacSamplerTest, JoiningPeerIsUnscoredAndLeavingPeerIsForgotten) {
  auto dac = MakeDac(Options(1, TwoHopRule::kOff), {"b", "c"});
  ASSERT_TRUE(dac->Update(1, std::vector<PeerObservation>{{"b", 1.0, {}}, {"c", 1.0, {}}}).ok());
  ASSERT_TRUE(dac->AddPeer("d").ok());
  ASSERT_TRUE(dac->AddPeer("d").ok());  // a repeated announcement changes nothing
  EXPECT_EQ(dac->Records().size(), 3u);
  EXPECT_NEAR(ProbabilityOf(*dac, "d"), 1e-6 / (1 + 1e-6), 1e-18);
  ASSERT_TRUE(dac->RemovePeer("b").ok());
  EXPECT_FALSE(dac->HasPeer("b"));
  EXPECT_NEAR(ProbabilityOf(*dac, "c") + ProbabilityOf(*dac, "d"), 1, 1e-15);
  EXPECT_EQ(dac->RemovePeer("b").code(), ErrorCode::kNotFound);
}

TEST(DacSamplerTest, BadObservationsRejectTheWholeUpdate) {
  auto dac = MakeDac(Options(1), {"b", "c"});
  const auto before = dac->Snapshot();
  EXPECT_EQ(dac->Update(1, std::vector<PeerObservation>{{"b", 0.5, {}}, {"c", NAN, {}}}).code(),
            ErrorCode::kNonFinite);
  EXPECT_EQ(dac->Update(1, std::vector<PeerObservation>{{"b", 0.5, {{"c", INFINITY}}}}).code(),
            ErrorCode::kNonFinite);
  EXPECT_EQ(dac->Update(1, std::vector<PeerObservation>{{"b", 0.5, {}}, {"b", 0.6, {}}}).code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(dac->Update(1, std::vector<PeerObservation>{{"a", 0.5, {}}}).code(),
            ErrorCode::kInvalidArgument);
  const auto after = dac->Snapshot();
  for (size_t k = 0; k < before.peers.size(); ++k) {
    EXPECT_EQ(before.peers[k].score, after.peers[k].score);
    EXPECT_EQ(before.peers[k].probability, after.peers[k].probability);
  }
  // A peer that left after being sampled is ignored, not an error.
  EXPECT_TRUE(dac->Update(1, std::vector<PeerObservation>{{"gone", 0.5, {}}}).ok());
}

TEST(DacSamplerTest, SampleDrawsDistinctLivePeersWithTheirCurrentProbabilities) {
  auto dac = MakeDac(Options(1), {"b", "c", "d", "e", "f"});
  Rng rng(7);
  const PeerFilter not_c = [](std::string_view peer) { return peer != "c"; };
  for (int draw = 0; draw < 200; ++draw) {
    const std::vector<SampledPeer> sampled = dac->Sample(3, not_c, rng);
    ASSERT_EQ(sampled.size(), 3u);
    std::set<std::string> distinct;
    for (const SampledPeer& peer : sampled) {
      EXPECT_NE(peer.peer, "c");
      EXPECT_DOUBLE_EQ(peer.probability, 0.2);
      distinct.insert(peer.peer);
    }
    EXPECT_EQ(distinct.size(), 3u);
  }
  // Fewer live peers than m: all of them.
  EXPECT_EQ(dac->Sample(10, not_c, rng).size(), 4u);
  EXPECT_TRUE(dac->Sample(0, {}, rng).empty());
}

TEST(DacSamplerTest, SampleFrequenciesFollowTheProbabilities) {
  auto dac = MakeDac(Options(std::log(3.0), TwoHopRule::kOff), {"b", "c"});
  ASSERT_TRUE(dac->Update(1, std::vector<PeerObservation>{{"b", 1.0, {}}, {"c", 1e-300, {}}}).ok());
  // p_b = 3/4, p_c = 1/4 (τ = ln 3, scores 1 and ~0).
  ASSERT_NEAR(ProbabilityOf(*dac, "b"), 0.75, 1e-12);
  Rng rng(11);
  int b = 0;
  constexpr int kDraws = 20000;
  for (int draw = 0; draw < kDraws; ++draw) b += dac->Sample(1, {}, rng)[0].peer == "b" ? 1 : 0;
  EXPECT_NEAR(double(b) / kDraws, 0.75, 0.015);
}

TEST(DacSamplerTest, SameSeedAndInputsGiveTheSameSamples) {
  const std::vector<std::string> peers = {"b", "c", "d", "e", "f", "g"};
  auto first = MakeDac(Options(3), peers);
  // The second sampler learns the same peers in another order.
  auto second = MakeDac(Options(3), {"g", "e", "c", "b", "f", "d"});
  const std::vector<PeerObservation> seen = {{"b", 0.9, {{"c", 0.4}}}, {"d", 0.2, {}}};
  ASSERT_TRUE(first->Update(1, seen).ok());
  ASSERT_TRUE(second->Update(1, seen).ok());
  Rng rng_first(42), rng_second(42), rng_other(43);
  bool differs = false;
  for (int round = 0; round < 20; ++round) {
    const auto a = first->Sample(3, {}, rng_first);
    const auto b = second->Sample(3, {}, rng_second);
    const auto c = first->Sample(3, {}, rng_other);
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].peer, b[k].peer);
      differs = differs || a[k].peer != c[k].peer;
    }
  }
  EXPECT_TRUE(differs) << "another seed should give another sequence";
}

TEST(DacSamplerTest, SnapshotRestoresScoresProbabilitiesAndDirectFlags) {
  auto dac = MakeDac(Options(2), {"b", "c", "d"});
  ASSERT_TRUE(dac->Update(4, std::vector<PeerObservation>{{"b", 0.7, {{"d", 0.6}}}}).ok());
  const SamplerState state = dac->Snapshot();
  EXPECT_EQ(state.sampler, "dac");
  EXPECT_EQ(state.round, 4);

  auto restored = MakeDac(Options(2), {});
  ASSERT_TRUE(restored->Restore(state).ok());
  ASSERT_EQ(restored->Records().size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(restored->Records()[k].peer, dac->Records()[k].peer);
    EXPECT_EQ(restored->Records()[k].score, dac->Records()[k].score);
    EXPECT_EQ(restored->Records()[k].sampled_directly, dac->Records()[k].sampled_directly);
    EXPECT_EQ(restored->Records()[k].probability, dac->Records()[k].probability);
  }
  Rng rng_a(5), rng_b(5);
  EXPECT_EQ(dac->Sample(2, {}, rng_a)[0].peer, restored->Sample(2, {}, rng_b)[0].peer);
}

TEST(DacSamplerTest, RestoreRejectsForeignOrBrokenStateAndKeepsItsOwn) {
  auto dac = MakeDac(Options(2), {"b", "c"});
  SamplerState state = dac->Snapshot();
  state.sampler = "random";
  EXPECT_EQ(dac->Restore(state).code(), ErrorCode::kInvalidArgument);
  state = dac->Snapshot();
  state.peers[0].probability = NAN;
  EXPECT_EQ(dac->Restore(state).code(), ErrorCode::kInvalidArgument);
  state = dac->Snapshot();
  std::swap(state.peers[0], state.peers[1]);
  EXPECT_EQ(dac->Restore(state).code(), ErrorCode::kInvalidArgument);
  state = dac->Snapshot();
  state.peers[0].peer = "a";
  EXPECT_EQ(dac->Restore(state).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dac->Records().size(), 2u);
  EXPECT_DOUBLE_EQ(ProbabilityOf(*dac, "b"), 0.5);
}

TEST(DacSamplerTest, ScoresRowHoldsOnlyScoredPeersInIdOrder) {
  auto dac = MakeDac(Options(2, TwoHopRule::kOff), {"d", "b", "c"});
  ASSERT_TRUE(dac->Update(1, std::vector<PeerObservation>{{"d", 0.3, {}}, {"b", 0.6, {}}}).ok());
  const ScoreRow row = dac->Scores();
  ASSERT_EQ(row.size(), 2u);
  EXPECT_EQ(row[0].peer, "b");
  EXPECT_EQ(row[0].score, 0.6);
  EXPECT_EQ(row[1].peer, "d");
}

TEST(DacSamplerTest, CreateRejectsBadTau) {
  EXPECT_FALSE(DacSampler::Create("a", Options(-1)).ok());
  EXPECT_FALSE(DacSampler::Create("a", Options(INFINITY)).ok());
  EXPECT_TRUE(DacSampler::Create("a", Options(0)).ok());
}

// Issue 45: the paper code's witness (kSmallest) takes every entry of the least similar witness's
// row, a non-positive one included, and copies it as it is; ours skips non-positive evidence.
TEST(DacSamplerTest, PaperCodeWitnessCopiesNonPositiveEntriesOfTheLeastSimilarPeer) {
  // b (s_ab = 0.9) scores d 0.6; c (s_ac = 0.2, the least similar) scores d -0.4.
  const std::vector<PeerObservation> seen = {{"b", 0.9, {{"d", 0.6}}}, {"c", 0.2, {{"d", -0.4}}}};
  auto smallest = MakeDac(Options(1, TwoHopRule::kSmallest), {"b", "c", "d"});
  ASSERT_TRUE(smallest->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*smallest)["d"], -0.4);
  // A non-positive estimate takes the floor, as in that code.
  EXPECT_NEAR(ProbabilityOf(*smallest, "d"), 1e-6 / (1 + 1e-6), 1e-15);

  auto largest = MakeDac(Options(1), {"b", "c", "d"});
  ASSERT_TRUE(largest->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*largest)["d"], 0.6);
}

// Issue 47: a witness's row cannot make a peer more likely than the witness itself.
TEST(DacSamplerTest, WitnessCapBoundsAnEstimateByTheNodesOwnScoreOfTheWitness) {
  // b (s_ab = 0.6) claims d = 0.95 and e = 0.4; c (s_ac = -0.2) claims f = 0.9.
  const std::vector<PeerObservation> seen = {{"b", 0.6, {{"d", 0.95}, {"e", 0.4}}},
                                             {"c", -0.2, {{"f", 0.9}}}};
  EXPECT_EQ(DacOptions{}.two_hop_cap, TwoHopCap::kOff);  // the default: DAC's rule
  auto capped = MakeDac(WithWitnessCap(Options(10)), {"b", "c", "d", "e", "f"});
  ASSERT_TRUE(capped->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*capped)["d"], 0.6);            // min(0.6, 0.95)
  EXPECT_EQ(ScoreMap(*capped)["e"], 0.4);            // below the cap: as the witness says
  EXPECT_FALSE(ScoreMap(*capped)["f"].has_value());  // a dissimilar witness vouches for nobody
  // Softmax over b 0.6, d 0.6, e 0.4 at τ 10; c and f take the floor.
  const double wb = 1, we = std::exp(-2.0), z = 2 * wb + we, total = 1 + 2e-6;
  EXPECT_NEAR(ProbabilityOf(*capped, "d"), wb / z / total, 1e-12);
  EXPECT_EQ(ProbabilityOf(*capped, "d"), ProbabilityOf(*capped, "b"));
  EXPECT_NEAR(ProbabilityOf(*capped, "f"), 1e-6 / total, 1e-15);

  auto uncapped = MakeDac(Options(10), {"b", "c", "d", "e", "f"});
  ASSERT_TRUE(uncapped->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*uncapped)["d"], 0.95);
  EXPECT_EQ(ScoreMap(*uncapped)["f"], 0.9);
  // Uncapped, the claimed ally outweighs its witness 33 to 1 (e^(10·0.35)).
  EXPECT_NEAR(ProbabilityOf(*uncapped, "d") / ProbabilityOf(*uncapped, "b"), std::exp(3.5), 1e-9);
}

// Issue 47: on clustered data the capped rule still makes the unexplored cluster mates likely,
// and it stops another cluster's witness from vouching for its own mates.
TEST(DacSamplerTest, WitnessCapKeepsTwoHopFindingClusterMatesOnClusteredScores) {
  // Clusters {a, b, c, d} and {e, f, g, h}: in-cluster cosines about 0.9, across about 0.1. a
  // sampled b (0.92) and e (0.1). b's row: c 0.91, d 0.93, f 0.12; e's row: c 0.1, f 0.95, g 0.9.
  const std::vector<PeerObservation> seen = {
      {"b", 0.92, {{"c", 0.91}, {"d", 0.93}, {"f", 0.12}}},
      {"e", 0.1, {{"c", 0.1}, {"f", 0.95}, {"g", 0.9}}},
  };
  const std::vector<std::string> peers = {"b", "c", "d", "e", "f", "g", "h"};
  auto mass_on_mates = [](const PeerSampler& dac) {
    return ProbabilityOf(dac, "b") + ProbabilityOf(dac, "c") + ProbabilityOf(dac, "d");
  };
  auto capped = MakeDac(WithWitnessCap(Options(30)), peers);
  ASSERT_TRUE(capped->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*capped)["c"], 0.91);  // b is the most similar witness; 0.91 < 0.92
  EXPECT_EQ(ScoreMap(*capped)["d"], 0.92);  // min(0.92, 0.93)
  EXPECT_EQ(ScoreMap(*capped)["f"], 0.12);  // b, the most similar witness, says 0.12
  EXPECT_EQ(ScoreMap(*capped)["g"], 0.1);   // min(0.1, 0.9): e is not like a
  EXPECT_FALSE(ScoreMap(*capped)["h"].has_value());
  // τ 30: the mates (0.92, 0.91, 0.92) against e, f, g (0.1, 0.12, 0.1) and h's floor.
  const double mates = 2 + std::exp(-0.3), others = 2 * std::exp(-24.6) + std::exp(-24.0);
  EXPECT_NEAR(mass_on_mates(*capped), mates / (mates + others) / (1 + 1e-6), 1e-12);
  EXPECT_GT(mass_on_mates(*capped), 0.9999);

  auto uncapped = MakeDac(Options(30), peers);
  ASSERT_TRUE(uncapped->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*uncapped)["g"], 0.9);  // e, the only witness of g, vouches for its mate
  EXPECT_LT(mass_on_mates(*uncapped), 0.9);
  EXPECT_GT(ProbabilityOf(*uncapped, "g"), 0.1);  // against e^(-24.6)/(mates) with the cap
  EXPECT_LT(ProbabilityOf(*capped, "g"), 1e-10);
}

// Issue 47: with the cap, the most similar witness alone cannot push a peer that another witness
// vouches for down to the floor.
TEST(DacSamplerTest, WitnessCapKeepsOneWitnessFromDemotingAPeerAnotherVouchesFor) {
  // b (0.95, the most similar) says d = 1e-6; c (0.9) says d = 0.85.
  const std::vector<PeerObservation> seen = {{"b", 0.95, {{"d", 1e-6}}}, {"c", 0.9, {{"d", 0.85}}}};
  auto capped = MakeDac(WithWitnessCap(Options(10)), {"b", "c", "d"});
  ASSERT_TRUE(capped->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*capped)["d"], 0.85);  // max(min(0.95, 1e-6), min(0.9, 0.85))
  auto uncapped = MakeDac(Options(10), {"b", "c", "d"});
  ASSERT_TRUE(uncapped->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*uncapped)["d"], 1e-6);  // DAC's rule trusts b alone
}

// Issue 45: TwoHopRow::kDirect passes on only what the node scored itself.
TEST(DacSamplerTest, DirectWitnessRowLeavesOutTwoHopEstimates) {
  DacOptions options = Options(1);
  const std::vector<PeerObservation> seen = {{"b", 0.9, {{"d", 0.7}}}, {"c", 0.3, {}}};
  auto all = MakeDac(options, {"b", "c", "d", "e"});
  ASSERT_TRUE(all->Update(1, seen).ok());
  ASSERT_EQ(all->WitnessRow().size(), 3u);  // b, c and d's estimate
  EXPECT_EQ(all->WitnessRow()[2].peer, "d");

  options.two_hop_row = TwoHopRow::kDirect;
  auto direct = MakeDac(options, {"b", "c", "d", "e"});
  ASSERT_TRUE(direct->Update(1, seen).ok());
  EXPECT_EQ(ScoreMap(*direct)["d"], 0.7);  // the estimate is still used by the node itself
  const ScoreRow row = direct->WitnessRow();
  ASSERT_EQ(row.size(), 2u);
  EXPECT_EQ(row[0].peer, "b");
  EXPECT_EQ(row[0].score, 0.9);
  EXPECT_EQ(row[1].peer, "c");
  EXPECT_EQ(row[1].score, 0.3);
  // Once d is scored directly it is passed on, with its direct score.
  ASSERT_TRUE(direct->Update(2, std::vector<PeerObservation>{{"d", 0.5, {}}}).ok());
  ASSERT_EQ(direct->WitnessRow().size(), 3u);
  EXPECT_EQ(direct->WitnessRow()[2].score, 0.5);
}

// Issue 45: explore_rounds = 1 keeps the prior after round 1's scores; round 2's update ends it.
TEST(DacSamplerTest, ExploreRoundsKeepThePriorThenTheSoftmaxTakesOver) {
  DacOptions options = Options(10, TwoHopRule::kOff);
  options.explore_rounds = 1;
  auto dac = MakeDac(options, {"b", "c", "d", "e"});
  ASSERT_TRUE(dac->Update(1, std::vector<PeerObservation>{{"b", 0.9, {}}, {"c", 0.1, {}}}).ok());
  for (const std::string peer : {"b", "c", "d", "e"}) {
    EXPECT_DOUBLE_EQ(ProbabilityOf(*dac, peer), 0.25) << peer;
  }
  EXPECT_EQ(ScoreMap(*dac)["b"], 0.9);  // kept for later
  ASSERT_TRUE(dac->Update(2, std::vector<PeerObservation>{{"d", 0.5, {}}}).ok());
  // Softmax over b 0.9, c 0.1, d 0.5 at τ 10; e takes the floor.
  const double wb = 1, wc = std::exp(-8.0), wd = std::exp(-4.0);
  const double total = (wb + wc + wd) / (wb + wc + wd) + 1e-6;
  EXPECT_NEAR(ProbabilityOf(*dac, "b"), wb / (wb + wc + wd) / total, 1e-12);
  EXPECT_NEAR(ProbabilityOf(*dac, "e"), 1e-6 / total, 1e-15);

  options.explore_rounds = -1;
  EXPECT_FALSE(DacSampler::Create("a", options).ok());
}

}  // namespace
}  // namespace meshlearn::topology
