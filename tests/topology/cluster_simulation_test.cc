// The clustering policies of issue 9 from one node's point of view: 15 peers in 3 clusters, whose
// update directions are noisy cluster directions; the node learns peer ids by gossip, meets peers
// through its ClusterSampler (uniform until it clusters), feeds their directions and its own to a
// FLIC (`louvain`) or OCFL (`temperature`) policy every round, and hands the policy's cluster to
// the sampler. No sockets, no torch.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "similarity/cluster_policy.h"
#include "similarity/clustering.h"
#include "topology/baseline_samplers.h"
#include "topology/sampler_factory.h"

namespace meshlearn::topology {
namespace {

constexpr size_t kDim = 64;
constexpr int kRounds = 40;
constexpr size_t kSampled = 4;

std::string PeerId(size_t n) {
  std::string id(n < 10 ? "peer-0" : "peer-");
  id += std::to_string(n);
  return id;
}

struct Outcome {
  double ari = 0;
  bool mates_exact = false;
  std::optional<int64_t> first_clustered_round;
  size_t met_at_clustering = 0;
  int draws_after = 0;
  int in_cluster_after = 0;
};

// Runs one node (peer-00) among peers in clusters of `sizes` for kRounds rounds with the policy
// `config` (self filled in). A peer's direction at round t is its cluster's direction plus
// Gaussian noise of standard deviation σ(t) = max(0.6, 2 · 0.85^t) per coordinate: noisy while
// training starts, settling later, so OCFL's temperature first falls.
Outcome RunNode(const std::vector<int>& sizes, similarity::ClusterPolicyConfig config,
                uint64_t seed) {
  std::mt19937_64 world(seed);
  std::normal_distribution<float> gauss(0, 1);
  std::vector<int> truth;
  for (size_t c = 0; c < sizes.size(); ++c) truth.insert(truth.end(), sizes[c], int(c));
  std::shuffle(truth.begin(), truth.end(), world);  // clusters are not id ranges
  const size_t n = truth.size();
  std::vector<std::vector<float>> centres(sizes.size(), std::vector<float>(kDim));
  for (auto& centre : centres) {
    for (float& x : centre) x = gauss(world);
  }
  const auto direction = [&](size_t peer, int round) {
    const float sigma = std::max(0.6f, 2.0f * std::pow(0.85f, static_cast<float>(round)));
    std::vector<float> d = centres[truth[peer]];
    for (float& x : d) x += sigma * gauss(world);
    return d;
  };

  config.self = PeerId(0);
  auto policy = similarity::MakeClusterPolicy(config);
  EXPECT_TRUE(policy.ok()) << policy.status().ToString();
  SamplerConfig sampler_config;
  sampler_config.sampler = config.policy == similarity::ClusterPolicyKind::kLouvain
                               ? SamplerKind::kLouvain
                               : SamplerKind::kTemperature;
  sampler_config.self = PeerId(0);
  auto made = MakePeerSampler(sampler_config);
  EXPECT_TRUE(made.ok()) << made.status().ToString();
  auto& sampler = dynamic_cast<ClusterSampler&>(**made);

  // Gossip: the node starts knowing 3 peers and learns 2 more ids per round, in random order.
  std::vector<size_t> unknown;
  for (size_t p = 1; p < n; ++p) unknown.push_back(p);
  std::shuffle(unknown.begin(), unknown.end(), world);
  Rng rng(seed * 7919 + 1);
  Outcome outcome;
  for (int round = 0; round < kRounds; ++round) {
    for (int learnt = 0; learnt < (round == 0 ? 3 : 2) && !unknown.empty(); ++learnt) {
      EXPECT_TRUE(sampler.AddPeer(PeerId(unknown.back())).ok());
      unknown.pop_back();
    }
    for (const SampledPeer& drawn : sampler.Sample(kSampled, {}, rng)) {
      const size_t peer = std::stoul(drawn.peer.substr(5));
      if ((*policy)->clustered()) {
        ++outcome.draws_after;
        outcome.in_cluster_after += truth[peer] == truth[0] ? 1 : 0;
      }
      EXPECT_TRUE((*policy)->ObserveUpdate(drawn.peer, direction(peer, round)).ok());
    }
    EXPECT_TRUE((*policy)->ObserveUpdate(PeerId(0), direction(0, round)).ok());
    Result<bool> changed = (*policy)->EndRound(round);
    EXPECT_TRUE(changed.ok()) << changed.status().ToString();
    if (changed.ok() && *changed) {
      sampler.SetCluster((*policy)->ClusterMates());
      if (!outcome.first_clustered_round) {
        outcome.first_clustered_round = round;
        outcome.met_at_clustering = (*policy)->directions().size();
      }
    }
  }

  // Peers absent from the partition count as singletons.
  std::map<std::string, int> label;
  for (const auto& [id, l] : (*policy)->Partition()) label[id] = l;
  std::vector<int> predicted(n);
  std::vector<std::string> true_mates;
  for (size_t p = 0; p < n; ++p) {
    const auto found = label.find(PeerId(p));
    predicted[p] = found != label.end() ? found->second : -1 - static_cast<int>(p);
    if (p != 0 && truth[p] == truth[0]) true_mates.push_back(PeerId(p));
  }
  outcome.ari = similarity::AdjustedRandIndex(truth, predicted);
  outcome.mates_exact = (*policy)->ClusterMates() == true_mates;
  return outcome;
}

struct Case {
  std::string name;
  similarity::ClusterPolicyConfig config;
};

// gtest prints the case by its name instead of its bytes.
void PrintTo(const Case& c, std::ostream* out) { *out << c.name; }

std::vector<Case> Cases() {
  similarity::ClusterPolicyConfig louvain;
  louvain.policy = similarity::ClusterPolicyKind::kLouvain;
  louvain.cluster_after = 20;
  louvain.recluster_every = 5;
  similarity::ClusterPolicyConfig temperature;
  temperature.policy = similarity::ClusterPolicyKind::kTemperature;
  temperature.cluster_after = 20;
  temperature.algorithm = similarity::ClusterAlgorithm::kAgglomerative;
  temperature.linkage = similarity::Linkage::kAverage;
  temperature.distance_threshold = 0.6;
  similarity::ClusterPolicyConfig temperature_louvain = temperature;
  temperature_louvain.algorithm = similarity::ClusterAlgorithm::kLouvain;
  return {{"louvain", louvain},
          {"temperature", temperature},
          {"temperature_louvain", temperature_louvain}};
}

class ClusterSimulationTest : public ::testing::TestWithParam<Case> {};

TEST_P(ClusterSimulationTest, RecoversTheClustersAndThenSamplesOnlyWithinItsOwn) {
  for (const std::vector<int>& sizes : {std::vector<int>{5, 5, 5}, std::vector<int>{3, 7, 5}}) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      const Outcome outcome = RunNode(sizes, GetParam().config, seed);
      std::printf(
          "%s %d/%d/%d seed %d: first clustered at round %d knowing %zu of 15, ARI %.3f, mates %s, "
          "in-cluster draws after %d/%d\n",
          GetParam().name.c_str(), sizes[0], sizes[1], sizes[2], int(seed),
          int(outcome.first_clustered_round.value_or(-1)), outcome.met_at_clustering, outcome.ari,
          outcome.mates_exact ? "exact" : "WRONG", outcome.in_cluster_after, outcome.draws_after);
      ASSERT_TRUE(outcome.first_clustered_round.has_value());
      EXPECT_GE(outcome.ari, 0.9) << "seed " << seed;
      EXPECT_TRUE(outcome.mates_exact) << "seed " << seed;
      EXPECT_GT(outcome.draws_after, 0);
      EXPECT_EQ(outcome.in_cluster_after, outcome.draws_after) << "seed " << seed;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, ClusterSimulationTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace meshlearn::topology
