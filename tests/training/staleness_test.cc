// Staleness-aware merge weights (training/staleness.h): FedAsync's functions, and a stale peer's
// lost weight staying with the node's own model, against hand-worked merges.

#include "training/staleness.h"

#include "training/robust_merge.h"

#include <gtest/gtest.h>

#include <vector>

namespace meshlearn::training {
namespace {

TEST(StalenessWeight, FollowsFedAsyncsPolynomialAndHingeFunctions) {
  const StalenessOptions polynomial{StalenessKind::kPolynomial, 0.5, 4};
  EXPECT_EQ(StalenessWeight(polynomial, 0), 1);
  EXPECT_EQ(StalenessWeight(polynomial, 3), 0.5) << "(1 + 3)^-0.5";
  EXPECT_DOUBLE_EQ(StalenessWeight(polynomial, 8), 1.0 / 3) << "(1 + 8)^-0.5";
  const StalenessOptions hinge{StalenessKind::kHinge, 10, 4};
  EXPECT_EQ(StalenessWeight(hinge, 4), 1) << "no cost up to b rounds";
  EXPECT_DOUBLE_EQ(StalenessWeight(hinge, 5), 1.0 / 11) << "1 / (10 (5 - 4) + 1)";
  EXPECT_EQ(StalenessWeight(StalenessOptions{}, 100), 1) << "none";
  EXPECT_EQ(StalenessWeight(polynomial, -2), 1) << "a peer ahead is fresh";
}

// FedAvg over own (n = 1), a fresh peer (n = 1) and a peer 3 rounds behind (n = 2): the
// coefficients 1/4, 1/4, 1/2 become 1/2, 1/4, 1/4 with s(3) = 1/2 under both functions.
TEST(StalenessWeights, AStalePeersLostWeightGoesToTheOwnModel) {
  const std::vector<float> own = {1, 2, 4, 8}, a = {3, 2, 0, -8}, b = {2, 2, 2, 2};
  const std::vector<MergeInput> peers = {{a, 1, 0, 0}, {b, 2, 0, 3}};
  for (const StalenessOptions& options : {StalenessOptions{StalenessKind::kPolynomial, 0.5, 4},
                                          StalenessOptions{StalenessKind::kHinge, 0.5, 1}}) {
    const MergeWeights weights{AggregationKind::kFedAvg, options};
    Result<std::vector<double>> c = weights.Coefficients({own, 1, 0}, peers);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(*c, (std::vector<double>{0.5, 0.25, 0.25}));
    std::vector<float> out(4);
    ASSERT_TRUE(CreateMergeRule(weights, {})->Merge({own, 1, 0}, peers, out).ok());
    EXPECT_EQ(out, (std::vector<float>{1.75, 2, 2.5, 2.5}));
  }
}

TEST(StalenessWeights, FreshPeersMergeBitForBitAsWithoutWeights) {
  const std::vector<float> own = {0.1f, -3, 7}, a = {2, 0.3f, -1}, b = {5, 5, 0.7f};
  const std::vector<MergeInput> peers = {{a, 3, 0.2}, {b, 7, 0.6}};
  for (AggregationKind kind : {AggregationKind::kFedAvg, AggregationKind::kFedSim}) {
    std::vector<float> plain(3), weighted(3);
    ASSERT_TRUE(CreateMergeRule({kind}, {})->Merge({own, 4, 0}, peers, plain).ok());
    auto rule = CreateMergeRule({kind, {StalenessKind::kHinge, 10, 0}}, {});
    ASSERT_TRUE(rule->Merge({own, 4, 0}, peers, weighted).ok());
    EXPECT_EQ(plain, weighted);
  }
}

}  // namespace
}  // namespace meshlearn::training
