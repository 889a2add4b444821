// The robust merges ([learning] robust; training/robust_merge.h), each against a hand-worked
// example, with FedAvg and FedSim weights; and the properties every rule keeps: the own model
// always takes part, and the result does not depend on the order of the peers.
#include "training/robust_merge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace meshlearn::training {
namespace {

RobustOptions Options(RobustKind kind) {
  RobustOptions o;
  o.kind = kind;
  return o;
}

std::vector<float> Merge(const RobustOptions& o, const std::vector<float>& own,
                         const std::vector<MergeInput>& peers, MergeReport* report = nullptr,
                         AggregationKind aggregation = AggregationKind::kFedAvg) {
  std::vector<float> out(own.size());
  Status s = CreateMergeRule({aggregation}, o)->Merge({own, 10, 0}, peers, out, report);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

// Own (1, 0) and five peers, one an outlier in each coordinate:
//   coordinate 0: 1 | 2 3 4 6 100   sorted 1 2 3 4 6 100
//   coordinate 1: 0 | 10 −50 1 2 3  sorted −50 0 1 2 3 10
struct FivePeers {
  std::vector<float> own = {1, 0};
  std::vector<std::vector<float>> w = {{2, 10}, {3, -50}, {4, 1}, {6, 2}, {100, 3}};
  std::vector<MergeInput> Peers() const {
    std::vector<MergeInput> peers;
    for (const auto& x : w) peers.push_back({x, 10, 0.1});
    return peers;
  }
};

TEST(TrimmedMean, DropsTheOutlierOfEachSideOfEveryCoordinate) {
  FivePeers m;
  // trim 1: (2 + 3 + 4 + 6) / 4 = 3.75 and (0 + 1 + 2 + 3) / 4 = 1.5.
  EXPECT_EQ(Merge(Options(RobustKind::kTrimmedMean), m.own, m.Peers()),
            (std::vector<float>{3.75f, 1.5f}));
  RobustOptions two = Options(RobustKind::kTrimmedMean);
  two.trim = 2;  // (3 + 4) / 2 and (1 + 2) / 2
  EXPECT_EQ(Merge(two, m.own, m.Peers()), (std::vector<float>{3.5f, 1.5f}));
  RobustOptions huge = Options(RobustKind::kTrimmedMean);
  huge.trim = 50;  // lowered to 2 of 6 models
  EXPECT_EQ(Merge(huge, m.own, m.Peers()), (std::vector<float>{3.5f, 1.5f}));
}

TEST(TrimmedMean, IgnoresTheWeightsAPeerCouldInflate) {
  FivePeers m;
  std::vector<MergeInput> peers = m.Peers();
  peers[4].train_size = 1000000;  // the outlier claims a huge training set
  EXPECT_EQ(Merge(Options(RobustKind::kTrimmedMean), m.own, peers),
            (std::vector<float>{3.75f, 1.5f}));
}

TEST(Median, TakesTheMiddleValueOrTheMeanOfTheTwoMiddleOnes) {
  FivePeers m;
  // Six models: (3 + 4) / 2 and (1 + 2) / 2.
  EXPECT_EQ(Merge(Options(RobustKind::kMedian), m.own, m.Peers()),
            (std::vector<float>{3.5f, 1.5f}));
  // Five models (the last peer gone): 1 2 3 4 6 → 3; 0 10 −50 1 2 → 1.
  std::vector<MergeInput> four = m.Peers();
  four.pop_back();
  EXPECT_EQ(Merge(Options(RobustKind::kMedian), m.own, four), (std::vector<float>{3, 1}));
}

TEST(Median, OfManyPeersTakesTheGeneralPath) {
  // Own (0, 10) and ten peers (k, 10 − k), k = 10 down to 1: eleven values 0..10 per coordinate.
  const std::vector<float> own = {0, 10};
  std::vector<std::vector<float>> w;
  for (int k = 10; k >= 1; --k) w.push_back({static_cast<float>(k), static_cast<float>(10 - k)});
  std::vector<MergeInput> peers;
  for (const auto& x : w) peers.push_back({x, 10, 0.1});
  EXPECT_EQ(Merge(Options(RobustKind::kMedian), own, peers), (std::vector<float>{5, 5}));
  RobustOptions trim4 = Options(RobustKind::kTrimmedMean);
  trim4.trim = 4;  // (4 + 5 + 6) / 3
  EXPECT_EQ(Merge(trim4, own, peers), (std::vector<float>{5, 5}));
  trim4.trim = 1;  // (1 + ... + 9) / 9
  EXPECT_EQ(Merge(trim4, own, peers), (std::vector<float>{5, 5}));
}

// Own o = (0, 0) and peers p = (3, 4) at distance 5, q = (0, 1) at distance 1.
TEST(Clip, MovesAFarPeerToDistanceTauFromTheOwnModel) {
  const std::vector<float> own = {0, 0}, p = {3, 4}, q = {0, 1};
  const std::vector<MergeInput> peers = {{p, 10, 0.2}, {q, 10, 0.6}};
  RobustOptions fixed = Options(RobustKind::kClip);
  fixed.clip_tau = 2;
  // z_p = (2/5)(3, 4) = (1.2, 1.6), z_q = q; FedAvg with equal sizes: ((0 + 1.2 + 0) / 3,
  // (0 + 1.6 + 1) / 3) = (0.4, 0.8667).
  MergeReport report;
  std::vector<float> out = Merge(fixed, own, peers, &report);
  EXPECT_FLOAT_EQ(out[0], 0.4f);
  EXPECT_FLOAT_EQ(out[1], 2.6f / 3);
  EXPECT_EQ(report.clipped, (std::vector<bool>{true, false}));
  EXPECT_EQ(report.kept, (std::vector<bool>{true, true}));
  // FedSim: p 0.2, q 0.6, own max = 0.6, total 1.4: (0.2 · 1.2 / 1.4, (0.2 · 1.6 + 0.6) / 1.4).
  out = Merge(fixed, own, peers, nullptr, AggregationKind::kFedSim);
  EXPECT_FLOAT_EQ(out[0], 0.24f / 1.4f);
  EXPECT_FLOAT_EQ(out[1], 0.92f / 1.4f);
}

TEST(Clip, AdaptiveTauClipsTheFarthestShareOfThePeers) {
  const std::vector<float> own = {0, 0}, p = {3, 4}, q = {0, 1};
  const std::vector<MergeInput> peers = {{p, 10, 0}, {q, 10, 0}};
  // Two peers, the default share 0.5: k = min(⌈1⌉, 1) = 1, τ = the second largest distance = 1:
  // z_p = (0.6, 0.8), z_q = q; out = (0.6 / 3, 1.8 / 3).
  std::vector<float> out = Merge(Options(RobustKind::kClip), own, peers);
  EXPECT_FLOAT_EQ(out[0], 0.2f);
  EXPECT_FLOAT_EQ(out[1], 0.6f);
  // Share 0: τ is the largest distance and nothing is clipped: the plain FedAvg (1, 5/3).
  RobustOptions none = Options(RobustKind::kClip);
  none.clip_share = 0;
  out = Merge(none, own, peers);
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1], 5.0f / 3);
  // One peer: never clipped by the adaptive rule.
  out = Merge(Options(RobustKind::kClip), own, {{p, 10, 0}});
  EXPECT_FLOAT_EQ(out[0], 1.5f);
}

