// FedAvg and FedSim match hand-computed merges exactly, do not depend on peer order, and reject
// mismatched lengths and non-finite weights. One contract suite runs over every rule.

#include "training/aggregation.h"
#include "training/robust_merge.h"

#include <gtest/gtest.h>

#include <optional>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace meshlearn::training {
namespace {

// The aggregation named `name` ("fedavg", "fedsim").
AggregationKind Kind(const std::string& name) {
  std::optional<AggregationKind> kind = ValueNamed(AggregationKindNames(), name);
  EXPECT_TRUE(kind.has_value()) << name;
  return kind.value_or(AggregationKind::kFedAvg);
}

// The weighted average ([learning] robust = "none") with the weights of `name`.
std::unique_ptr<MergeRule> Rule(const std::string& name) {
  return CreateMergeRule({Kind(name)}, RobustOptions{});
}

TEST(FedAvg, MatchesAHandComputedMergeExactly) {
  const std::vector<float> own = {1, 2, 4, 8}, a = {3, 2, 0, -8}, b = {2, 2, 2, 2};
  // n = 1, 1, 2: coefficients 1/4, 1/4, 1/2.
  const std::vector<MergeInput> peers = {{a, 1, 0}, {b, 2, 0}};
  std::vector<float> out(4);
  ASSERT_TRUE(Rule("fedavg")->Merge({own, 1, 0}, peers, out).ok());
  EXPECT_EQ(out, (std::vector<float>{2, 2, 2, 1}));
}

TEST(FedSim, MatchesAHandComputedMergeExactly) {
  const std::vector<float> own = {8, 0}, a = {0, 8}, b = {4, 4};
  // p = 0.375, 0.25; own weight = max p = 0.375; total 1: coefficients 3/8, 3/8, 1/4.
  const std::vector<MergeInput> peers = {{a, 100, 0.375}, {b, 1, 0.25}};
  Result<std::vector<double>> c =
      AggregationCoefficients(AggregationKind::kFedSim, {own, 5, 0}, peers);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (std::vector<double>{0.375, 0.375, 0.25}));
  std::vector<float> out(2);
  ASSERT_TRUE(Rule("fedsim")->Merge({own, 5, 0}, peers, out).ok());
  EXPECT_EQ(out, (std::vector<float>{4, 4}));
}

TEST(FedSim, WithoutPeersOrProbabilitiesTheNodeKeepsItsModel) {
  const std::vector<float> own = {1.5f, -2};
  std::vector<float> out(2);
  ASSERT_TRUE(Rule("fedsim")->Merge({own, 1, 0}, {}, out).ok());
  EXPECT_EQ(out, own);
  const std::vector<float> peer = {9, 9};
  const std::vector<MergeInput> peers = {{peer, 1, 0.0}};
  ASSERT_TRUE(Rule("fedsim")->Merge({own, 1, 0}, peers, out).ok());
  EXPECT_EQ(out, own);
}

TEST(AggregationFactory, KnowsFedAvgAndFedSimAndListsThemOnError) {
  EXPECT_EQ(NamesOf(AggregationKindNames()), (std::vector<std::string>{"fedavg", "fedsim"}));
  for (const std::string& name : NamesOf(AggregationKindNames())) {
    EXPECT_EQ(Rule(name)->Weights().aggregation, Kind(name));
  }
  EXPECT_FALSE(ValueNamed(AggregationKindNames(), "fedprox").has_value());
}

TEST(FedAvg, AllZeroTrainSizesAreRejected) {
  const std::vector<float> w = {1};
  std::vector<float> out(1);
  EXPECT_EQ(Rule("fedavg")->Merge({w, 0, 0}, {}, out).code(), ErrorCode::kInvalidArgument);
}

TEST(FedSim, NegativeOrNanProbabilitiesAreRejected) {
  const std::vector<float> w = {1};
  std::vector<float> out(1);
  for (double p : {-0.1, std::nan("")}) {
    const std::vector<MergeInput> peers = {{w, 1, p}};
    EXPECT_EQ(Rule("fedsim")->Merge({w, 1, 0}, peers, out).code(), ErrorCode::kInvalidArgument);
  }
}

