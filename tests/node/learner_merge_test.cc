// The learner's merge of top-k peer estimates: RoundJob::lag_correction is added to every merged
// peer marked `estimate` (CHOCO-gossip's consensus step, node/logic/round_driver.h), never to a
// peer that sent its model whole, and scoring sees the estimates as they arrived.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/node/learner_test_support.h"

namespace meshlearn::node {
namespace {

// Runs round 0 (local training) on a fresh learner of `config` and then round 1 with `job`.
RoundOutcome RoundOneOf(const NodeConfig& config, RoundJob job) {
  auto learner = MakeLearner(config);
  EXPECT_NE(learner, nullptr);
  if (learner == nullptr) return {};
  auto zero = learner->RunRound(RoundJob{0, {}});
  EXPECT_TRUE(zero.ok()) << zero.status().ToString();
  job.round = 1;
  auto one = learner->RunRound(job);
  EXPECT_TRUE(one.ok()) << one.status().ToString();
  return one.ok() ? *one : RoundOutcome{};
}

PeerModel Peer(std::vector<float> weights, bool estimate) {
  PeerModel p;
  p.peer = "peer-1";
  p.weights = FloatArray::Own(std::move(weights));
  p.train_size = 300;
  p.probability = 0.5;
  p.estimate = estimate;
  return p;
}

TEST(LearnerMerge, TheLagCorrectionIsAddedToEstimatesOnlyAndScoringSeesThemAsTheyArrived) {
  const NodeConfig config = SyntheticLearnerConfig("learner_merge", 100);
  auto probe = MakeLearner(config);
  ASSERT_NE(probe, nullptr);
  auto zero = probe->RunRound(RoundJob{0, {}});
  ASSERT_TRUE(zero.ok()) << zero.status().ToString();
  const std::span<const float> own = zero->published_weights.view();
  std::vector<float> estimate(own.size()), correction(own.size()), corrected(own.size());
  for (size_t i = 0; i < own.size(); ++i) {
    estimate[i] = 0.5f * own[i] + 0.1f;
    correction[i] = 0.05f * static_cast<float>(static_cast<int>(i % 7) - 3);
    corrected[i] = estimate[i] + correction[i];
  }

  RoundJob with_correction{1, {Peer(estimate, true)}};
  with_correction.lag_correction = FloatArray::Own(correction);
  const RoundOutcome a = RoundOneOf(config, with_correction);
  const RoundOutcome b = RoundOneOf(config, RoundJob{1, {Peer(corrected, false)}});
  RoundJob whole_model{1, {Peer(estimate, false)}};
  whole_model.lag_correction = FloatArray::Own(correction);
  const RoundOutcome c = RoundOneOf(config, whole_model);
  const RoundOutcome d = RoundOneOf(config, RoundJob{1, {Peer(estimate, true)}});

  ASSERT_EQ(a.scores.size(), 1u);
  ASSERT_TRUE(a.scores[0].merged && c.scores[0].merged);
  // Merging x̂_j with the correction is merging x̂_j + g (to float rounding).
  const std::span<const float> wa = a.published_weights.view();
  const std::span<const float> wb = b.published_weights.view();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) {
    EXPECT_NEAR(wa[i], wb[i], 1e-5 * std::max(1.0f, std::abs(wb[i]))) << i;
  }
  // A model sent whole takes no correction: as if there were none.
  EXPECT_EQ(c.published_weights, d.published_weights);
  EXPECT_NE(a.published_weights, d.published_weights);
  // Scoring sees the estimate as it arrived, with or without a correction.
  ASSERT_TRUE(a.scores[0].score && d.scores[0].score && b.scores[0].score);
  EXPECT_EQ(*a.scores[0].score, *d.scores[0].score);
  EXPECT_NE(*a.scores[0].score, *b.scores[0].score);
}

}  // namespace
}  // namespace meshlearn::node
