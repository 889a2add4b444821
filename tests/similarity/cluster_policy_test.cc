// The FLIC (`louvain`) and OCFL (`temperature`) clustering policies (similarity/cluster_policy.h):
// when they cluster and what they report. The mesh-level simulation is in
// tests/topology/cluster_simulation_test.cc.

#include "similarity/cluster_policy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

namespace meshlearn::similarity {
namespace {

// A unit direction in the plane at `degrees`.
std::vector<float> At(double degrees) {
  const double radians = degrees * std::numbers::pi / 180;
  return {static_cast<float>(std::cos(radians)), static_cast<float>(std::sin(radians))};
}

std::unique_ptr<ClusterPolicy> Make(ClusterPolicyConfig config) {
  config.self.assign(1, 'a');
  Result<std::unique_ptr<ClusterPolicy>> policy = MakeClusterPolicy(config);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  return policy.ok() ? std::move(policy).value() : nullptr;
}

ClusterPolicyConfig Louvain(int64_t cluster_after, int64_t recluster_every) {
  ClusterPolicyConfig config;
  config.policy = ClusterPolicyKind::kLouvain;
  config.cluster_after = cluster_after;
  config.recluster_every = recluster_every;
  return config;
}

TEST(LouvainPolicyTest, ClustersFromClusterAfterThenEveryReclusterEveryRounds) {
  auto policy = Make(Louvain(3, 2));
  ASSERT_TRUE(policy->ObserveUpdate("b", At(5)).ok());
  ASSERT_TRUE(policy->ObserveUpdate("c", At(180)).ok());
  // Own direction not yet known: no clustering even when due.
  EXPECT_FALSE(*policy->EndRound(3));
  ASSERT_TRUE(policy->ObserveUpdate("a", At(0)).ok());
  ASSERT_TRUE(policy->ObserveUpdate("d", At(175)).ok());
  EXPECT_FALSE(*policy->EndRound(2));
  EXPECT_FALSE(policy->ClusterMates().has_value());
  EXPECT_TRUE(policy->Partition().empty());

  EXPECT_TRUE(*policy->EndRound(3));
  EXPECT_EQ(policy->clustered_round(), 3);
  EXPECT_EQ(policy->ClusterMates(), (std::vector<std::string>{"b"}));
  EXPECT_EQ(policy->Partition(),
            (std::vector<std::pair<std::string, int>>{{"a", 0}, {"b", 0}, {"c", 1}, {"d", 1}}));

  // A peer met later is in no cluster until the next clustering, two rounds on.
  ASSERT_TRUE(policy->ObserveUpdate("e", At(3)).ok());
  EXPECT_FALSE(*policy->EndRound(4));
  EXPECT_EQ(policy->ClusterMates(), (std::vector<std::string>{"b"}));
  EXPECT_TRUE(*policy->EndRound(5));
  EXPECT_EQ(policy->ClusterMates(), (std::vector<std::string>{"b", "e"}));
  EXPECT_EQ(policy->Partition().size(), 5u);
}

TEST(LouvainPolicyTest, ReclusterEveryZeroClustersOnce) {
  auto policy = Make(Louvain(0, 0));
  ASSERT_TRUE(policy->ObserveUpdate("a", At(0)).ok());
  ASSERT_TRUE(policy->ObserveUpdate("b", At(180)).ok());
  EXPECT_TRUE(*policy->EndRound(0));
  EXPECT_EQ(policy->ClusterMates(), std::vector<std::string>{});  // alone in its community
  ASSERT_TRUE(policy->ObserveUpdate("c", At(1)).ok());
  for (int64_t round = 1; round < 50; ++round) EXPECT_FALSE(*policy->EndRound(round));
  EXPECT_EQ(policy->clustered_round(), 0);
}

ClusterPolicyConfig Temperature(int64_t cluster_after) {
  ClusterPolicyConfig config;
  config.policy = ClusterPolicyKind::kTemperature;
  config.cluster_after = cluster_after;
  config.distance_threshold = 0.3;
  return config;
}

// Rounds 1-3 of the temperature scenario: T is recorded, falls, and stays equal over the same
// nodes while a new peer arrives.
void FirstRounds(ClusterPolicy& policy) {
  ASSERT_TRUE(policy.ObserveUpdate("a", At(0)).ok());
  ASSERT_TRUE(policy.ObserveUpdate("b", At(20)).ok());
  ASSERT_TRUE(policy.ObserveUpdate("c", At(150)).ok());
  EXPECT_FALSE(*policy.EndRound(1));  // first evaluation: recorded only
  const double first = *policy.Temperature();
  // c turns towards a and b: both its distances shrink, T falls.
  ASSERT_TRUE(policy.ObserveUpdate("c", At(140)).ok());
  EXPECT_FALSE(*policy.EndRound(2));
  EXPECT_LT(*policy.Temperature(), first);
  // A new peer far from a raises T over all nodes, but over {a, b, c} nothing changed.
  ASSERT_TRUE(policy.ObserveUpdate("d", At(160)).ok());
  ASSERT_TRUE(policy.ObserveUpdate("b", At(20)).ok());  // the same direction again
  EXPECT_FALSE(*policy.EndRound(3));
  EXPECT_FALSE(policy.clustered());
}

TEST(TemperaturePolicyTest, ClustersOnceAtTheFirstRiseOverTheSameNodes) {
  auto policy = Make(Temperature(2));
  FirstRounds(*policy);
  // c turns away from a and b (its distance to d stays 1 − cos 20°): T rises.
  ASSERT_TRUE(policy->ObserveUpdate("c", At(180)).ok());
  EXPECT_TRUE(*policy->EndRound(4));
  EXPECT_EQ(policy->clustered_round(), 4);
  // Average linkage at 0.3: {a, b} and {c, d}, both pairs at 1 − cos 20° = 0.06.
  EXPECT_EQ(policy->ClusterMates(), (std::vector<std::string>{"b"}));
  EXPECT_EQ(policy->Partition(),
            (std::vector<std::pair<std::string, int>>{{"a", 0}, {"b", 0}, {"c", 1}, {"d", 1}}));
  // One shot: later rises change nothing.
  ASSERT_TRUE(policy->ObserveUpdate("b", At(100)).ok());
  EXPECT_FALSE(*policy->EndRound(5));
  EXPECT_EQ(policy->ClusterMates(), (std::vector<std::string>{"b"}));
}

TEST(TemperaturePolicyTest, ARiseBeforeClusterAfterDoesNotCount) {
  auto policy = Make(Temperature(5));
  FirstRounds(*policy);
  ASSERT_TRUE(policy->ObserveUpdate("c", At(180)).ok());
  EXPECT_FALSE(*policy->EndRound(4));  // rises, but before round 5
  EXPECT_FALSE(*policy->EndRound(5));  // no change since: equal, not a rise
  ASSERT_TRUE(policy->ObserveUpdate("d", At(200)).ok());
  EXPECT_TRUE(*policy->EndRound(6));  // d turns away from b: a rise at round 6
}

TEST(TemperaturePolicyTest, ARoundThatForgotANodeOnlyRecords) {
  auto policy = Make(Temperature(0));
  FirstRounds(*policy);
  ASSERT_TRUE(policy->Forget("d").ok());
  ASSERT_TRUE(policy->ObserveUpdate("c", At(180)).ok());
  EXPECT_FALSE(*policy->EndRound(4));
  ASSERT_TRUE(policy->ObserveUpdate("c", At(190)).ok());
  EXPECT_TRUE(*policy->EndRound(5));
}

TEST(TemperaturePolicyTest, LouvainAsTheClusteringAlgorithm) {
  ClusterPolicyConfig config = Temperature(0);
  config.algorithm = ClusterAlgorithm::kLouvain;
  auto policy = Make(config);
  FirstRounds(*policy);
  ASSERT_TRUE(policy->ObserveUpdate("c", At(180)).ok());
  EXPECT_TRUE(*policy->EndRound(4));
  EXPECT_EQ(policy->ClusterMates(), (std::vector<std::string>{"b"}));
}

TEST(ClusterPolicyFactoryTest, NamesAndBadOptions) {
  EXPECT_EQ(Make(Louvain(0, 1))->Name(), "louvain");
  EXPECT_EQ(Make(Louvain(0, 1))->Temperature(), std::nullopt);
  EXPECT_EQ(Make(Temperature(0))->Name(), "temperature");
  EXPECT_EQ(NamesOf(ClusterAlgorithmNames()),
            (std::vector<std::string>{"agglomerative", "louvain"}));
  EXPECT_EQ(NamesOf(LinkageNames()), (std::vector<std::string>{"average", "complete", "single"}));
  EXPECT_FALSE(ValueNamed(LinkageNames(), "ward").has_value());
  const auto code = [](ClusterPolicyConfig config) {
    return MakeClusterPolicy(config).status().code();
  };
  ClusterPolicyConfig config;
  config.self = "a";
  config.policy = ClusterPolicyKind::kTemperature;
  config.linkage = Linkage::kSingle;
  config.distance_threshold = 0;
  EXPECT_EQ(code(config), ErrorCode::kInvalidArgument);
  config.distance_threshold = 0.3;
  config.cluster_after = -1;
  EXPECT_EQ(code(config), ErrorCode::kInvalidArgument);
  config.cluster_after = 0;
  config.self = "";
  EXPECT_EQ(code(config), ErrorCode::kInvalidArgument);
  config.self = "a";
  config.policy = ClusterPolicyKind::kLouvain;
  config.recluster_every = -2;
  EXPECT_EQ(code(config), ErrorCode::kInvalidArgument);
}

TEST(ClusterPolicyTest, RejectedDirectionsChangeNothing) {
  auto policy = Make(Louvain(0, 1));
  ASSERT_TRUE(policy->ObserveUpdate("a", At(0)).ok());
  EXPECT_EQ(policy->ObserveUpdate("b", std::vector<float>{NAN, 1}).code(), ErrorCode::kNonFinite);
  EXPECT_EQ(policy->ObserveUpdate("b", std::vector<float>{1, 2, 3}).code(),
            ErrorCode::kLayoutMismatch);
  EXPECT_EQ(policy->directions().size(), 1u);
  EXPECT_TRUE(*policy->EndRound(0));
  EXPECT_EQ(policy->ClusterMates(), std::vector<std::string>{});
}

}  // namespace
}  // namespace meshlearn::similarity
