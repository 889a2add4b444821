// The TorchScript attack (plugins/script_attack.h): every refusal at load names the file and what
// was expected, the min_max example serves within reach of the models it saw, and a fault at run
// time is a Status naming the file.
#include "plugins/script_attack.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/plugins/plugin_test_support.h"

namespace meshlearn::plugins {
namespace {

using testing::Example;
using testing::ExpectError;
using testing::Fixture;
using testing::RandomWeights;

Status Refusal(const std::string& path) {
  return testing::Refused(LoadScriptAttack(path, 64), path);
}

double Distance(std::span<const float> a, std::span<const float> b) {
  double d2 = 0;
  for (size_t i = 0; i < a.size(); ++i) d2 += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(d2);
}

TEST(ScriptAttackLoad, RefusesWhatNoPlugInMayBe) {
  ExpectError(Refusal("/nonexistent/attack.pt"), ErrorCode::kNotFound, {"/nonexistent/attack.pt"});
  const std::string path = testing::TextFile("not_torchscript_attack.pt", "");
  ExpectError(Refusal(path), ErrorCode::kMalformed, {path});
  ExpectError(Refusal(Fixture("no_forward")), ErrorCode::kInvalidArgument, {"no forward method"});
}

TEST(ScriptAttackLoad, RefusesAForwardOfAnotherSignature) {
  ExpectError(
      Refusal(Fixture("attack_wrong_signature")), ErrorCode::kInvalidArgument,
      {Fixture("attack_wrong_signature"),
       "forward(self, own: Tensor, fetched: List[Tensor]) -> Tensor", "Tensor fetched) -> Tensor"});
}

TEST(ScriptAttackLoad, RefusesAnAttackThatFailsWithNothingFetched) {
  ExpectError(Refusal(Fixture("attack_needs_a_fetched_model")), ErrorCode::kInternal,
              {"the probe with 0 fetched models of 64 floats", "forward threw"});
}

// S = the own model and 4 fetched ones: min-max serves a model no farther from any of S than
// the two farthest of S are from each other, and away from their mean.
TEST(ScriptAttack, MinMaxServesWithinTheSpreadOfWhatItSaw) {
  auto attack = LoadScriptAttack(Example("min_max"), 1000);
  ASSERT_TRUE(attack.ok()) << attack.status().ToString();
  std::vector<std::vector<float>> s;
  for (uint64_t k = 0; k < 5; ++k) s.push_back(RandomWeights(1000, k + 1));
  std::vector<std::span<const float>> fetched(s.begin() + 1, s.end());
  Result<std::vector<float>> served = (*attack)->Served(s[0], fetched);
  ASSERT_TRUE(served.ok()) << served.status().ToString();
  double spread = 0, farthest = 0;
  std::vector<float> mean(1000, 0);
  for (size_t a = 0; a < s.size(); ++a) {
    for (size_t b = 0; b < s.size(); ++b) spread = std::max(spread, Distance(s[a], s[b]));
    farthest = std::max(farthest, Distance(*served, s[a]));
    for (size_t i = 0; i < mean.size(); ++i) mean[i] += s[a][i] / 5;
  }
  EXPECT_LE(farthest, spread * (1 + 1e-5));
  EXPECT_GT(Distance(*served, mean), 0.5 * spread) << "it pushes away from the mean";
  Result<std::vector<float>> alone = (*attack)->Served(s[0], {});
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(*alone, s[0]) << "with nothing fetched it serves its own model";
}

// attack_flaky serves −w, and misbehaves when the own model's first weight is 123, 124 or 125.
TEST(ScriptAttack, AFaultAtRunTimeIsAStatusNamingTheFile) {
  auto attack = LoadScriptAttack(Fixture("attack_flaky"), 3);
  ASSERT_TRUE(attack.ok()) << attack.status().ToString();
  const std::string path = Fixture("attack_flaky");
  EXPECT_EQ((*attack)->Path(), path);
  std::vector<float> own = {1, 2, 3};
  Result<std::vector<float>> served = (*attack)->Served(own, {});
  ASSERT_TRUE(served.ok());
  EXPECT_EQ(*served, (std::vector<float>{-1, -2, -3}));
  own[0] = 123;
  ExpectError((*attack)->Served(own, {}).status(), ErrorCode::kNonFinite,
              {path, "the served model holds NaN or Inf"});
  own[0] = 124;
  ExpectError((*attack)->Served(own, {}).status(), ErrorCode::kInternal,
              {path, "flaky attack: sentinel 124"});
  own[0] = 125;
  ExpectError((*attack)->Served(own, {}).status(), ErrorCode::kLayoutMismatch,
              {path, "it is a tensor of shape [2]"});
  const std::vector<float> shorter = {1};
  const std::vector<std::span<const float>> fetched = {shorter};
  own = {1, 2, 3};
  ExpectError((*attack)->Served(own, fetched).status(), ErrorCode::kLayoutMismatch,
              {"a fetched model has 1 floats, the own 3"});
}

}  // namespace
}  // namespace meshlearn::plugins