// The contract every rule meets.
class AggregationContract : public ::testing::TestWithParam<std::string> {
 protected:
  // Five peers and the own model of `size` floats with varied train sizes and probabilities.
  void MakeModels(size_t size) {
    std::mt19937 gen(11);
    std::normal_distribution<float> normal;
    for (int k = 0; k < 6; ++k) {
      weights_.emplace_back(size);
      for (float& v : weights_.back()) v = normal(gen);
    }
    own_ = {weights_[0], 50, 0};
    for (int k = 1; k < 6; ++k) {
      peers_.push_back({weights_[static_cast<size_t>(k)], static_cast<uint64_t>(10 * k + 3),
                        0.05 * k + (k == 3 ? 0.05 : 0.0)});
    }
  }
  std::vector<std::vector<float>> weights_;
  MergeInput own_;
  std::vector<MergeInput> peers_;
};

TEST_P(AggregationContract, CoefficientsAreNonNegativeAndSumToOne) {
  MakeModels(4);
  Result<std::vector<double>> c = AggregationCoefficients(Kind(GetParam()), own_, peers_);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 6u);
  double sum = 0;
  for (double x : *c) {
    EXPECT_GE(x, 0);
    sum += x;
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
}

TEST_P(AggregationContract, ResultIsBitForBitIndependentOfPeerOrder) {
  MakeModels(10007);  // not a multiple of the block size
  const auto rule = Rule(GetParam());
  std::vector<float> first(10007), again(10007);
  ASSERT_TRUE(rule->Merge(own_, peers_, first).ok());
  std::vector<size_t> order = {0, 1, 2, 3, 4};
  int permutations = 0;
  while (std::next_permutation(order.begin(), order.end())) {
    std::vector<MergeInput> shuffled;
    for (size_t i : order) shuffled.push_back(peers_[i]);
    ASSERT_TRUE(rule->Merge(own_, shuffled, again).ok());
    ASSERT_EQ(again, first) << "permutation " << permutations;
    ++permutations;
  }
  EXPECT_EQ(permutations, 119);
}

TEST_P(AggregationContract, IdenticalModelsMergeToThemselves) {
  MakeModels(1000);
  const std::vector<MergeInput> same = {{weights_[0], 7, 0.3}, {weights_[0], 9, 0.1}};
  std::vector<float> out(1000);
  ASSERT_TRUE(Rule(GetParam())->Merge(own_, same, out).ok());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_NEAR(out[i], weights_[0][i], 1e-6f * std::abs(weights_[0][i]) + 1e-7f);
  }
}

TEST_P(AggregationContract, MergingIntoTheOwnBufferIsAllowed) {
  MakeModels(5000);
  std::vector<float> expected(5000);
  ASSERT_TRUE(Rule(GetParam())->Merge(own_, peers_, expected).ok());
  std::vector<float> in_place = weights_[0];
  MergeInput own = own_;
  own.weights = in_place;
  ASSERT_TRUE(Rule(GetParam())->Merge(own, peers_, in_place).ok());
  EXPECT_EQ(in_place, expected);
}

TEST_P(AggregationContract, MismatchedLengthsAreRejected) {
  MakeModels(100);
  std::vector<float> shorter(99, 1.0f);
  peers_[2].weights = shorter;
  std::vector<float> out(100);
  Status s = Rule(GetParam())->Merge(own_, peers_, out);
  EXPECT_EQ(s.code(), ErrorCode::kLayoutMismatch);
  EXPECT_NE(s.message().find("peer model 2 has 99 floats"), std::string::npos) << s.ToString();
}

TEST_P(AggregationContract, NonFiniteWeightsAreRejected) {
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    weights_.clear();
    peers_.clear();
    MakeModels(3000);
    weights_[4][2500] = bad;
    std::vector<float> out(3000);
    Status s = Rule(GetParam())->Merge(own_, peers_, out);
    EXPECT_EQ(s.code(), ErrorCode::kNonFinite);
    EXPECT_NE(s.message().find("peer model 3"), std::string::npos) << s.ToString();
  }
}

INSTANTIATE_TEST_SUITE_P(EveryRule, AggregationContract,
                         ::testing::ValuesIn(NamesOf(AggregationKindNames())));

}  // namespace
}  // namespace meshlearn::training
