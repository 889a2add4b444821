// One contract suite (similarity/metric.h) run over every metric of the factory table.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "similarity/metric.h"

namespace meshlearn::similarity {

// Test names and failure messages show the metric's name (gtest finds it by ADL).
void PrintTo(const NamedValue<MetricKind>& kind, std::ostream* out) { *out << kind.name; }

namespace {

std::vector<float> RandomVector(uint64_t seed, size_t n = 1000) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> gauss(0, 1);
  std::vector<float> v(n);
  for (float& x : v) x = gauss(rng);
  return v;
}

class MetricContractTest : public ::testing::TestWithParam<NamedValue<MetricKind>> {
 protected:
  void SetUp() override {
    metric_ = MakeSimilarityMetric(GetParam().value);
    ASSERT_TRUE(metric_);
  }

  // The mean squared distance between two weight vectors (over the shorter one).
  static double MeanSquaredDistance(std::span<const float> a, std::span<const float> b) {
    const size_t n = std::min(a.size(), b.size());
    double sum = 0;
    for (size_t k = 0; k < n; ++k) sum += std::pow(static_cast<double>(a[k]) - b[k], 2);
    return n == 0 ? 0 : sum / static_cast<double>(n);
  }

  // An input with everything any metric may read. The loss is the mean squared distance to the
  // own weights: "my data" is best fitted by my own model. The exchanged score stands in for the
  // EMD exchange's EMD_ij − ref_i: the same distance, so "same weights" plays "same data" (0)
  // and farther peers get a larger excess.
  MetricInput Input(const std::vector<float>& own, const std::vector<float>& peer) const {
    MetricInput input;
    input.own = own;
    input.peer = peer;
    input.initial = initial_;
    input.own_data_loss = [own](std::span<const float> weights) -> Result<double> {
      return MeanSquaredDistance(weights, own);
    };
    if (metric_->Needs().exchanged_score) input.exchanged_score = MeanSquaredDistance(own, peer);
    return input;
  }

