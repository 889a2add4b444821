// The EMD-CFL decision rule and the `emd` metric (similarity/emd_decision.h; DESIGN.md "EMD
// embedding exchange", step 4).

#include "similarity/emd_decision.h"

#include <gtest/gtest.h>

#include <cmath>
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

TEST(AutomaticEpsilonTest, SitsInTheLargestGapOfTheSortedExcess) {
  // Three peers near 0 (one cluster), three far: the largest gap is 0.003 -> 0.012.
  const std::vector<double> excess = {0.012, -0.001, 0.003, 0.015, 0.001, 0.020};
  EXPECT_DOUBLE_EQ(AutomaticEpsilon(excess, 0.01), (0.003 + 0.012) / 2);
  // The gap does not depend on the order nor on the scale of the values.
  const std::vector<double> scaled = {0.12, 0.03, 0.15, 0.20, -0.01, 0.01};
  EXPECT_DOUBLE_EQ(AutomaticEpsilon(scaled, 0.1), (0.03 + 0.12) / 2);
  // Non-finite values are left out.
  const std::vector<double> with_nan = {0.012, NAN, 0.003, INFINITY, 0.001};
  EXPECT_DOUBLE_EQ(AutomaticEpsilon(with_nan, 0.01), (0.003 + 0.012) / 2);
}

TEST(AutomaticEpsilonTest, TheFloorKeepsARowOfOneDistributionWhole) {
  // Noise only: the largest gap (0.001 -> 0.003) lies below the floor 0.25 * 0.02 = 0.005.
  const std::vector<double> noise = {0.001, 0.003, 0.0035, -0.0005};
  EXPECT_DOUBLE_EQ(AutomaticEpsilon(noise, 0.02), kAutomaticEpsilonFloor * 0.02);
  for (double x : noise) EXPECT_TRUE(AcceptPeer(x, 0, AutomaticEpsilon(noise, 0.02)));
  // Fewer than two values have no gap: the floor.
  EXPECT_DOUBLE_EQ(AutomaticEpsilon(std::vector<double>{0.5}, 0.02), 0.005);
  EXPECT_DOUBLE_EQ(AutomaticEpsilon(std::vector<double>{}, 0.02), 0.005);
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
