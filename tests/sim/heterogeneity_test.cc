// The heterogeneity of a simulated mesh (sim/heterogeneity.h): each draw is deterministic from the
// seed and the node's id, has the distribution it names, and a node's own values replace it.
#include "sim/heterogeneity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace meshlearn::sim {
namespace {

std::vector<std::string> Ids(int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(std::to_string(i));
  return ids;
}

std::vector<NodeProfile> Profiles(const NetworkModel& network, int n, uint64_t seed = 1) {
  auto profiles = DrawProfiles(network, Ids(n), seed);
  EXPECT_TRUE(profiles.ok()) << profiles.status().ToString();
  return profiles.ok() ? *profiles : std::vector<NodeProfile>{};
}

TEST(Heterogeneity, WithoutKeysEveryNodeHasTheMeshsLinkAndFactorOne) {
  NetworkModel network;
  network.latency_s = 0.005;
  network.bandwidth_bytes_per_s = 1e6;
  for (const NodeProfile& p : Profiles(network, 5)) {
    EXPECT_EQ(p.compute_factor, 1);
    EXPECT_EQ(LinkSeconds(p, p, 12345), network.TransferSeconds(12345));
  }
}

TEST(Heterogeneity, LogNormalComputeFactorsHaveMedianOneAndTheirSpread) {
  NetworkModel network;
  network.compute = {SpreadKind::kLogNormal, 0.5, 1, 1};
  std::vector<double> logs;
  for (const NodeProfile& p : Profiles(network, 2000)) logs.push_back(std::log(p.compute_factor));
  std::sort(logs.begin(), logs.end());
  double mean = 0, square = 0;
  for (double v : logs) mean += v / logs.size();
  for (double v : logs) square += (v - mean) * (v - mean) / logs.size();
  EXPECT_NEAR(logs[logs.size() / 2], 0.0, 0.05) << "median factor 1";
  EXPECT_NEAR(std::sqrt(square), 0.5, 0.03) << "sigma of the log";
}

TEST(Heterogeneity, ADrawDependsOnTheSeedAndTheNodesIdNotOnTheOtherNodes) {
  NetworkModel network;
  network.compute = {SpreadKind::kLogNormal, 1, 1, 1};
  const std::vector<NodeProfile> ten = Profiles(network, 10);
  const std::vector<NodeProfile> twenty = Profiles(network, 20);
  for (size_t i = 0; i < ten.size(); ++i)
    EXPECT_EQ(ten[i].compute_factor, twenty[i].compute_factor);
  const std::vector<NodeProfile> other_seed = Profiles(network, 10, 2);
  EXPECT_NE(ten[0].compute_factor, other_seed[0].compute_factor);
  EXPECT_NE(ten[0].compute_factor, ten[1].compute_factor);
}

TEST(Heterogeneity, UniformLatencyAndBandwidthFactorsStayInTheirRange) {
  NetworkModel network;
  network.latency_s = 0.01;
  network.bandwidth_bytes_per_s = 1e6;
  network.latency = {SpreadKind::kUniform, 0, 1, 4};
  network.bandwidth = {SpreadKind::kUniform, 0, 0.5, 1};
  double lowest = 1e9, highest = 0;
  for (const NodeProfile& p : Profiles(network, 500)) {
    EXPECT_GE(p.latency_s, 0.01);
    EXPECT_LE(p.latency_s, 0.04);
    EXPECT_GE(p.bandwidth_bytes_per_s, 0.5e6);
    EXPECT_LE(p.bandwidth_bytes_per_s, 1e6);
    lowest = std::min(lowest, p.latency_s);
    highest = std::max(highest, p.latency_s);
  }
  EXPECT_LT(lowest, 0.0115);
  EXPECT_GT(highest, 0.0385);
}

TEST(Heterogeneity, SlowNodesAreTheCountOrShareChosenFromTheSeed) {
  NetworkModel network;
  network.slow = {2, 0, 10};
  auto slow_ones = [](const std::vector<NodeProfile>& profiles) {
    std::vector<size_t> slow;
    for (size_t i = 0; i < profiles.size(); ++i) {
      if (profiles[i].compute_factor == 10)
        slow.push_back(i);
      else
        EXPECT_EQ(profiles[i].compute_factor, 1);
    }
    return slow;
  };
  const std::vector<size_t> two = slow_ones(Profiles(network, 12));
  EXPECT_EQ(two.size(), 2u);
  EXPECT_EQ(slow_ones(Profiles(network, 12)), two) << "the same seed, the same nodes";
  network.slow = {0, 0.2, 10};
  EXPECT_EQ(slow_ones(Profiles(network, 12)).size(), 2u) << "round(0.2 x 12)";
  network.slow = {13, 0, 10};
  auto refused = DrawProfiles(network, Ids(12), 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("slow.count = 13"), std::string::npos);
}

TEST(Heterogeneity, ANodesOwnValuesReplaceTheDrawnOnes) {
  NetworkModel network;
  network.latency_s = 0.005;
  network.compute = {SpreadKind::kLogNormal, 1, 1, 1};
  network.slow = {12, 0, 10};
  network.nodes.push_back({"3", 100.0, 0.05, 1e5});
  const std::vector<NodeProfile> p = Profiles(network, 12);
  EXPECT_EQ(p[3].compute_factor, 100);
  EXPECT_EQ(p[3].latency_s, 0.05);
  EXPECT_EQ(p[3].bandwidth_bytes_per_s, 1e5);
  EXPECT_NE(p[4].compute_factor, 100);
  network.nodes.push_back({"12", 2.0, {}, {}});
  auto refused = DrawProfiles(network, Ids(12), 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'12'"), std::string::npos);
}

TEST(Heterogeneity, ALinkTakesTheHigherLatencyAndTheLowerBandwidth) {
  NodeProfile fast{1, 0.001, 1e6};
  NodeProfile slow{1, 0.1, 1e3};
  NodeProfile unlimited{1, 0, 0};
  EXPECT_DOUBLE_EQ(LinkSeconds(fast, slow, 1000), 0.1 + 1.0);
  EXPECT_DOUBLE_EQ(LinkSeconds(slow, fast, 1000), 0.1 + 1.0);
  EXPECT_DOUBLE_EQ(LinkSeconds(fast, unlimited, 1000), 0.001 + 0.001);
  EXPECT_DOUBLE_EQ(LinkSeconds(unlimited, unlimited, 1000), 0);
}

TEST(Heterogeneity, ATraceGivesEachNodesPeriodsInTimeOrder) {
  NetworkModel network;
  network.churn_trace = {{"1", 50, 60}, {"1", 10, 20}, {"2", 5, 6}};
  auto plan = ChurnPlan::Make(network, Ids(3), 1);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->Churns());
  EXPECT_FALSE(plan->NextAway(0, 0));
  EXPECT_EQ(plan->NextAway(1, 0)->leave_s, 10);
  EXPECT_EQ(plan->NextAway(1, 20)->leave_s, 50);
  EXPECT_FALSE(plan->NextAway(1, 60));
  network.churn_trace.push_back({"7", 1, 2});
  auto refused = ChurnPlan::Make(network, Ids(3), 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'7'"), std::string::npos);
}

TEST(Heterogeneity, DrawnChurnAlternatesExponentialPeriodsForItsShareOfNodes) {
  NetworkModel network;
  network.churn = {1.0 / 3, 100, 20};
  auto plan = ChurnPlan::Make(network, Ids(30), 1);
  ASSERT_TRUE(plan.ok());
  int churning = 0;
  double up = 0, down = 0;
  int periods = 0;
  for (size_t i = 0; i < 30; ++i) {
    if (!plan->NextAway(i, 0)) continue;
    ++churning;
    double t = 0;
    for (int k = 0; k < 200; ++k) {
      std::optional<Away> away = plan->NextAway(i, t);
      ASSERT_TRUE(away);
      EXPECT_GE(away->leave_s, t);
      EXPECT_GT(away->return_s, away->leave_s);
      up += away->leave_s - t;
      down += away->return_s - away->leave_s;
      ++periods;
      t = away->return_s;
    }
  }
  EXPECT_EQ(churning, 10) << "a third of 30 nodes";
  EXPECT_NEAR(up / periods, 100, 10);
  EXPECT_NEAR(down / periods, 20, 2);
  auto again = ChurnPlan::Make(network, Ids(30), 1);
  for (size_t i = 0; i < 30; ++i) {
    std::optional<Away> a = plan->NextAway(i, 500), b = again->NextAway(i, 500);
    ASSERT_EQ(a.has_value(), b.has_value());
    if (a) {
      EXPECT_EQ(a->leave_s, b->leave_s);
    }
  }
}

}  // namespace
}  // namespace meshlearn::sim
