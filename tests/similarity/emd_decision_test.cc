// The EMD-CFL decision rule and the `emd` metric (similarity/emd_decision.h; DESIGN.md "EMD
// embedding exchange", step 4).

#include "similarity/emd_decision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace meshlearn::similarity {
namespace {

TEST(AcceptPeerTest, AcceptsIffTheExcessIsBelowEpsilon) {
  EXPECT_TRUE(AcceptPeer(0.15, 0.1));         // excess 0.05 < 0.1
  EXPECT_TRUE(AcceptPeer(0.05, 0.1));         // below the reference: same distribution
  EXPECT_FALSE(AcceptPeer(0.3, 0.1));         // excess 0.2
  EXPECT_FALSE(AcceptPeer(0.5, 0.25, 0.25));  // exactly epsilon: strict
  EXPECT_TRUE(AcceptPeer(0.5, 0.25, 0.3));
  EXPECT_FALSE(AcceptPeer(0.5, 0.25, 0.2));
  EXPECT_EQ(kDefaultEmdAcceptance, 0.1);
}

TEST(AcceptPeerTest, NanRejects) {
  EXPECT_FALSE(AcceptPeer(NAN, 0.1));
  EXPECT_FALSE(AcceptPeer(0.1, NAN));
  EXPECT_FALSE(AcceptPeer(0.1, 0.1, NAN));
}

TEST(AutomaticThresholdTest, SitsInTheLargestGapOfTheSortedLogRatios) {
  // Three peers near rho = 1 (one cluster), then clusters at 2.0-2.4 and 4.0-4.4: on a linear
  // scale the widest gap (2.4 -> 4.0) would cut off the far cluster; on the log scale the widest
  // is 1.1 -> 2.0, the own cluster's.
  const std::vector<double> ratios = {2.0, 0.9, 4.4, 1.1, 2.4, 1.0, 4.0};
  EXPECT_NEAR(AutomaticThreshold(ratios), std::sqrt(1.1 * 2.0), 1e-12);
  // The threshold scales with the ratios, and order does not matter.
  const std::vector<double> scaled = {8.8, 2.0, 4.0, 2.2, 1.8, 4.8, 8.0};
  EXPECT_NEAR(AutomaticThreshold(scaled), std::sqrt(2.2 * 4.0), 1e-12);
  // Non-finite and non-positive values are left out.
  const std::vector<double> with_bad = {2.0, NAN, 0.9, INFINITY, 1.1, 0.0, -3.0};
  EXPECT_NEAR(AutomaticThreshold(with_bad), std::sqrt(1.1 * 2.0), 1e-12);
}

TEST(AutomaticThresholdTest, TheFloorKeepsARowOfOneDistributionWhole) {
  // Noise only: the widest log gap (0.8 -> 1.05) lies below the floor.
  const std::vector<double> noise = {0.8, 1.05, 1.1, 1.2};
  EXPECT_DOUBLE_EQ(AutomaticThreshold(noise), kAutomaticRatioFloor);
  for (double r : noise) EXPECT_LT(r, AutomaticThreshold(noise));
  // Fewer than two values have no gap: the floor.
  EXPECT_DOUBLE_EQ(AutomaticThreshold(std::vector<double>{3.0}), kAutomaticRatioFloor);
  EXPECT_DOUBLE_EQ(AutomaticThreshold(std::vector<double>{}), kAutomaticRatioFloor);
}

TEST(LeaningColumnsTest, JaccardIsTheSharedShareOfTheUnion) {
  LeaningColumns columns(5);
  // K_0 = {0, 1, 2, 3}, K_1 = {1, 2, 3, 4}: 3 shared of 5.
  for (size_t k : {1, 2, 3}) columns.Lean(k, 0);
  for (size_t k : {2, 3, 4}) columns.Lean(k, 1);
  EXPECT_DOUBLE_EQ(columns.Jaccard(0, 1), 3.0 / 5.0);
  EXPECT_DOUBLE_EQ(columns.Jaccard(1, 0), 3.0 / 5.0);
  EXPECT_DOUBLE_EQ(columns.Jaccard(0, 0), 1.0);
  // Untouched columns hold only their own node.
  EXPECT_DOUBLE_EQ(columns.Jaccard(2, 3), 0.0);
  EXPECT_DOUBLE_EQ(columns.Jaccard(0, 4), 0.0);
  // Leaning twice changes nothing.
  columns.Lean(1, 0);
  EXPECT_DOUBLE_EQ(columns.Jaccard(0, 1), 3.0 / 5.0);
}

TEST(LeaningColumnsTest, NodesPastOneWordCount) {
  // 130 nodes take three 64-bit words per column; node 129 leans to 0 and to 1.
  LeaningColumns columns(130);
  columns.Lean(129, 0);
  columns.Lean(129, 1);
  columns.Lean(64, 1);
  // K_0 = {0, 129}, K_1 = {1, 64, 129}: 1 shared of 4.
  EXPECT_DOUBLE_EQ(columns.Jaccard(0, 1), 1.0 / 4.0);
}

TEST(LeaningColumnsTest, ColumnsOfOneClusterAgreeWhereARowSplitAtTheWrongGap) {
  // Clusters {0,1,2,3} and {4,5,6}. Node 0's row split too low: it leans only to 1. Node 4's
  // row split too high: it leans to everyone. The columns K_x = {x} ∪ {k : k leans to x} still
  // put 0 with 2 and 3, and keep 4 away from 0.
  LeaningColumns columns(7);
  auto lean_to = [&](size_t from, std::initializer_list<size_t> to) {
    for (size_t x : to) columns.Lean(from, x);
  };
  lean_to(0, {1});
  for (size_t k : {1, 2, 3}) lean_to(k, {0, 1, 2, 3});
  lean_to(4, {0, 1, 2, 3, 5, 6});
  for (size_t k : {5, 6}) lean_to(k, {4, 5, 6});
  // K_0 = {0, 1, 2, 3, 4}, K_2 = {2, 1, 3, 4}, K_4 = {4, 5, 6}.
  EXPECT_GE(columns.Jaccard(0, 2), kColumnAgreement);
  EXPECT_LT(columns.Jaccard(0, 4), kColumnAgreement);
}

TEST(EmdScoreTest, IsMinusThePositiveExcess) {
  EXPECT_EQ(EmdScore(0.3), -0.3);
  EXPECT_EQ(EmdScore(0.0), 0.0);
  EXPECT_EQ(EmdScore(-0.05), 0.0);
}

TEST(EmdMetricTest, ScoresTheExchangedExcess) {
  auto metric = MakeSimilarityMetric(MetricKind::kEmd);
  ASSERT_TRUE(metric);
  EXPECT_EQ(metric->Name(), "emd");
  EXPECT_FALSE(metric->Needs().weights);
  EXPECT_TRUE(metric->Needs().exchanged_score);
  EXPECT_FALSE(metric->Needs().initial_weights);
  EXPECT_FALSE(metric->Needs().own_data_loss);
  MetricInput input;  // no weights at all: the metric must not read them
  input.exchanged_score = 0.25;
  EXPECT_EQ(*metric->Score(input), -0.25);
  input.exchanged_score = -0.01;
  Result<double> same = metric->Score(input);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, 0.0);
  EXPECT_FALSE(std::signbit(*same));
}

TEST(EmdMetricTest, MissingOrNonFiniteExchangedScoreIsRejected) {
  EmdMetric metric;
  MetricInput input;
  EXPECT_EQ(metric.Score(input).status().code(), ErrorCode::kInvalidArgument);
  for (double bad : {NAN, INFINITY, -INFINITY}) {
    input.exchanged_score = bad;
    EXPECT_EQ(metric.Score(input).status().code(), ErrorCode::kNonFinite) << bad;
  }
}

}  // namespace
}  // namespace meshlearn::similarity
