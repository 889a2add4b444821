// k-means with k-means++ seeding (similarity/kmeans.h).

#include "similarity/kmeans.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "similarity/clustering.h"

namespace meshlearn::similarity {
namespace {

// `per_blob` points around each of `centres` (each `cols` wide), blob by blob, with Gaussian noise
// of standard deviation `spread`. Fills `truth` with the blob of every point.
std::vector<float> Blobs(const std::vector<std::vector<float>>& centres, size_t per_blob,
                         float spread, uint64_t seed, std::vector<int>& truth) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> gauss(0, spread);
  std::vector<float> points;
  truth.clear();
  for (size_t b = 0; b < centres.size(); ++b) {
    for (size_t p = 0; p < per_blob; ++p) {
      for (float x : centres[b]) points.push_back(x + gauss(rng));
      truth.push_back(static_cast<int>(b));
    }
  }
  return points;
}

const std::vector<std::vector<float>> kCentres = {
    {0, 0, 0}, {10, 0, 0}, {0, 10, 0}, {0, 0, 10}, {10, 10, 10}};

TEST(KMeansTest, RecoversWellSeparatedBlobs) {
  std::vector<int> truth;
  const std::vector<float> points = Blobs(kCentres, 40, 0.5f, 1, truth);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    Result<KMeansResult> result = KMeans({points, truth.size(), 3}, 5, seed);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(result->k, 5u);
    EXPECT_EQ(result->cols, 3u);
    EXPECT_DOUBLE_EQ(AdjustedRandIndex(truth, result->labels), 1.0) << "seed " << seed;
    // Every true centre has a centroid within 0.3 of it.
    for (const auto& centre : kCentres) {
      double nearest = 1e9;
      for (size_t c = 0; c < 5; ++c) {
        double d2 = 0;
        for (size_t j = 0; j < 3; ++j) d2 += std::pow(result->centroids[c * 3 + j] - centre[j], 2);
        nearest = std::min(nearest, std::sqrt(d2));
      }
      EXPECT_LT(nearest, 0.3);
    }
    // Inertia: about 3 dimensions × 0.25 variance × 200 points.
    EXPECT_NEAR(result->inertia, 150, 30);
    EXPECT_GE(result->iterations, 1);
  }
}

TEST(KMeansTest, IsAPureFunctionOfItsInputsAndSeed) {
  std::vector<int> truth;
  // Overlapping blobs, so that the outcome depends on the seeding.
  const std::vector<float> points = Blobs(kCentres, 30, 6.0f, 2, truth);
  const PointSet set{points, truth.size(), 3};
  Result<KMeansResult> first = KMeans(set, 4, 42);
  Result<KMeansResult> again = KMeans(set, 4, 42);
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(first->centroids, again->centroids);
  EXPECT_EQ(first->labels, again->labels);
  EXPECT_EQ(first->iterations, again->iterations);
  // Every label is used (k centroids promised).
  EXPECT_EQ(std::set<int>(first->labels.begin(), first->labels.end()).size(), 4u);
}

TEST(KMeansTest, RestartsKeepTheRunWithTheSmallestInertia) {
  std::vector<int> truth;
  const std::vector<float> points = Blobs(kCentres, 30, 3.0f, 4, truth);
  const PointSet set{points, truth.size(), 3};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    // The first run of both draws the same numbers, so ten runs can only do better.
    Result<KMeansResult> one = KMeans(set, 5, seed, kDefaultKMeansIterations, 1);
    Result<KMeansResult> ten = KMeans(set, 5, seed);
    ASSERT_TRUE(one.ok() && ten.ok());
    EXPECT_LE(ten->inertia, one->inertia) << "seed " << seed;
  }
}

TEST(KMeansTest, StopsAtMaxIterations) {
  std::vector<int> truth;
  const std::vector<float> points = Blobs(kCentres, 30, 6.0f, 3, truth);
  Result<KMeansResult> one = KMeans({points, truth.size(), 3}, 5, 7, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->iterations, 1);
}

TEST(KMeansTest, KEqualToTheNumberOfPointsAndRepeatedPoints) {
  // Three points, k = 3: every point is its own centroid, inertia 0.
  const std::vector<float> three = {0, 0, 1, 1, 5, 5};
  Result<KMeansResult> result = KMeans({three, 3, 2}, 3, 9);
  ASSERT_TRUE(result.ok());
  EXPECT_DOUBLE_EQ(result->inertia, 0);
  EXPECT_EQ(std::set<int>(result->labels.begin(), result->labels.end()).size(), 3u);
  // Four copies of one point and k = 2: seeding falls back to an unchosen index, and an empty
  // cluster takes a point, so both centroids exist and sit on the point.
  const std::vector<float> same = {2, 3, 2, 3, 2, 3, 2, 3};
  Result<KMeansResult> copies = KMeans({same, 4, 2}, 2, 1);
  ASSERT_TRUE(copies.ok()) << copies.status().ToString();
  EXPECT_EQ(copies->centroids, (std::vector<float>{2, 3, 2, 3}));
  EXPECT_EQ(std::set<int>(copies->labels.begin(), copies->labels.end()).size(), 2u);
  EXPECT_DOUBLE_EQ(copies->inertia, 0);
}

TEST(KMeansTest, RejectsBadInput) {
  const std::vector<float> points = {0, 0, 1, 1, 2, 2};
  EXPECT_EQ(KMeans({points, 3, 2}, 0, 1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KMeans({points, 3, 2}, 4, 1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KMeans({points, 3, 2}, 2, 1, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KMeans({points, 3, 2}, 2, 1, 10, 0).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KMeans({{}, 0, 2}, 1, 1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(KMeans({points, 2, 2}, 1, 1).status().code(), ErrorCode::kInvalidArgument);
  std::vector<float> bad = points;
  bad[3] = NAN;
  EXPECT_EQ(KMeans({bad, 3, 2}, 2, 1).status().code(), ErrorCode::kNonFinite);
}

}  // namespace
}  // namespace meshlearn::similarity