  std::unique_ptr<SimilarityMetric> metric_;
  std::vector<float> initial_ = RandomVector(99);
  std::vector<float> a_ = RandomVector(1);
  std::vector<float> b_ = RandomVector(2);
};

// The suites below run over the metrics a property applies to, so that no test is skipped.
class SymmetricMetricTest : public MetricContractTest {};
class WeightReadingMetricTest : public MetricContractTest {};
class ExchangeReadingMetricTest : public MetricContractTest {};
class WeightBlindMetricTest : public MetricContractTest {};

// The metrics of the factory table for which `applies` holds.
std::vector<NamedValue<MetricKind>> MetricsWhere(bool (*applies)(const SimilarityMetric&)) {
  std::vector<NamedValue<MetricKind>> kinds;
  for (const NamedValue<MetricKind>& kind : BuiltInMetricKindNames()) {
    if (applies(*MakeSimilarityMetric(kind.value))) kinds.push_back(kind);
  }
  return kinds;
}

TEST_P(MetricContractTest, NameIsTheConfigName) { EXPECT_EQ(metric_->Name(), GetParam().name); }

TEST_P(MetricContractTest, ScoresAreFinite) {
  for (uint64_t seed = 3; seed < 10; ++seed) {
    const std::vector<float> peer = RandomVector(seed);
    Result<double> score = metric_->Score(Input(a_, peer));
    ASSERT_TRUE(score.ok()) << score.status().ToString();
    EXPECT_TRUE(std::isfinite(*score));
  }
}

TEST_P(SymmetricMetricTest, ScoresAreSymmetric) {
  Result<double> ab = metric_->Score(Input(a_, b_));
  Result<double> ba = metric_->Score(Input(b_, a_));
  ASSERT_TRUE(ab.ok() && ba.ok());
  EXPECT_NEAR(*ab, *ba, 1e-9 * std::abs(*ab));
}

TEST_P(MetricContractTest, IdentityScoresHighest) {
  Result<double> self = metric_->Score(Input(a_, a_));
  ASSERT_TRUE(self.ok());
  for (uint64_t seed = 3; seed < 20; ++seed) {
    // Peers at growing distance from a_, and unrelated ones.
    std::vector<float> peer = RandomVector(seed);
    const float mix = static_cast<float>(seed - 3) / 16;
    for (size_t k = 0; k < peer.size(); ++k) peer[k] = (1 - mix) * a_[k] + mix * peer[k] + 0.01f;
    Result<double> other = metric_->Score(Input(a_, peer));
    ASSERT_TRUE(other.ok());
    EXPECT_GT(*self, *other) << "seed " << seed;
  }
}

TEST_P(MetricContractTest, NonFiniteWeightsAreRejected) {
  for (float bad : {NAN, INFINITY, -INFINITY}) {
    for (std::vector<float>* victim : {&a_, &b_, &initial_}) {
      std::vector<float> saved = *victim;
      (*victim)[500] = bad;
      Result<double> score = metric_->Score(Input(a_, b_));
      const bool read =
          victim == &initial_ ? metric_->Needs().initial_weights : metric_->Needs().weights;
      if (read) {
        ASSERT_FALSE(score.ok()) << "bad value " << bad;
        EXPECT_EQ(score.status().code(), ErrorCode::kNonFinite);
      }
      *victim = saved;
    }
  }
}

TEST_P(MetricContractTest, HugeFiniteWeightsAreNotMistakenForInfinity) {
  std::vector<float> peer = a_;
  peer[3] = 3e37f;  // its square overflows float, not double
  Result<double> score = metric_->Score(Input(a_, peer));
  ASSERT_TRUE(score.ok()) << score.status().ToString();
  EXPECT_TRUE(std::isfinite(*score));
}

TEST_P(WeightReadingMetricTest, MismatchedOrEmptyVectorsAreRejected) {
  const std::vector<float> shorter(a_.begin(), a_.end() - 1);
  EXPECT_EQ(metric_->Score(Input(a_, shorter)).status().code(), ErrorCode::kLayoutMismatch);
  const std::vector<float> empty;
  EXPECT_EQ(metric_->Score(Input(empty, empty)).status().code(), ErrorCode::kInvalidArgument);
}

TEST_P(MetricContractTest, ZeroNormVectorsAreRejectedByNormalisingMetrics) {
  // The vector a normalising metric divides by: the weights, or their change since w0.
  const std::vector<float> zero =
      metric_->Needs().initial_weights ? initial_ : std::vector<float>(a_.size(), 0.0f);
  Result<double> score = metric_->Score(Input(zero, b_));
  if (GetParam().value == MetricKind::kCosWeights || GetParam().value == MetricKind::kCosGrad) {
    ASSERT_FALSE(score.ok());
    EXPECT_EQ(score.status().code(), ErrorCode::kInvalidArgument);
  } else {
    ASSERT_TRUE(score.ok()) << score.status().ToString();
    EXPECT_TRUE(std::isfinite(*score));
  }
}

TEST_P(ExchangeReadingMetricTest, MissingOrNonFiniteExchangedScoreIsRejected) {
  MetricInput input = Input(a_, b_);
  input.exchanged_score.reset();
  EXPECT_EQ(metric_->Score(input).status().code(), ErrorCode::kInvalidArgument);
  for (double bad : {NAN, INFINITY, -INFINITY}) {
    input.exchanged_score = bad;
    EXPECT_EQ(metric_->Score(input).status().code(), ErrorCode::kNonFinite) << bad;
  }
}

TEST_P(WeightBlindMetricTest, WeightsAreIgnored) {
  MetricInput with = Input(a_, b_);
  MetricInput without = with;
  without.own = {};
  without.peer = {};
  without.initial = {};
  Result<double> scored_with = metric_->Score(with);
  Result<double> scored_without = metric_->Score(without);
  ASSERT_TRUE(scored_with.ok() && scored_without.ok()) << scored_without.status().ToString();
  EXPECT_EQ(*scored_with, *scored_without);
}

const auto kMetricName = [](const auto& info) { return std::string(info.param.name); };
INSTANTIATE_TEST_SUITE_P(EveryMetric, MetricContractTest,
                         ::testing::ValuesIn(BuiltInMetricKindNames()), kMetricName);
INSTANTIATE_TEST_SUITE_P(SymmetricMetrics, SymmetricMetricTest,
                         ::testing::ValuesIn(MetricsWhere([](const SimilarityMetric& m) {
                           return m.Symmetric();
                         })),
                         kMetricName);
INSTANTIATE_TEST_SUITE_P(WeightReadingMetrics, WeightReadingMetricTest,
                         ::testing::ValuesIn(MetricsWhere([](const SimilarityMetric& m) {
                           return m.Needs().weights;
                         })),
                         kMetricName);
INSTANTIATE_TEST_SUITE_P(ExchangeReadingMetrics, ExchangeReadingMetricTest,
                         ::testing::ValuesIn(MetricsWhere([](const SimilarityMetric& m) {
                           return m.Needs().exchanged_score;
                         })),
                         kMetricName);
INSTANTIATE_TEST_SUITE_P(WeightBlindMetrics, WeightBlindMetricTest,
                         ::testing::ValuesIn(MetricsWhere([](const SimilarityMetric& m) {
                           return !m.Needs().weights;
                         })),
                         kMetricName);

TEST(MetricFactoryTest, EveryKindHasOneNameAndBuildsTheMetricOfThatName) {
  std::vector<std::string> names = NamesOf(MetricKindNames());
  EXPECT_EQ(names, (std::vector<std::string>{"inv_loss", "cos_weights", "cos_grad", "inv_l2", "emd",
                                             "centroid", "torchscript"}));
  names.pop_back();
  EXPECT_EQ(NamesOf(BuiltInMetricKindNames()), names);
  for (const NamedValue<MetricKind>& entry : BuiltInMetricKindNames()) {
    EXPECT_EQ(ValueNamed(MetricKindNames(), entry.name), entry.value);
    EXPECT_EQ(MakeSimilarityMetric(entry.value)->Name(), entry.name);
  }
  EXPECT_EQ(MakeSimilarityMetric(MetricKind::kTorchScript), nullptr) << "a file's metric";
  EXPECT_FALSE(ValueNamed(MetricKindNames(), "cosine").has_value());
}

}  // namespace
}  // namespace meshlearn::similarity