// Own (0, 0) and four peers at distances 5, 4, 1 and 1: a = (3, 4), b = (0, 4), c = (1, 0),
// d = (0, 1), equal sizes, so FedAvg gives each of the five models 1/5.
TEST(Clip, TheDefaultShareClipsTwoOfFourPeersWhereShare02ClipsOne) {
  const std::vector<float> own = {0, 0}, a = {3, 4}, b = {0, 4}, c = {1, 0}, d = {0, 1};
  const std::vector<MergeInput> peers = {{a, 10, 0}, {b, 10, 0}, {c, 10, 0}, {d, 10, 0}};
  // Share 0.5: k = min(⌈2⌉, 3) = 2, τ = the third largest distance = 1: z_a = (0.6, 0.8),
  // z_b = (0, 1); out = ((0.6 + 1) / 5, (0.8 + 1 + 1) / 5) = (0.32, 0.56).
  MergeReport report;
  std::vector<float> out = Merge(Options(RobustKind::kClip), own, peers, &report);
  EXPECT_FLOAT_EQ(out[0], 0.32f);
  EXPECT_FLOAT_EQ(out[1], 0.56f);
  EXPECT_EQ(report.clipped, (std::vector<bool>{true, true, false, false}));
  // Share 0.2: k = min(⌈0.8⌉, 3) = 1, τ = 4: z_a = (2.4, 3.2), b is kept whole;
  // out = ((2.4 + 1) / 5, (3.2 + 4 + 1) / 5) = (0.68, 1.64).
  RobustOptions one_fifth = Options(RobustKind::kClip);
  one_fifth.clip_share = 0.2;
  out = Merge(one_fifth, own, peers, &report);
  EXPECT_FLOAT_EQ(out[0], 0.68f);
  EXPECT_FLOAT_EQ(out[1], 1.64f);
  EXPECT_EQ(report.clipped, (std::vector<bool>{true, false, false, false}));
}

