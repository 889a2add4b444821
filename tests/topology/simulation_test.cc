// The in-memory mesh of issue 4: K = 30 nodes in 3 clusters, no sockets, no torch. Each node's
// "model" is a vector that local training pulls towards its cluster's centre; every round it
// samples m = 3 peers, scores their published vectors with a real metric, updates its sampler and
// averages the sampled vectors into its own (FedAvg over vectors), so sampling feeds back into
// the models that are scored next round.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "similarity/metric.h"
#include "topology/sampler.h"
#include "topology/sampler_factory.h"

namespace meshlearn::topology {
namespace {

constexpr int kNodes = 30;
constexpr int kClusters = 3;
constexpr int kRounds = 30;
constexpr size_t kSampled = 3;
constexpr size_t kDim = 64;
// Samples of the last kCountedRounds rounds are counted.
constexpr int kCountedRounds = 10;

struct SimNode {
  std::string id;
  int cluster = 0;
  std::vector<float> weights;
  std::unique_ptr<PeerSampler> sampler;
  Rng rng;
};

struct SimResult {
  int samples = 0;
  int in_cluster = 0;
  // Samples of the poisoned node (counted rounds) and its largest p_ij at the end, over honest i.
  int poisoned_samples = 0;
  double poisoned_max_probability = 0;
  double InClusterRate() const { return samples == 0 ? 0 : double(in_cluster) / samples; }
};

std::string NodeId(int n) { return "node-" + std::to_string(n); }

SamplerConfig Config(SamplerKind sampler, double tau = 30) {
  SamplerConfig config;
  config.sampler = sampler;
  config.dac.tau = tau;
  return config;
}

// Runs the mesh with `config` (self and clusters filled in per node) and the metric `metric_kind`.
// Node `poisoned` (if >= 0) publishes its weights sign-flipped and a score row that rates every
// node 1; its samples count as out-of-cluster.
SimResult RunMesh(SamplerConfig config, similarity::MetricKind metric_kind, uint64_t seed,
                  int poisoned = -1) {
  std::mt19937_64 world(seed);
  std::normal_distribution<float> gauss(0, 1);
  std::vector<std::vector<float>> centres(kClusters, std::vector<float>(kDim));
  for (auto& centre : centres) {
    for (float& x : centre) {
      x = gauss(world);
    }
  }
  for (int n = 0; n < kNodes; ++n) config.clusters.emplace_back(NodeId(n), n % kClusters);

  std::vector<SimNode> nodes(kNodes);
  for (int n = 0; n < kNodes; ++n) {
    SimNode& node = nodes[n];
    node.id = NodeId(n);
    node.cluster = n % kClusters;
    node.rng.seed(seed * 1000 + n);
    for (float x : centres[node.cluster]) node.weights.push_back(x + 0.5f * gauss(world));
    config.self = node.id;
    auto sampler = MakePeerSampler(config);
    EXPECT_TRUE(sampler.ok()) << sampler.status().ToString();
    node.sampler = std::move(sampler).value();
    for (int peer = 0; peer < kNodes; ++peer) {
      if (peer != n) {
        EXPECT_TRUE(node.sampler->AddPeer(NodeId(peer)).ok());
      }
    }
  }
  std::unique_ptr<similarity::SimilarityMetric> metric =
      similarity::MakeSimilarityMetric(metric_kind);

  SimResult result;
  for (int round = 1; round <= kRounds; ++round) {
    // Synchronous rounds: every reply comes from the snapshot published after round - 1.
    std::vector<std::vector<float>> published;
    std::vector<ScoreRow> rows;
    for (const SimNode& node : nodes) {
      published.push_back(node.weights);
      rows.push_back(node.sampler->Scores());
    }
    if (poisoned >= 0) {
      for (float& w : published[poisoned]) w = -w;
      for (ScoreEntry& entry : rows[poisoned]) entry.score = 1;
    }
    for (SimNode& node : nodes) {
      const std::vector<SampledPeer> sampled = node.sampler->Sample(kSampled, {}, node.rng);
      std::vector<PeerObservation> observations;
      std::vector<float> merged = node.weights;
      for (const SampledPeer& drawn : sampled) {
        const int j = std::stoi(drawn.peer.substr(5));
        if (round > kRounds - kCountedRounds) {
          ++result.samples;
          result.in_cluster += nodes[j].cluster == node.cluster && j != poisoned ? 1 : 0;
          result.poisoned_samples += j == poisoned ? 1 : 0;
        }
        similarity::MetricInput input;
        input.own = node.weights;
        input.peer = published[j];
        Result<double> score = metric->Score(input);
        EXPECT_TRUE(score.ok()) << score.status().ToString();
        observations.push_back({drawn.peer, *score, rows[j]});
        for (size_t d = 0; d < kDim; ++d) merged[d] += published[j][d];
      }
      EXPECT_TRUE(node.sampler->Update(round, observations).ok());
      // FedAvg with equal data sizes, then "local training": a step towards the cluster centre.
      for (size_t d = 0; d < kDim; ++d) {
        const float average = merged[d] / static_cast<float>(sampled.size() + 1);
        node.weights[d] =
            average + 0.5f * (centres[node.cluster][d] - average) + 0.05f * gauss(world);
      }
    }
  }
  for (const SimNode& node : nodes) {
    if (poisoned < 0 || node.id == NodeId(poisoned)) continue;
    result.poisoned_max_probability = std::max(result.poisoned_max_probability,
                                               node.sampler->Find(NodeId(poisoned))->probability);
  }
  return result;
}

TEST(SimulationTest, DacWithCosineWeightsSamplesInClusterAfterTwentyRounds) {
  for (uint64_t seed : {1, 2, 3}) {
    const SimResult result =
        RunMesh(Config(SamplerKind::kDac, 30), similarity::MetricKind::kCosWeights, seed);
    EXPECT_EQ(result.samples, kNodes * int{kSampled} * kCountedRounds);
    EXPECT_GE(result.InClusterRate(), 0.90) << "seed " << seed;
    RecordProperty("in_cluster_rate_seed_" + std::to_string(seed),
                   std::to_string(result.InClusterRate()));
    std::printf("dac cos_weights seed %d: in-cluster %.3f\n", int(seed), result.InClusterRate());
  }
}

TEST(SimulationTest, DacStarvesASignFlippingPeer) {
  // DESIGN.md "Reliability": a poisoned peer must end with near-zero sampling probability. Node 0
  // sends its weights negated (cosine about -1 with its cluster) and a row that vouches for all.
  const SimResult result = RunMesh(Config(SamplerKind::kDac, 30),
                                   similarity::MetricKind::kCosWeights, 1, /*poisoned=*/0);
  EXPECT_GE(result.InClusterRate(), 0.90);
  EXPECT_LE(result.poisoned_samples, result.samples / 100);
  EXPECT_LT(result.poisoned_max_probability, 1e-4);
  std::printf("dac with a poisoned peer: in-cluster %.3f, poisoned sampled %d of %d, max p %.2g\n",
              result.InClusterRate(), result.poisoned_samples, result.samples,
              result.poisoned_max_probability);
}

TEST(SimulationTest, RandomSamplesInClusterAboutNineInTwentyNine) {
  for (uint64_t seed : {1, 2, 3}) {
    const SimResult result =
        RunMesh(Config(SamplerKind::kRandom), similarity::MetricKind::kCosWeights, seed);
    EXPECT_EQ(result.samples, kNodes * int{kSampled} * kCountedRounds);
    // 9 of the 29 peers share a node's cluster: 31%.
    EXPECT_GE(result.InClusterRate(), 0.20) << "seed " << seed;
    EXPECT_LE(result.InClusterRate(), 0.45) << "seed " << seed;
    std::printf("random seed %d: in-cluster %.3f\n", int(seed), result.InClusterRate());
  }
}

TEST(SimulationTest, OracleSamplesOnlyInCluster) {
  const SimResult result =
      RunMesh(Config(SamplerKind::kOracle), similarity::MetricKind::kCosWeights, 1);
  EXPECT_EQ(result.samples, kNodes * int{kSampled} * kCountedRounds);
  EXPECT_EQ(result.in_cluster, result.samples);
}

TEST(SimulationTest, LocalSamplesNothing) {
  const SimResult result =
      RunMesh(Config(SamplerKind::kLocal), similarity::MetricKind::kCosWeights, 1);
  EXPECT_EQ(result.samples, 0);
}

}  // namespace
}  // namespace meshlearn::topology
