// The TorchScript metric (plugins/script_metric.h): every refusal at load names the file and
// what was expected; the cos_weights example gives the built-in's scores (to the last bit in the
// built-in's summation order); an own-loss metric gets the loss of the peer's weights; and every
// fault at run time costs the peer a Status.
#include "plugins/script_metric.h"

#include <gtest/gtest.h>

#include <thread>

#include "similarity/metrics.h"
#include "tests/plugins/plugin_test_support.h"

namespace meshlearn::plugins {
namespace {

using testing::Example;
using testing::ExpectError;
using testing::Fixture;
using testing::RandomWeights;

Status Refusal(const std::string& path) {
  return testing::Refused(LoadScriptMetric(path, 64), path);
}

std::unique_ptr<similarity::SimilarityMetric> Load(const std::string& path, size_t floats = 64) {
  auto metric = LoadScriptMetric(path, floats);
  EXPECT_TRUE(metric.ok()) << metric.status().ToString();
  return metric.ok() ? std::move(*metric) : nullptr;
}

similarity::MetricInput Input(std::span<const float> own, std::span<const float> peer) {
  similarity::MetricInput in;
  in.own = own;
  in.peer = peer;
  return in;
}

TEST(ScriptMetricLoad, RefusesAMissingFile) {
  ExpectError(Refusal("/nonexistent/metric.pt"), ErrorCode::kNotFound,
              {"/nonexistent/metric.pt", "no such TorchScript file"});
}

TEST(ScriptMetricLoad, RefusesAFileThatIsNotTorchScript) {
  const std::string path = testing::TextFile("not_torchscript.pt", "def forward(): pass\n");
  ExpectError(Refusal(path), ErrorCode::kMalformed, {path, "not a TorchScript archive"});
}

TEST(ScriptMetricLoad, RefusesAModuleWithoutForward) {
  ExpectError(Refusal(Fixture("no_forward")), ErrorCode::kInvalidArgument,
              {Fixture("no_forward"), "no forward method"});
}

TEST(ScriptMetricLoad, RefusesAForwardOfAnotherSignatureShowingBoth) {
  ExpectError(Refusal(Fixture("metric_two_arguments")), ErrorCode::kInvalidArgument,
              {Fixture("metric_two_arguments"),
               "forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> float",
               "the module's is forward(__torch__.MetricTwoArguments self, Tensor own, Tensor "
               "peer) -> float"});
}

TEST(ScriptMetricLoad, RefusesAnOwnLossMetricWhoseForwardTakesNoLoss) {
  ExpectError(Refusal(Fixture("metric_loss_without_argument")), ErrorCode::kInvalidArgument,
              {"own_loss: float) -> float"});
}

TEST(ScriptMetricLoad, RefusesAResultThatIsNoScore) {
  ExpectError(Refusal(Fixture("metric_returns_a_vector")), ErrorCode::kInvalidArgument,
              {Fixture("metric_returns_a_vector"), "the probe on random weights of 64 floats",
               "must return a float (the score); it returned a tensor of shape [3]"});
}

TEST(ScriptMetricLoad, RefusesANeedsAttributeThatIsNoBool) {
  ExpectError(Refusal(Fixture("metric_int_attribute")), ErrorCode::kInvalidArgument,
              {"attribute 'needs_own_loss' must be a bool, it is an int (1)"});
}

TEST(ScriptMetricLoad, RefusesAMetricThatReadsNothing) {
  ExpectError(Refusal(Fixture("metric_reads_nothing")), ErrorCode::kInvalidArgument,
              {"needs_weights = False", "needs_own_loss = True"});
}

TEST(ScriptMetricLoad, RefusesAMetricThatWritesIntoItsInputs) {
  ExpectError(Refusal(Fixture("metric_writes_input")), ErrorCode::kInvalidArgument,
              {Fixture("metric_writes_input"), "wrote into its inputs"});
}

TEST(ScriptMetricLoad, RefusesAMetricWhoseProbeThrowsOrScoresNaN) {
  ExpectError(Refusal(Fixture("metric_throws")), ErrorCode::kInternal,
              {"the probe", Fixture("metric_throws"), "forward threw", "this metric always fails"});
  ExpectError(Refusal(Fixture("metric_nan")), ErrorCode::kNonFinite,
              {Fixture("metric_nan"), "returned a float (nan), which is not a finite score"});
}

// own (1, 2, 2) and peer (2, 1, 2): dot 8, both norms 3, cos = 8/9.
TEST(ScriptMetric, CosWeightsGivesTheBuiltinScoreOfAHandWorkedPair) {
  const std::vector<float> own = {1, 2, 2}, peer = {2, 1, 2};
  const Result<double> builtin = similarity::CosineWeightsMetric().Score(Input(own, peer));
  ASSERT_TRUE(builtin.ok());
  EXPECT_EQ(*builtin, 8.0 / 9);
  for (const char* example : {"cos_weights", "cos_weights_builtin_order"}) {
    auto metric = Load(Example(example));
    ASSERT_TRUE(metric);
    const Result<double> score = metric->Score(Input(own, peer));
    ASSERT_TRUE(score.ok()) << score.status().ToString();
    EXPECT_EQ(*score, *builtin) << example;
  }
}

// The built-in's summation order (blocks of 512 floats, 16 lanes, a partial block's tail) at
// sizes around each boundary, and at the cnn's size.
TEST(ScriptMetric, CosWeightsInTheBuiltinOrderGivesItsScoreToTheLastBit) {
  auto metric = Load(Example("cos_weights_builtin_order"));
  ASSERT_TRUE(metric);
  auto simple = Load(Example("cos_weights"));
  ASSERT_TRUE(simple);
  for (size_t floats : {1, 15, 16, 17, 511, 512, 513, 1040, 56714}) {
    const std::vector<float> own = RandomWeights(floats, floats);
    std::vector<float> peer = RandomWeights(floats, floats + 1);
    for (size_t i = 0; i < floats; ++i) peer[i] += 0.5f * own[i];
    const Result<double> builtin = similarity::CosineWeightsMetric().Score(Input(own, peer));
    const Result<double> plugin = metric->Score(Input(own, peer));
    const Result<double> plain = simple->Score(Input(own, peer));
    ASSERT_TRUE(builtin.ok() && plugin.ok() && plain.ok()) << plugin.status().ToString();
    EXPECT_EQ(*plugin, *builtin) << floats << " floats";
    EXPECT_NEAR(*plain, *builtin, 1e-6) << floats << " floats, three float32 dot products";
  }
}

TEST(ScriptMetric, StatesWhatItNeedsFromItsAttributes) {
  auto cosine = Load(Example("cos_weights"));
  ASSERT_TRUE(cosine);
  EXPECT_EQ(cosine->Name(), "torchscript");
  EXPECT_TRUE(cosine->Symmetric());
  EXPECT_TRUE(cosine->Needs().weights);
  EXPECT_FALSE(cosine->Needs().initial_weights || cosine->Needs().own_data_loss ||
               cosine->Needs().exchanged_score);
  auto loss = Load(Fixture("metric_inverse_loss"));
  ASSERT_TRUE(loss);
  EXPECT_TRUE(loss->Needs().own_data_loss);
  EXPECT_FALSE(loss->Needs().weights);
  EXPECT_FALSE(loss->Symmetric());
  auto grad = Load(Fixture("metric_cos_grad"));
  ASSERT_TRUE(grad);
  EXPECT_TRUE(grad->Needs().initial_weights);
}

TEST(ScriptMetric, AnOwnLossMetricGetsTheLossOfThePeersWeightsOnTheNodesData) {
  auto metric = Load(Fixture("metric_inverse_loss"));
  ASSERT_TRUE(metric);
  const std::vector<float> own = {1, 2}, peer = {3, 4};
  similarity::MetricInput in = Input(own, peer);
  std::vector<float> evaluated;
  in.own_data_loss = [&](std::span<const float> w) -> Result<double> {
    evaluated.assign(w.begin(), w.end());
    return 0.25;
  };
  const Result<double> score = metric->Score(in);
  const Result<double> builtin = similarity::InverseLossMetric().Score(in);
  ASSERT_TRUE(score.ok() && builtin.ok()) << score.status().ToString();
  EXPECT_EQ(evaluated, peer);
  EXPECT_EQ(*score, *builtin) << "the inv_loss plug-in is 1 / (L + 1e-6)";
  in.own_data_loss = [](std::span<const float>) -> Result<double> {
    return Status::InvalidArgument("no data");
  };
  ExpectError(metric->Score(in).status(), ErrorCode::kInvalidArgument, {"own_loss", "no data"});
}

TEST(ScriptMetric, InitialWeightsReachTheModuleOnlyWhenItNeedsThem) {
  auto grad = Load(Fixture("metric_cos_grad"));
  ASSERT_TRUE(grad);
  const std::vector<float> own = {2, 1}, peer = {1, 2}, initial = {1, 1};
  similarity::MetricInput in = Input(own, peer);
  in.initial = initial;
  const Result<double> score = grad->Score(in);
  ASSERT_TRUE(score.ok()) << score.status().ToString();
  EXPECT_EQ(*score, 0.0) << "(1, 0) and (0, 1) are orthogonal";
  in.initial = {};
  ExpectError(grad->Score(in).status(), ErrorCode::kLayoutMismatch,
              {"initial weights have 0 values, expected 2"});
}

// metric_flaky misbehaves on a peer whose first weight is 123, 124 or 125.
TEST(ScriptMetric, EveryFaultAtRunTimeCostsThePeerAStatusNamingTheFile) {
  auto metric = Load(Fixture("metric_flaky"));
  ASSERT_TRUE(metric);
  const std::string path = Fixture("metric_flaky");
  std::vector<float> own = {1, 0, 0}, peer = {1, 1, 0};
  const Result<double> fine = metric->Score(Input(own, peer));
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_NEAR(*fine, std::sqrt(0.5), 1e-6);
  peer[0] = 123;
  ExpectError(metric->Score(Input(own, peer)).status(), ErrorCode::kNonFinite,
              {path, "returned a tensor of shape [] (Float) holding nan"});
  peer[0] = 124;
  ExpectError(metric->Score(Input(own, peer)).status(), ErrorCode::kInternal,
              {path, "forward threw", "flaky metric: sentinel 124"});
  peer[0] = 125;
  ExpectError(metric->Score(Input(own, peer)).status(), ErrorCode::kInvalidArgument,
              {path, "it returned a tensor of shape [2]"});
  const std::vector<float> longer = {1, 1, 1, 1};
  ExpectError(metric->Score(Input(own, longer)).status(), ErrorCode::kLayoutMismatch,
              {path, "own weights have 3 values, peer weights 4"});
  ExpectError(metric->Score(Input({}, {})).status(), ErrorCode::kInvalidArgument,
              {"empty weight vector"});
}

TEST(ScriptMetric, OneInstanceScoresFromSeveralThreadsAtOnce) {
  auto metric = Load(Example("cos_weights"), 5000);
  ASSERT_TRUE(metric);
  const std::vector<float> own = RandomWeights(5000, 1), peer = RandomWeights(5000, 2);
  const Result<double> expected = metric->Score(Input(own, peer));
  ASSERT_TRUE(expected.ok());
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 100; ++k) {
        const Result<double> s = metric->Score(Input(own, peer));
        if (!s.ok() || *s != *expected) ++mismatches[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace meshlearn::plugins