// Four points: own (0, 0), a (1, 0), b (0, 2), c (10, 10). Squared distances: a–own 1, a–b 5,
// a–c 181, b–own 4, b–c 164, c–own 200. With f = 1, k = 4 − 1 − 2 = 1: scores a 1, b 4, c 164.
TEST(Krum, KeepsThePeerNearestItsNeighboursAndMultiKrumTheMBest) {
  const std::vector<float> own = {0, 0}, a = {1, 0}, b = {0, 2}, c = {10, 10};
  const std::vector<MergeInput> peers = {{c, 10, 0.5}, {b, 10, 0.2}, {a, 10, 0.1}};
  MergeReport report;
  EXPECT_EQ(Merge(Options(RobustKind::kKrum), own, peers, &report),
            (std::vector<float>{0.5f, 0}));  // (own + a) / 2
  EXPECT_EQ(report.kept, (std::vector<bool>{false, false, true}));
  // Multi-Krum keeps n − f = 2: a and b; (own + a + b) / 3.
  std::vector<float> out = Merge(Options(RobustKind::kMultiKrum), own, peers, &report);
  EXPECT_FLOAT_EQ(out[0], 1.0f / 3);
  EXPECT_FLOAT_EQ(out[1], 2.0f / 3);
  EXPECT_EQ(report.kept, (std::vector<bool>{false, true, true}));
  // With FedSim, the weights of the kept peers: own max(0.2, 0.1) = 0.2, b 0.2, a 0.1.
  out = Merge(Options(RobustKind::kMultiKrum), own, peers, nullptr, AggregationKind::kFedSim);
  EXPECT_FLOAT_EQ(out[0], 0.1f / 0.5f);
  EXPECT_FLOAT_EQ(out[1], 0.4f / 0.5f);
  // f = 0: k = 2, scores a 1 + 4... a: 1 + 5 = 6, b: 4 + 5 = 9, c: 164 + 181 = 345: still a.
  RobustOptions no_f = Options(RobustKind::kKrum);
  no_f.krum_f = 0;
  EXPECT_EQ(Merge(no_f, own, peers), (std::vector<float>{0.5f, 0}));
}

TEST(DistanceGate, KeepsPeersWithinGammaTimesTheOwnNorm) {
  // ‖own‖ = 5, γ = 0.5: within 2.5. (3, 6) is at 2, (0, 0) at 5, (−3, −4) at 10.
  const std::vector<float> own = {3, 4}, near = {3, 6}, zero = {0, 0}, flipped = {-3, -4};
  const std::vector<MergeInput> peers = {{flipped, 10, 0}, {near, 10, 0}, {zero, 10, 0}};
  MergeReport report;
  EXPECT_EQ(Merge(Options(RobustKind::kDistanceGate), own, peers, &report),
            (std::vector<float>{3, 5}));
  EXPECT_EQ(report.kept, (std::vector<bool>{false, true, false}));
  // Nobody within: the own model alone.
  RobustOptions tight = Options(RobustKind::kDistanceGate);
  tight.gate_gamma = 0.1;
  EXPECT_EQ(Merge(tight, own, peers), own);
}

// Every rule: the result is bit-identical for every order of the peers, and merging into the
// own model's own buffer gives the same result.
TEST(MergeRules, EveryRuleIgnoresThePeersOrderAndMayWriteOverTheOwnModel) {
  std::vector<std::vector<float>> w(5, std::vector<float>(5000));
  for (size_t k = 0; k < w.size(); ++k) {
    for (size_t i = 0; i < w[k].size(); ++i) {
      w[k][i] = std::sin(0.37f * static_cast<float>(i * (k + 1))) * static_cast<float>(k + 1);
    }
  }
  const std::vector<float> own(w[0].begin(), w[0].end());
  for (const auto& [name, kind] : BuiltInRobustKindNames()) {
    std::vector<MergeInput> peers;
    for (size_t k = 1; k < w.size(); ++k) peers.push_back({w[k], 10 + k, 0.1 * k});
    const std::vector<float> first = Merge(Options(kind), own, peers);
    std::reverse(peers.begin(), peers.end());
    std::rotate(peers.begin(), peers.begin() + 1, peers.end());
    EXPECT_EQ(Merge(Options(kind), own, peers), first) << name;
    std::vector<float> in_place = own;
    ASSERT_TRUE(CreateMergeRule({}, Options(kind))->Merge({in_place, 10, 0}, peers, in_place).ok());
    EXPECT_EQ(in_place, first) << name;
  }
}

TEST(MergeRules, EveryBuiltInKindHasItsRuleAndAFilesRuleIsNotBuiltIn) {
  std::vector<std::string> names = NamesOf(RobustKindNames());
  EXPECT_EQ(names.back(), "torchscript");
  names.pop_back();
  EXPECT_EQ(NamesOf(BuiltInRobustKindNames()), names);
  for (const auto& [name, kind] : BuiltInRobustKindNames()) {
    EXPECT_EQ(CreateMergeRule({}, Options(kind))->Name(), name);
  }
  EXPECT_EQ(CreateMergeRule({}, Options(RobustKind::kTorchScript)), nullptr);
}

TEST(MergeRules, ReportsALayoutMismatch) {
  const std::vector<float> own = {1, 2}, short_peer = {1};
  std::vector<float> out(2);
  Status s = CreateMergeRule({}, Options(RobustKind::kMedian))
                 ->Merge({own, 1, 0}, std::vector<MergeInput>{{short_peer, 1, 0}}, out);
  EXPECT_EQ(s.code(), ErrorCode::kLayoutMismatch);
}

}  // namespace
}  // namespace meshlearn::training
