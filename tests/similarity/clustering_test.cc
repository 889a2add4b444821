// The clustering helpers of similarity/clustering.h: clusters as identical neighbourhoods, the
// adjusted Rand index, Louvain, agglomerative clustering and the clustering temperature.

#include "similarity/clustering.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace meshlearn::similarity {
namespace {

double Ari(const std::vector<int>& truth, const std::vector<int>& predicted) {
  return AdjustedRandIndex(truth, predicted);
}

TEST(AdjustedRandIndexTest, ScikitLearnDocumentedExamples) {
  EXPECT_DOUBLE_EQ(Ari({0, 0, 1, 1}, {0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(Ari({0, 0, 1, 1}, {1, 1, 0, 0}), 1.0);
  EXPECT_NEAR(Ari({0, 0, 1, 2}, {0, 0, 1, 1}), 0.5714285714285714, 1e-12);
  EXPECT_NEAR(Ari({0, 0, 1, 1}, {0, 0, 1, 2}), 0.5714285714285714, 1e-12);
  EXPECT_DOUBLE_EQ(Ari({0, 0, 0, 0}, {0, 1, 2, 3}), 0.0);
  EXPECT_NEAR(Ari({0, 0, 1, 1}, {0, 1, 0, 1}), -0.5, 1e-12);
}

TEST(AdjustedRandIndexTest, DegenerateCasesFollowScikitLearn) {
  EXPECT_DOUBLE_EQ(Ari({5, 5, 5}, {2, 2, 2}), 1.0);  // both a single cluster
  EXPECT_DOUBLE_EQ(Ari({0, 1, 2}, {7, 8, 9}), 1.0);  // both all singletons
  EXPECT_DOUBLE_EQ(Ari({}, {}), 1.0);                // nothing to compare
  EXPECT_DOUBLE_EQ(Ari({3}, {4}), 1.0);
  EXPECT_TRUE(std::isnan(Ari({0, 1}, {0})));  // a caller bug, visible as NaN
}

TEST(AdjustedRandIndexTest, ArbitraryLabelsAndRelabelling) {
  // 16 nodes in 4 clusters, labels permuted and negative.
  std::vector<int> truth, predicted;
  for (int node = 0; node < 16; ++node) {
    truth.push_back(node / 4);
    predicted.push_back(-10 * ((node / 4 + 2) % 4) - 1);
  }
  EXPECT_DOUBLE_EQ(Ari(truth, predicted), 1.0);
  predicted[0] = 99;  // one node split off into its own cluster
  EXPECT_LT(Ari(truth, predicted), 1.0);
  EXPECT_GT(Ari(truth, predicted), 0.8);
}

TEST(ClustersFromNeighbourhoodsTest, TwoBlocksGiveTwoClusters) {
  // Nodes {0, 2} and {1, 3} accept each other (self entries left false: self is always in).
  const std::vector<std::vector<bool>> accepted = {
      {false, false, true, false},
      {false, false, false, true},
      {true, false, false, false},
      {false, true, false, false},
  };
  EXPECT_EQ(ClustersFromNeighbourhoods(accepted), (std::vector<int>{0, 1, 0, 1}));
}

TEST(ClustersFromNeighbourhoodsTest, DifferentNeighbourhoodsAreDifferentClusters) {
  // A chain 0–1–2: neighbourhoods {0,1}, {0,1,2}, {1,2} all differ, so three clusters, although
  // the graph is connected.
  const std::vector<std::vector<bool>> chain = {
      {true, true, false},
      {true, true, true},
      {false, true, true},
  };
  EXPECT_EQ(ClustersFromNeighbourhoods(chain), (std::vector<int>{0, 1, 2}));
  // Everyone accepts everyone: one cluster. No one accepts anyone: singletons.
  const std::vector<std::vector<bool>> all(3, std::vector<bool>(3, true));
  EXPECT_EQ(ClustersFromNeighbourhoods(all), (std::vector<int>{0, 0, 0}));
  const std::vector<std::vector<bool>> none(3, std::vector<bool>(3, false));
  EXPECT_EQ(ClustersFromNeighbourhoods(none), (std::vector<int>{0, 1, 2}));
}

TEST(ClustersFromNeighbourhoodsTest, IdsFollowFirstAppearanceAndShortRowsCountAsFalse) {
  const std::vector<std::vector<bool>> accepted = {
      {false, true},  // {0, 1}
      {true},         // {0, 1}: the missing entry (self) is implied
      {},             // {2}
  };
  EXPECT_EQ(ClustersFromNeighbourhoods(accepted), (std::vector<int>{0, 0, 1}));
  EXPECT_TRUE(ClustersFromNeighbourhoods({}).empty());
}

TEST(ClustersFromNeighbourhoodsTest, FourRotationClustersScoreAriOne) {
  // The rotated scenario's shape: 16 nodes, 4 clusters of nodes {c, c+4, c+8, c+12}.
  std::vector<int> truth(16);
  std::vector<std::vector<bool>> accepted(16, std::vector<bool>(16));
  for (int i = 0; i < 16; ++i) {
    truth[i] = i % 4;
    for (int j = 0; j < 16; ++j) accepted[i][j] = i % 4 == j % 4;
  }
  const std::vector<int> clusters = ClustersFromNeighbourhoods(accepted);
  EXPECT_EQ(clusters[5], 1);
  EXPECT_DOUBLE_EQ(AdjustedRandIndex(truth, clusters), 1.0);
}

// "n00", "n01", ...: ids whose string order is their index order.
std::string NodeId(size_t i) {
  std::string id(i < 10 ? "n0" : "n");
  id += std::to_string(i);
  return id;
}

// A NodeMatrix over ids NodeId(0), NodeId(1), ... from a function of the two indices.
template <typename Entry>
NodeMatrix MatrixOf(size_t n, Entry entry) {
  NodeMatrix matrix;
  for (size_t i = 0; i < n; ++i) matrix.ids.push_back(NodeId(i));
  matrix.values.resize(n * n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) matrix.values[i * n + j] = entry(i, j);
  }
  return matrix;
}

// The same matrix with its nodes listed in the order `order` (a permutation of positions).
NodeMatrix Permuted(const NodeMatrix& matrix, const std::vector<size_t>& order) {
  NodeMatrix out;
  const size_t n = matrix.size();
  out.values.resize(n * n);
  for (size_t p = 0; p < n; ++p) {
    out.ids.push_back(matrix.ids[order[p]]);
    for (size_t q = 0; q < n; ++q) out.values[p * n + q] = matrix.at(order[p], order[q]);
  }
  return out;
}

std::map<std::string, int> ById(const NodeMatrix& matrix, const std::vector<int>& labels) {
  std::map<std::string, int> by_id;
  for (size_t k = 0; k < labels.size(); ++k) by_id[matrix.ids[k]] = labels[k];
  return by_id;
}

// FLIC's s = 1 + cos for `sizes` clusters: cos 0.9 within a cluster, 0 across, diagonal 2.
NodeMatrix FlicBlocks(const std::vector<int>& sizes, std::vector<int>& truth) {
  truth.clear();
  for (size_t c = 0; c < sizes.size(); ++c) truth.insert(truth.end(), sizes[c], int(c));
  return MatrixOf(truth.size(), [&](size_t i, size_t j) {
    return i == j ? 2.0 : truth[i] == truth[j] ? 1.9 : 1.0;
  });
}

TEST(LouvainTest, TwoCliquesJoinedByAWeakEdgeAreTwoCommunities) {
  // n00..n03 and n04..n07 are cliques of weight 1; n03–n04 is a 0.1 bridge; no self-loops.
  const NodeMatrix graph = MatrixOf(8, [](size_t i, size_t j) {
    if (i == j) return 0.0;
    if (i / 4 == j / 4) return 1.0;
    return (i == 3 && j == 4) || (i == 4 && j == 3) ? 0.1 : 0.0;
  });
  Result<std::vector<int>> labels = LouvainCommunities(graph, 1);
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  EXPECT_EQ(*labels, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(LouvainTest, FlicSimilarityBlocksAreRecovered) {
  for (const std::vector<int>& sizes : {std::vector<int>{5, 5, 5}, std::vector<int>{3, 7, 5}}) {
    std::vector<int> truth;
    const NodeMatrix s = FlicBlocks(sizes, truth);
    Result<std::vector<int>> labels = LouvainCommunities(s, 7);
    ASSERT_TRUE(labels.ok());
    EXPECT_DOUBLE_EQ(AdjustedRandIndex(truth, *labels), 1.0);
  }
}

TEST(LouvainTest, SameSeedSameCommunitiesWhateverTheVertexOrder) {
  // A noisy graph whose best partition is not obvious, so that the visiting order matters.
  std::mt19937_64 rng(11);
  std::vector<double> upper(30 * 30);
  for (double& w : upper) w = static_cast<double>(rng() >> 11) * 0x1.0p-53;
  const NodeMatrix graph =
      MatrixOf(30, [&](size_t i, size_t j) { return upper[std::min(i, j) * 30 + std::max(i, j)]; });
  for (uint64_t seed = 0; seed < 5; ++seed) {
    Result<std::vector<int>> base = LouvainCommunities(graph, seed);
    ASSERT_TRUE(base.ok());
    EXPECT_EQ(*LouvainCommunities(graph, seed), *base);
    std::vector<size_t> order(30);
    std::iota(order.begin(), order.end(), size_t{0});
    for (int shuffle = 0; shuffle < 3; ++shuffle) {
      std::shuffle(order.begin(), order.end(), rng);
      const NodeMatrix permuted = Permuted(graph, order);
      Result<std::vector<int>> labels = LouvainCommunities(permuted, seed);
      ASSERT_TRUE(labels.ok());
      EXPECT_EQ(ById(permuted, *labels), ById(graph, *base)) << "seed " << seed;
    }
  }
}

TEST(LouvainTest, ConcurrentCallsGiveTheSerialResults) {
  std::vector<int> truth;
  const NodeMatrix s = FlicBlocks({3, 7, 5}, truth);
  const std::vector<int> serial = *LouvainCommunities(s, 3);
  std::vector<std::vector<int>> results(4);
  std::vector<std::thread> threads;
  for (auto& result : results) {
    threads.emplace_back([&] {
      for (int k = 0; k < 20; ++k) result = *LouvainCommunities(s, 3);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const auto& result : results) EXPECT_EQ(result, serial);
}

TEST(LouvainTest, EdgeCasesAndBadMatrices) {
  EXPECT_TRUE(LouvainCommunities(NodeMatrix{}, 1)->empty());
  EXPECT_EQ(*LouvainCommunities(NodeMatrix{{"solo"}, {2.0}}, 1), (std::vector<int>{0}));
  // No edge at all: every node is its own community.
  EXPECT_EQ(*LouvainCommunities(MatrixOf(3, [](size_t, size_t) { return 0.0; }), 1),
            (std::vector<int>{0, 1, 2}));
  std::vector<int> truth;
  const NodeMatrix good = FlicBlocks({2, 2}, truth);
  NodeMatrix bad = good;
  bad.values[1] = 1.5;  // (0, 1) no longer equals (1, 0)
  EXPECT_EQ(LouvainCommunities(bad, 1).status().code(), ErrorCode::kInvalidArgument);
  bad = good;
  bad.values[1] = bad.values[4] = -0.5;
  EXPECT_EQ(LouvainCommunities(bad, 1).status().code(), ErrorCode::kInvalidArgument);
  bad = good;
  bad.values[5] = NAN;
  EXPECT_EQ(LouvainCommunities(bad, 1).status().code(), ErrorCode::kNonFinite);
  bad = good;
  bad.ids[2] = bad.ids[0];
  EXPECT_EQ(LouvainCommunities(bad, 1).status().code(), ErrorCode::kInvalidArgument);
  bad = good;
  bad.ids[2] = "";
  EXPECT_EQ(LouvainCommunities(bad, 1).status().code(), ErrorCode::kInvalidArgument);
  bad = good;
  bad.values.pop_back();
  EXPECT_EQ(LouvainCommunities(bad, 1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(LouvainCommunities(good, 1, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(LouvainCommunities(good, 1, NAN).status().code(), ErrorCode::kInvalidArgument);
}

// Points on a line: n00 = 0, n01 = 1, n02 = 5, n03 = 6, n04 = 20; distance |x − y|.
NodeMatrix LineDistances() {
  const double x[] = {0, 1, 5, 6, 20};
  return MatrixOf(5, [&](size_t i, size_t j) { return std::abs(x[i] - x[j]); });
}

TEST(AgglomerativeTest, HandCheckedLinkages) {
  const NodeMatrix d = LineDistances();
  // Below 2 only the pairs at distance 1 merge, whatever the linkage.
  for (Linkage linkage : {Linkage::kSingle, Linkage::kComplete, Linkage::kAverage}) {
    EXPECT_EQ(*AgglomerativeClusters(d, 2, linkage), (std::vector<int>{0, 0, 1, 1, 2}));
  }
  // At 6, {n00, n01} and {n02, n03} are 4 apart (single), 6 (complete: not below 6) and
  // mean(5, 6, 4, 5) = 5 (average); n04 is 14+ away from everything.
  EXPECT_EQ(*AgglomerativeClusters(d, 6, Linkage::kSingle), (std::vector<int>{0, 0, 0, 0, 1}));
  EXPECT_EQ(*AgglomerativeClusters(d, 6, Linkage::kComplete), (std::vector<int>{0, 0, 1, 1, 2}));
  EXPECT_EQ(*AgglomerativeClusters(d, 6, Linkage::kAverage), (std::vector<int>{0, 0, 0, 0, 1}));
  // Average from {n00..n03} to n04: mean(20, 19, 15, 14) = 17. Complete: 20.
  EXPECT_EQ(*AgglomerativeClusters(d, 17, Linkage::kAverage), (std::vector<int>{0, 0, 0, 0, 1}));
  EXPECT_EQ(*AgglomerativeClusters(d, 17.01, Linkage::kAverage), (std::vector<int>(5, 0)));
  EXPECT_EQ(*AgglomerativeClusters(d, 20.01, Linkage::kComplete), (std::vector<int>(5, 0)));
  // Strict threshold: nothing is below 1.
  EXPECT_EQ(*AgglomerativeClusters(d, 1, Linkage::kSingle), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(AgglomerativeTest, LabelsDoNotDependOnTheOrderOfTheIds) {
  const NodeMatrix d = LineDistances();
  const std::vector<size_t> order = {4, 2, 0, 3, 1};
  const NodeMatrix permuted = Permuted(d, order);
  Result<std::vector<int>> labels = AgglomerativeClusters(permuted, 6, Linkage::kAverage);
  ASSERT_TRUE(labels.ok());
  // Numbered by first member in id order: n00's cluster is 0 wherever n00 is listed.
  EXPECT_EQ(*labels, (std::vector<int>{1, 0, 0, 0, 0}));
  EXPECT_EQ(ById(permuted, *labels), ById(d, *AgglomerativeClusters(d, 6, Linkage::kAverage)));
}

TEST(AgglomerativeTest, BadInput) {
  EXPECT_TRUE(AgglomerativeClusters(NodeMatrix{}, 1)->empty());
  EXPECT_EQ(AgglomerativeClusters(LineDistances(), NAN).status().code(),
            ErrorCode::kInvalidArgument);
  NodeMatrix bad = LineDistances();
  bad.values[2] = INFINITY;
  EXPECT_EQ(AgglomerativeClusters(bad, 1).status().code(), ErrorCode::kNonFinite);
}

TEST(ClusteringTemperatureTest, HandComputedValues) {
  // D = [[0,1,2],[1,0,1],[2,1,0]]: ‖D‖_F = √12, λ = 2√6, T = √2 / 2.
  const NodeMatrix d = MatrixOf(3, [](size_t i, size_t j) {
    return std::abs(static_cast<double>(i) - static_cast<double>(j));
  });
  EXPECT_NEAR(*ClusteringTemperature(d), std::sqrt(2.0) / 2, 1e-15);
  // All directions equal: 0. All pairs opposite (distance 2): the bound 1.
  EXPECT_EQ(*ClusteringTemperature(MatrixOf(4, [](size_t, size_t) { return 0.0; })), 0.0);
  EXPECT_NEAR(
      *ClusteringTemperature(MatrixOf(4, [](size_t i, size_t j) { return i == j ? 0 : 2.0; })), 1.0,
      1e-15);
  // Two nodes at distance 1: √2 / (2√2) = 0.5.
  EXPECT_NEAR(
      *ClusteringTemperature(MatrixOf(2, [](size_t i, size_t j) { return i == j ? 0 : 1.0; })), 0.5,
      1e-15);
  EXPECT_EQ(ClusteringTemperature(NodeMatrix{{"a"}, {0.0}}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(ClusteringTemperature(NodeMatrix{}).status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace meshlearn::similarity
