// The TorchScript merge rule (plugins/script_merge.h): every refusal at load names the file and
// what was expected; the FedAvg example gives the built-in's merged weights on hand-worked
// inputs, with FedAvg, FedSim and staleness weights, and in the built-in's order to the last bit
// on inputs whose order changes the rounding; a fault at run time fails the merge and
// writes nothing; and the geometric median example holds against a far model.
#include "plugins/script_merge.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/plugins/plugin_test_support.h"
#include "training/robust_merge.h"

namespace meshlearn::plugins {
namespace {

using testing::Example;
using testing::ExpectError;
using testing::Fixture;
using testing::RandomWeights;
using training::AggregationKind;
using training::MergeInput;
using training::MergeWeights;

Status Refusal(const std::string& path) {
  return testing::Refused(LoadScriptMergeRule(path, {}, 64), path);
}

std::unique_ptr<training::MergeRule> Load(const std::string& path, const MergeWeights& weights) {
  auto rule = LoadScriptMergeRule(path, weights, 64);
  EXPECT_TRUE(rule.ok()) << rule.status().ToString();
  return rule.ok() ? std::move(*rule) : nullptr;
}

// The merge of `own` (n = 1) and `peers` by `rule`.
std::vector<float> Merged(const training::MergeRule& rule, const std::vector<float>& own,
                          const std::vector<MergeInput>& peers) {
  std::vector<float> out(own.size());
  const Status s = rule.Merge({own, 1, 0}, peers, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

TEST(ScriptMergeLoad, RefusesAMissingFileAndAFileThatIsNotTorchScript) {
  ExpectError(Refusal("/nonexistent/merge.pt"), ErrorCode::kNotFound, {"/nonexistent/merge.pt"});
  const std::string path = testing::TextFile("not_torchscript_merge.pt", "PK");
  ExpectError(Refusal(path), ErrorCode::kMalformed, {path, "not a TorchScript archive"});
  ExpectError(Refusal(Fixture("no_forward")), ErrorCode::kInvalidArgument, {"no forward method"});
}

TEST(ScriptMergeLoad, RefusesAForwardOfAnotherSignature) {
  ExpectError(Refusal(Fixture("merge_one_argument")), ErrorCode::kInvalidArgument,
              {Fixture("merge_one_argument"),
               "forward(self, own: Tensor, peers: List[Tensor], coefficients: Tensor) -> Tensor"});
  ExpectError(Refusal(Example("cos_weights")), ErrorCode::kInvalidArgument,
              {"the module's is forward("});
}

TEST(ScriptMergeLoad, RefusesAResultOfTheWrongSizeAtTheProbe) {
  ExpectError(Refusal(Fixture("merge_short_result")), ErrorCode::kLayoutMismatch,
              {"the probe with 1 peer of 64 floats", Fixture("merge_short_result"),
               "the merged model must be a 1-D float32 tensor of 64 floats; it is a tensor of "
               "shape [63]"});
}

TEST(ScriptMergeLoad, RefusesARuleThatWritesIntoItsInputs) {
  ExpectError(Refusal(Fixture("merge_writes_input")), ErrorCode::kInvalidArgument,
              {"wrote into its inputs"});
}

// aggregation_test.cc's examples: FedAvg over n = 1, 1, 2 (coefficients 1/4, 1/4, 1/2) and
// FedSim over p = 0.375, 0.25 (own 0.375: 3/8, 3/8, 1/4).
TEST(ScriptMerge, FedAvgGivesTheBuiltinMergeOfHandWorkedModels) {
  const std::vector<float> own = {1, 2, 4, 8}, a = {3, 2, 0, -8}, b = {2, 2, 2, 2};
  const std::vector<MergeInput> peers = {{a, 1, 0}, {b, 2, 0}};
  auto plugin = Load(Example("fedavg"), {});
  ASSERT_TRUE(plugin);
  EXPECT_EQ(plugin->Name(), "torchscript");
  EXPECT_EQ(Merged(*plugin, own, peers), (std::vector<float>{2, 2, 2, 1}));
  EXPECT_EQ(Merged(*plugin, own, peers), Merged(*training::CreateMergeRule({}, {}), own, peers));

  const std::vector<float> x = {8, 0}, y = {0, 8}, z = {4, 4};
  const std::vector<MergeInput> fedsim_peers = {{y, 100, 0.375}, {z, 1, 0.25}};
  auto fedsim = Load(Example("fedavg"), {AggregationKind::kFedSim, {}});
  ASSERT_TRUE(fedsim);
  EXPECT_EQ(Merged(*fedsim, x, fedsim_peers), (std::vector<float>{4, 4}));
}

// Six models whose terms c_k x_k span many magnitudes, so that the order of the additions
// changes the rounding: the peers in every rotation of their order, FedAvg with equal and unequal
// train sizes (ties between coefficients are ordered by the models' bytes) and FedSim.
TEST(ScriptMerge, FedAvgInTheBuiltinOrderGivesItsMergedWeightsToTheLastBit) {
  auto in_order = Load(Example("fedavg_builtin_order"), {});
  auto in_order_fedsim = Load(Example("fedavg_builtin_order"), {AggregationKind::kFedSim, {}});
  auto simple = Load(Example("fedavg"), {});
  ASSERT_TRUE(in_order && in_order_fedsim && simple);
  const auto builtin = training::CreateMergeRule({}, {});
  const auto builtin_fedsim = training::CreateMergeRule({AggregationKind::kFedSim, {}}, {});
  const size_t floats = 1040;
  std::vector<std::vector<float>> models;
  for (uint64_t k = 0; k < 6; ++k) {
    models.push_back(RandomWeights(floats, 40 + k));
    for (float& w : models.back()) w *= std::pow(10.0f, static_cast<float>(k % 3) * 3 - 3);
  }
  const std::vector<float>& own = models[0];
  bool order_mattered = false;
  for (const std::vector<uint64_t>& sizes :
       {std::vector<uint64_t>{1, 1, 1, 1, 1}, std::vector<uint64_t>{3, 1, 2, 1, 3}}) {
    for (size_t rotation = 0; rotation < 5; ++rotation) {
      std::vector<MergeInput> peers;
      for (size_t j = 0; j < 5; ++j) {
        const size_t k = 1 + (j + rotation) % 5;
        peers.push_back({models[k], sizes[k - 1], 0.05 * static_cast<double>(k)});
      }
      const std::vector<float> expected = Merged(*builtin, own, peers);
      EXPECT_EQ(Merged(*in_order, own, peers), expected) << "rotation " << rotation;
      EXPECT_EQ(Merged(*in_order_fedsim, own, peers), Merged(*builtin_fedsim, own, peers))
          << "FedSim, rotation " << rotation;
      order_mattered = order_mattered || Merged(*simple, own, peers) != expected;
    }
  }
  EXPECT_TRUE(order_mattered) << "the inputs do not tell the two orders apart";
}

// staleness_test.cc's example: the peer 3 rounds behind keeps s(3) = 1/2 of its 1/2, and the own
// model takes the rest: 1/2, 1/4, 1/4.
TEST(ScriptMerge, GetsTheStalenessWeightedCoefficients) {
  const std::vector<float> own = {1, 2, 4, 8}, a = {3, 2, 0, -8}, b = {2, 2, 2, 2};
  const std::vector<MergeInput> peers = {{a, 1, 0, 0}, {b, 2, 0, 3}};
  const MergeWeights weights{AggregationKind::kFedAvg, {training::StalenessKind::kPolynomial}};
  auto plugin = Load(Example("fedavg"), weights);
  ASSERT_TRUE(plugin);
  EXPECT_EQ(Merged(*plugin, own, peers), (std::vector<float>{1.75, 2, 2.5, 2.5}));
}

TEST(ScriptMerge, WithoutPeersKeepsTheOwnModelAndMayMergeIntoIt) {
  auto plugin = Load(Example("fedavg"), {});
  ASSERT_TRUE(plugin);
  const std::vector<float> own = {1.5f, -2};
  EXPECT_EQ(Merged(*plugin, own, {}), own);
  std::vector<float> in_place = {1, 3}, peer = {3, 1};
  ASSERT_TRUE(
      plugin->Merge({in_place, 1, 0}, std::vector<MergeInput>{{peer, 1, 0}}, in_place).ok());
  EXPECT_EQ(in_place, (std::vector<float>{2, 2}));
}

// merge_flaky misbehaves when the first peer's first weight is 123, 124 or 125.
TEST(ScriptMerge, AFaultAtRunTimeFailsTheMergeAndWritesNothing) {
  auto plugin = Load(Fixture("merge_flaky"), {});
  ASSERT_TRUE(plugin);
  const std::string path = Fixture("merge_flaky");
  const std::vector<float> own = {1, 2, 3};
  // What the module returned, or raised and where in its source (make_fixtures.py, the line).
  const struct {
    float sentinel;
    ErrorCode code;
    std::vector<std::string> parts;
  } faults[] = {{123.0f, ErrorCode::kNonFinite, {"the merged model holds NaN or Inf (at index 0)"}},
                {124.0f,
                 ErrorCode::kInternal,
                 {"forward threw: builtins.RuntimeError: flaky merge: sentinel 124",
                  "make_fixtures.py\", line "}},
                {125.0f, ErrorCode::kLayoutMismatch, {"of 3 floats; it is a tensor of shape [2]"}}};
  for (const auto& fault : faults) {
    const std::vector<float> peer = {fault.sentinel, 0, 0};
    std::vector<float> out = {7, 7, 7};
    std::vector<std::string> parts = fault.parts;
    parts.push_back(path);
    ExpectError(plugin->Merge({own, 1, 0}, std::vector<MergeInput>{{peer, 1, 0}}, out), fault.code,
                parts);
    EXPECT_EQ(out, (std::vector<float>{7, 7, 7})) << "nothing is written on a fault";
  }
  const std::vector<float> shorter = {1, 2};
  std::vector<float> out(own.size());
  ExpectError(plugin->Merge({own, 1, 0}, std::vector<MergeInput>{{shorter, 1, 0}}, out),
              ErrorCode::kLayoutMismatch, {"peer model 0 has 2 floats, expected 3"});
}

// Own (0, 0), two honest peers (1, 0) and (0, 1), and an attacker at (1000, 1000), equal
// weights: the mean moves to about (250, 250); the geometric median of the four points is
// (0.5, 0.5), and of the honest three their Fermat point (0.2113, 0.2113) (scipy's minimize).
TEST(ScriptMerge, TheGeometricMedianStaysNearTheHonestModels) {
  auto plugin = Load(Example("geometric_median"), {});
  ASSERT_TRUE(plugin);
  const std::vector<float> own = {0, 0}, a = {1, 0}, b = {0, 1}, far = {1000, 1000};
  const std::vector<MergeInput> peers = {{a, 1, 0}, {b, 1, 0}, {far, 1, 0}};
  const std::vector<float> median = Merged(*plugin, own, peers);
  const std::vector<float> mean = Merged(*training::CreateMergeRule({}, {}), own, peers);
  EXPECT_GT(mean[0], 249);
  EXPECT_NEAR(median[0], 0.5f, 0.01f);
  EXPECT_NEAR(median[1], 0.5f, 0.01f);
  const std::vector<MergeInput> honest = {{a, 1, 0}, {b, 1, 0}};
  const std::vector<float> without = Merged(*plugin, own, honest);
  EXPECT_NEAR(without[0], 0.2113f, 0.01f);
  EXPECT_NEAR(without[1], 0.2113f, 0.01f);
}

}  // namespace
}  // namespace meshlearn::plugins
