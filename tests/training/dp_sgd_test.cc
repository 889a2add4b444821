// DP-SGD's parts do what its guarantee assumes: per-sample gradients equal single-sample backward
// passes, every clipped gradient has norm <= max_grad_norm, the noise has the configured standard
// deviation, Poisson sampling draws at the configured rate, and training is repeatable.

#include "training/dp_sgd.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "tests/training/test_support.h"
#include "training/trainer.h"

namespace meshlearn::training {
namespace {

constexpr int64_t kSide = 16;  // cnn_emd's smallest input (two 5x5 convolutions, two pools)

std::unique_ptr<Model> Make(Architecture architecture, uint64_t seed = 3) {
  ModelSpec spec;
  spec.architecture = architecture;
  spec.input_shape = {1, kSide, kSide};
  spec.num_outputs = 4;
  spec.hidden = 24;
  spec.seed = seed;
  Result<std::unique_ptr<Model>> m = CreateModel(spec);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

const Dataset& Images() {
  static const Dataset d = testing::MakeImagePool(64, 4, 0.1f, kSide);
  return d;
}

double Norm(std::span<const float> v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

class PerSampleGradientsTest : public ::testing::TestWithParam<Architecture> {};

TEST_P(PerSampleGradientsTest, EqualSeparateBackwardPassesOfSingleSamples) {
  auto model = Make(GetParam());
  const std::vector<size_t> rows = {0, 5, 17, 42, 63};
  Result<std::vector<float>> per_sample = PerSampleGradients(*model, Images(), rows);
  ASSERT_TRUE(per_sample.ok()) << per_sample.status().ToString();
  const size_t width = model->Layout().total_floats();
  ASSERT_EQ(per_sample->size(), rows.size() * width);
  for (size_t i = 0; i < rows.size(); ++i) {
    Result<std::vector<float>> single = SummedGradient(*model, Images(), {{rows[i]}});
    ASSERT_TRUE(single.ok()) << single.status().ToString();
    ASSERT_EQ(single->size(), width);
    EXPECT_GT(Norm(*single), 1e-3) << "a zero gradient would make the comparison vacuous";
    size_t mismatches = 0;
    for (size_t k = 0; k < width; ++k) {
      const float want = (*single)[k];
      const float got = (*per_sample)[i * width + k];
      if (std::abs(got - want) > 1e-6f + 1e-4f * std::abs(want)) ++mismatches;
    }
    EXPECT_EQ(mismatches, 0u) << "row " << rows[i];
  }
}

INSTANTIATE_TEST_SUITE_P(BuiltinArchitectures, PerSampleGradientsTest,
                         ::testing::Values(Architecture::kLinear, Architecture::kMlp,
                                           Architecture::kCnn, Architecture::kCnnEmd),
                         [](const auto& info) {
                           return std::string(NameOf(ArchitectureNames(), info.param));
                         });

TEST(DpSgdClipping, EveryClippedPerSampleGradientHasNormAtMostMaxGradNorm) {
  auto model = Make(Architecture::kCnn);
  std::vector<size_t> rows(Images().size());
  std::iota(rows.begin(), rows.end(), size_t{0});
  Result<std::vector<float>> raw = PerSampleGradients(*model, Images(), rows);
  ASSERT_TRUE(raw.ok());
  const size_t width = model->Layout().total_floats();
  // C between the smallest and the largest per-sample norm, so that some are clipped, some not.
  std::vector<double> norms;
  for (size_t i = 0; i < rows.size(); ++i) {
    norms.push_back(Norm(std::span<const float>(*raw).subspan(i * width, width)));
  }
  std::vector<double> sorted = norms;
  std::sort(sorted.begin(), sorted.end());
  const double c = sorted[sorted.size() / 2];
  const DpSgdConfig no_noise{.noise_multiplier = 0, .max_grad_norm = c};
  int clipped = 0;
  std::vector<double> sum_of_singles(width, 0.0);
  for (size_t i = 0; i < rows.size(); ++i) {
    Result<std::vector<float>> one = PrivateGradientSum(*model, Images(), {{rows[i]}}, no_noise, 1);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    const double norm = Norm(*one);
    EXPECT_LE(norm, c * (1 + 1e-6)) << "row " << i;
    if (norms[i] > c) {
      ++clipped;
      EXPECT_NEAR(norm, c, 1e-4 * c);  // scaled down to C, direction kept
    } else {
      EXPECT_NEAR(norm, norms[i], 1e-4 * norms[i]);  // left alone
    }
    for (size_t k = 0; k < width; ++k) sum_of_singles[k] += (*one)[k];
  }
  EXPECT_GT(clipped, 0);
  EXPECT_LT(clipped, static_cast<int>(rows.size()));
  Result<std::vector<float>> batch = PrivateGradientSum(*model, Images(), rows, no_noise, 1);
  ASSERT_TRUE(batch.ok());
  for (size_t k = 0; k < width; ++k) {
    ASSERT_NEAR((*batch)[k], sum_of_singles[k], 1e-5 + 1e-4 * std::abs(sum_of_singles[k]));
  }
}

TEST(DpSgdNoise, HasTheConfiguredStandardDeviationAndComesFromTheSeed) {
  auto model = Make(Architecture::kCnn);
  const DpSgdConfig config{.noise_multiplier = 1.3, .max_grad_norm = 0.7};
  const double want = 1.3 * 0.7;
  // No sampled record: what is left is the noise alone.
  Result<std::vector<float>> noise = PrivateGradientSum(*model, Images(), {}, config, 11);
  ASSERT_TRUE(noise.ok()) << noise.status().ToString();
  const double n = static_cast<double>(noise->size());
  double sum = 0, squares = 0, within_one_sd = 0;
  for (float v : *noise) {
    sum += v;
    squares += static_cast<double>(v) * v;
    within_one_sd += std::abs(v) < want ? 1 : 0;
  }
  const double mean = sum / n;
  const double sd = std::sqrt(squares / n - mean * mean);
  std::printf("noise over %.0f coordinates: mean %.5f, sd %.5f (want %.5f), within 1 sd %.4f\n", n,
              mean, sd, want, within_one_sd / n);
  EXPECT_NEAR(mean, 0, 5 * want / std::sqrt(n));
  EXPECT_NEAR(sd, want, 0.02 * want);            // 7 standard errors of a sample sd
  EXPECT_NEAR(within_one_sd / n, 0.6827, 0.01);  // Gaussian, not just the right variance
  EXPECT_EQ(*PrivateGradientSum(*model, Images(), {}, config, 11), *noise);
  EXPECT_NE(*PrivateGradientSum(*model, Images(), {}, config, 12), *noise);
}

TEST(DpSgdSampling, PoissonSamplesAtTheConfiguredRateAndRepeatsWithTheSeed) {
  const double rate = PoissonSamplingRate(8, 500);
  EXPECT_DOUBLE_EQ(rate, 0.016);
  EXPECT_EQ(DpSgdStepsPerEpoch(8, 500), 63);
  EXPECT_DOUBLE_EQ(PoissonSamplingRate(800, 500), 1.0);
  double total = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const std::vector<size_t> rows = PoissonSample(500, rate, seed);
    EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
    total += static_cast<double>(rows.size());
  }
  EXPECT_NEAR(total / 400, 8.0, 0.4);  // standard error of the mean: 0.14
  EXPECT_EQ(PoissonSample(500, rate, 7), PoissonSample(500, rate, 7));
  EXPECT_NE(PoissonSample(500, rate, 7), PoissonSample(500, rate, 8));
}

TEST(DpSgdTraining, LowersTheLossRepeatablyWithThePlannedNumberOfSteps) {
  TrainConfig config;
  config.optimizer = {.kind = OptimizerKind::kSgd, .learning_rate = 0.1};
  config.batch_size = 8;
  config.epochs = 3;
  config.privacy = DpSgdConfig{.noise_multiplier = 0.5, .max_grad_norm = 1.0};
  auto a = Make(Architecture::kMlp), b = Make(Architecture::kMlp), c = Make(Architecture::kMlp);
  const double before = Evaluate(*a, Images())->loss;
  Result<TrainStats> stats = TrainLocal(*a, Images(), config, 21);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->steps, 3 * DpSgdStepsPerEpoch(8, Images().size()));
  const double after = Evaluate(*a, Images())->loss;
  std::printf("mlp with DP-SGD (sigma 0.5, C 1): loss %.4f -> %.4f\n", before, after);
  EXPECT_LT(after, before);
  ASSERT_TRUE(TrainLocal(*b, Images(), config, 21).ok());
  EXPECT_EQ(a->Parameters(), b->Parameters());
  ASSERT_TRUE(TrainLocal(*c, Images(), config, 22).ok());
  EXPECT_NE(a->Parameters(), c->Parameters());
}

TEST(DpSgdTraining, RefusesModelsWithoutPerSampleGradients) {
  ModelSpec spec;
  spec.architecture = Architecture::kTorchScript;
  spec.input_shape = {1, 28, 28};
  spec.num_outputs = 10;
  spec.torchscript_path = testing::kFixtureDir + "/script_mlp.pt";
  Result<std::unique_ptr<Model>> script = CreateModel(spec);
  ASSERT_TRUE(script.ok()) << script.status().ToString();
  Status refused = CheckDpSgdSupported(**script);
  EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("torchscript"), std::string::npos) << refused.ToString();
}

}  // namespace
}  // namespace meshlearn::training
