// FLT signatures (similarity/centroid_signature.h): the minimum-matching distance between centroid
// sets, the `centroid` metric, and a synthetic FLT clustering of 20 nodes.

#include "similarity/centroid_signature.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "similarity/clustering.h"
#include "similarity/kmeans.h"

namespace meshlearn::similarity {
namespace {

double Distance(const std::vector<float>& a, size_t rows_a, const std::vector<float>& b,
                size_t rows_b, size_t cols) {
  Result<double> d = CentroidSetDistance({a, rows_a, cols}, {b, rows_b, cols});
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? *d : NAN;
}

TEST(CentroidSetDistanceTest, HandComputedValue) {
  // A = {(0,0), (10,0)}, B = {(10,1), (0,2)}: the matching pairs (0,0)-(0,2) and (10,0)-(10,1),
  // squared distances 4 + 1; D = sqrt(5) / 2. The crossed matching would cost 101 + 104.
  const std::vector<float> a = {0, 0, 10, 0}, b = {10, 1, 0, 2};
  EXPECT_DOUBLE_EQ(Distance(a, 2, b, 2, 2), std::sqrt(5.0) / 2);
}

TEST(CentroidSetDistanceTest, ZeroOnIdenticalSetsSymmetricAndOrderInvariant) {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> gauss(0, 1);
  std::vector<float> a(5 * 7), b(5 * 7);
  for (float& x : a) x = gauss(rng);
  for (float& x : b) x = gauss(rng);
  EXPECT_EQ(Distance(a, 5, a, 5, 7), 0.0);
  const double ab = Distance(a, 5, b, 5, 7);
  EXPECT_GT(ab, 0);
  EXPECT_DOUBLE_EQ(Distance(b, 5, a, 5, 7), ab);
  // Reorder the centroids of a (rows 4, 2, 0, 3, 1) and of b (reversed).
  std::vector<float> a_shuffled, b_reversed;
  for (size_t row : {4, 2, 0, 3, 1}) {
    a_shuffled.insert(a_shuffled.end(), a.begin() + row * 7, a.begin() + (row + 1) * 7);
  }
  for (size_t row = 5; row-- > 0;) {
    b_reversed.insert(b_reversed.end(), b.begin() + row * 7, b.begin() + (row + 1) * 7);
  }
  EXPECT_NEAR(Distance(a_shuffled, 5, b_reversed, 5, 7), ab, 1e-12);
  EXPECT_EQ(Distance(a_shuffled, 5, a, 5, 7), 0.0);
}

TEST(CentroidSetDistanceTest, DifferentSizesMatchTheSmallerSetIntoTheLarger) {
  // {(0,0)} against {(5,5), (0,1), (9,9)}: the single centroid takes (0,1); D = sqrt(1) / 1.
  const std::vector<float> one = {0, 0}, three = {5, 5, 0, 1, 9, 9};
  EXPECT_DOUBLE_EQ(Distance(one, 1, three, 3, 2), 1.0);
  EXPECT_DOUBLE_EQ(Distance(three, 3, one, 1, 2), 1.0);
}

TEST(CentroidSetDistanceTest, RejectsBadSignatures) {
  const std::vector<float> a = {0, 0, 1, 1};
  std::vector<float> bad = a;
  bad[1] = INFINITY;
  EXPECT_EQ(CentroidSetDistance({a, 2, 2}, {bad, 2, 2}).status().code(), ErrorCode::kNonFinite);
  EXPECT_EQ(CentroidSetDistance({a, 2, 2}, {a, 1, 4}).status().code(), ErrorCode::kLayoutMismatch);
  EXPECT_EQ(CentroidSetDistance({a, 2, 2}, {{}, 0, 2}).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(CentroidSetDistance({a, 3, 2}, {a, 2, 2}).status().code(), ErrorCode::kInvalidArgument);
  const std::vector<float> many(2 * (kMaxCentroids + 1), 0.5f);
  EXPECT_EQ(CentroidSetDistance({many, kMaxCentroids + 1, 2}, {a, 2, 2}).status().code(),
            ErrorCode::kTooMany);
}

TEST(CentroidsRelatedTest, StrictThresholdAndNanRejects) {
  EXPECT_TRUE(CentroidsRelated(0.5, 1.0));
  EXPECT_FALSE(CentroidsRelated(1.0, 1.0));
  EXPECT_FALSE(CentroidsRelated(NAN, 1.0));
  EXPECT_FALSE(CentroidsRelated(0.5, NAN));
}

TEST(CentroidMetricTest, ScoreIsMinusTheDistance) {
  std::unique_ptr<SimilarityMetric> metric = MakeSimilarityMetric(MetricKind::kCentroid);
  ASSERT_TRUE(metric);
  MetricInput input;
  input.exchanged_score = 0.75;
  EXPECT_EQ(*metric->Score(input), -0.75);
  input.exchanged_score = 0.0;
  EXPECT_FALSE(std::signbit(*metric->Score(input)));
  input.exchanged_score = -0.1;
  EXPECT_EQ(metric->Score(input).status().code(), ErrorCode::kInvalidArgument);
}

// FLT on synthetic embeddings: 5 clusters of 4 nodes over 5 classes, each class a Gaussian blob
// in the encoder's space. Cluster c holds the m classes c, c+1, ... (mod 5), so clusters share
// classes; every node sends KMeans(k = m) of its m × 60 embeddings; nodes are related iff D < 1.
// (k is set to the number of classes a node holds: with more centroids than classes, k-means
// splits a class arbitrarily, and two nodes of one distribution send different signatures.)
class FltSignatureTest : public ::testing::TestWithParam<size_t> {};

TEST_P(FltSignatureTest, ThresholdedCentroidDistancesRecoverTheClusters) {
  constexpr size_t kClusters = 5, kPerCluster = 4, kPerClass = 60, kDim = 8;
  const size_t k = GetParam();
  std::mt19937_64 rng(17);
  std::normal_distribution<float> gauss(0, 1);
  std::vector<std::vector<float>> class_centres(kClusters, std::vector<float>(kDim));
  for (auto& centre : class_centres) {
    for (float& x : centre) x = 3 * gauss(rng);
  }
  NodeMatrix distance;
  std::vector<int> truth;
  std::vector<KMeansResult> signatures;
  for (size_t node = 0; node < kClusters * kPerCluster; ++node) {
    const size_t cluster = node % kClusters;
    std::vector<float> embeddings;
    for (size_t cls = cluster; cls < cluster + k; ++cls) {
      for (size_t s = 0; s < kPerClass; ++s) {
        for (float x : class_centres[cls % kClusters]) embeddings.push_back(x + 0.5f * gauss(rng));
      }
    }
    Result<KMeansResult> signature = KMeans({embeddings, k * kPerClass, kDim}, k, 1000 + node);
    ASSERT_TRUE(signature.ok()) << signature.status().ToString();
    signatures.push_back(std::move(signature).value());
    std::string id(node < 10 ? "node-0" : "node-");
    id += std::to_string(node);
    distance.ids.push_back(id);
    truth.push_back(static_cast<int>(cluster));
  }
  const size_t n = signatures.size();
  distance.values.resize(n * n);
  double closest_pair_across = 1e9;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      Result<double> d = CentroidSetDistance(signatures[i].Centroids(), signatures[j].Centroids());
      ASSERT_TRUE(d.ok()) << d.status().ToString();
      distance.values[i * n + j] = *d;
      EXPECT_EQ(CentroidsRelated(*d, 1.0), truth[i] == truth[j]) << i << " " << j << " D " << *d;
      if (truth[i] == truth[j]) continue;
      // The paper text's rule, the closest single pair of centroids, for comparison.
      for (size_t r = 0; r < k; ++r) {
        for (size_t s = 0; s < k; ++s) {
          double d2 = 0;
          for (size_t x = 0; x < kDim; ++x) {
            d2 += std::pow(
                signatures[i].centroids[r * kDim + x] - signatures[j].centroids[s * kDim + x], 2);
          }
          closest_pair_across = std::min(closest_pair_across, std::sqrt(d2));
        }
      }
    }
  }
  // The fixture is a fair test: under the closest-pair rule, clusters sharing a class would look
  // related at the same threshold.
  EXPECT_LT(closest_pair_across, 1.0);
  // Hard clusters: single linkage at the threshold = components of the adjacency graph.
  Result<std::vector<int>> clusters = AgglomerativeClusters(distance, 1.0, Linkage::kSingle);
  ASSERT_TRUE(clusters.ok()) << clusters.status().ToString();
  const double ari = AdjustedRandIndex(truth, *clusters);
  std::printf("FLT k = %zu: ARI %.3f\n", k, ari);
  EXPECT_GE(ari, 0.9);
}

INSTANTIATE_TEST_SUITE_P(K, FltSignatureTest, ::testing::Values(size_t{2}, size_t{3}, size_t{4}),
                         [](const auto& info) {
                           std::string name(1, 'k');
                           name += std::to_string(info.param);
                           return name;
                         });

}  // namespace
}  // namespace meshlearn::similarity
