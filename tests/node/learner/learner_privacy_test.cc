// A learner with [privacy]: ε grows with every round as the accountant says, a target ε is met
// by the derived σ, max_epsilon stops the node before the round that would exceed it, and the
// same config gives the same models. Without it: what an early-stopped learner serves
// ([training] stopped_serves).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "node/learner/learner_factory.h"
#include "node/logic/learner.h"
#include "training/dp_sgd.h"
#include "training/partition.h"
#include "training/rdp_accountant.h"
#include "training/shard_file.h"

namespace meshlearn::node {
namespace {

constexpr size_t kTrain = 100;

// A node config over one synthetic shard of kTrain training samples, without DP.
NodeConfig SyntheticConfig(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/learner_privacy_" + name;
  std::filesystem::remove_all(dir);
  training::PartitionConfig partition;
  partition.shift = training::ShiftKind::kSynthetic;
  partition.num_clients = 1;
  partition.train_per_client = kTrain;
  partition.validation_per_client = 50;
  partition.test_per_client = 50;
  partition.seed = 4;
  auto shards = training::BuildClientShards({}, partition);
  EXPECT_TRUE(shards.ok()) << shards.status().ToString();
  NodeConfig c;
  c.id = "node-0";
  c.data.shard = training::ShardPath(dir, 0);
  EXPECT_TRUE(training::WriteShard(c.data.shard, (*shards)[0]).ok());
  c.model.architecture = training::Architecture::kLinear;
  c.training.optimizer = training::OptimizerKind::kSgd;
  c.training.learning_rate = 0.003;
  c.training.batch_size = 8;
  c.training.rounds = 20;
  return c;
}

// SyntheticConfig with DP at σ = 1 and a clipping norm of 1.
NodeConfig PrivateConfig(const std::string& name) {
  NodeConfig c = SyntheticConfig(name);
  c.privacy.enabled = true;
  c.privacy.noise_multiplier = 1.0;
  c.privacy.max_grad_norm = 1.0;
  return c;
}

std::unique_ptr<Learner> Make(const NodeConfig& config) {
  auto learner = CreateLearner(config);
  EXPECT_TRUE(learner.ok()) << learner.status().ToString();
  return learner.ok() ? std::move(*learner) : nullptr;
}

// ε after `rounds` rounds of DP-SGD at the config's settings, as the accountant computes it.
double EpsilonAfter(const NodeConfig& c, int64_t rounds, double sigma) {
  const double q = training::PoissonSamplingRate(c.training.batch_size, kTrain);
  const int64_t steps = rounds * c.training.local_epochs *
                        training::DpSgdStepsPerEpoch(c.training.batch_size, kTrain);
  return training::DpSgdEpsilon(q, sigma, steps, c.privacy.delta);
}

TEST(LearnerPrivacy, MaxEpsilonStopsTheNodeBeforeTheRoundThatWouldExceedIt) {
  NodeConfig c = PrivateConfig("max_epsilon");
  c.privacy.max_epsilon = 5.0;
  // The first round whose training would take ε past 5: rounds before it train, it and later
  // ones do not.
  int64_t stop_round = 0;
  while (EpsilonAfter(c, stop_round + 1, 1.0) <= 5.0) ++stop_round;
  ASSERT_GE(stop_round, 2) << "the budget should allow a few rounds";
  ASSERT_LT(stop_round, 15);
  auto learner = Make(c);
  ASSERT_NE(learner, nullptr);
  double last_epsilon = 0;
  std::vector<float> served_when_stopped;
  for (int64_t round = 0; round < stop_round + 3; ++round) {
    auto out = learner->RunRound(RoundJob{round, {}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    if (round < stop_round) {
      EXPECT_FALSE(out->stopped) << "round " << round;
      EXPECT_NEAR(out->epsilon, EpsilonAfter(c, round + 1, 1.0), 1e-9) << "round " << round;
      EXPECT_GT(out->epsilon, last_epsilon);
      last_epsilon = out->epsilon;
    } else {
      EXPECT_TRUE(out->stopped) << "round " << round;
      EXPECT_EQ(out->epsilon, last_epsilon) << "a stopped node spends nothing more";
      EXPECT_LE(out->epsilon, 5.0);
      std::vector<float> served(out->published_weights.view().begin(),
                                out->published_weights.view().end());
      if (served_when_stopped.empty()) served_when_stopped = served;
      EXPECT_EQ(served, served_when_stopped) << "it keeps serving one model";
    }
  }
  // A restart from the checkpointed state keeps the budget spent.
  auto restarted = Make(c);
  ASSERT_TRUE(restarted->Restore(learner->Snapshot()).ok());
  auto out = restarted->RunRound(RoundJob{stop_round + 3, {}});
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->stopped);
  EXPECT_EQ(out->epsilon, last_epsilon);
}

TEST(LearnerPrivacy, ATargetEpsilonIsReachedAfterThePlannedRoundsAndNotBefore) {
  NodeConfig c = PrivateConfig("target");
  c.privacy.noise_multiplier.reset();
  c.privacy.target_epsilon = 3.0;
  c.training.rounds = 4;  // rounds 0..4: five rounds of local training
  auto learner = Make(c);
  ASSERT_NE(learner, nullptr);
  double epsilon = 0;
  for (int64_t round = 0; round <= c.training.rounds; ++round) {
    auto out = learner->RunRound(RoundJob{round, {}});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_FALSE(out->stopped);
    epsilon = out->epsilon;
  }
  EXPECT_LE(epsilon, 3.0);
  EXPECT_GE(epsilon, 2.99);  // σ is the smallest that meets the target, so little is left over
}

TEST(LearnerPrivacy, SameConfigSameModelsDifferentSeedDifferentNoise) {
  NodeConfig c = PrivateConfig("determinism");
  auto a = Make(c), b = Make(c);
  NodeConfig other = c;
  other.id = "node-1";  // the same initial model, another training seed
  auto d = Make(other);
  for (int64_t round = 0; round < 3; ++round) {
    auto x = a->RunRound(RoundJob{round, {}});
    auto y = b->RunRound(RoundJob{round, {}});
    auto z = d->RunRound(RoundJob{round, {}});
    ASSERT_TRUE(x.ok() && y.ok() && z.ok());
    const auto wx = x->published_weights.view(), wy = y->published_weights.view(),
               wz = z->published_weights.view();
    EXPECT_TRUE(std::equal(wx.begin(), wx.end(), wy.begin(), wy.end())) << "round " << round;
    EXPECT_FALSE(std::equal(wx.begin(), wx.end(), wz.begin(), wz.end())) << "round " << round;
  }
}

// `weights` as a vector, to compare.
std::vector<float> Floats(const FloatArray& weights) {
  return {weights.view().begin(), weights.view().end()};
}

// What a learner of `config` serves in the round early stopping stops it and in the round after,
// with the best and the current weights of its state then; fails when it never stops.
struct StoppedServing {
  std::vector<float> at_stop, after_stop, best, current;
};
StoppedServing ServingWhenStopped(const NodeConfig& config) {
  auto learner = Make(config);
  StoppedServing serving;
  if (!learner) return serving;
  for (int64_t round = 0; round < 200; ++round) {
    auto out = learner->RunRound(RoundJob{round, {}});
    if (!out.ok()) {
      ADD_FAILURE() << out.status().ToString();
      return serving;
    }
    if (!out->stopped) continue;
    serving.at_stop = Floats(out->published_weights);
    const LearnerState state = learner->Snapshot();
    serving.best = state.best_weights;
    serving.current = state.weights;
    auto next = learner->RunRound(RoundJob{round + 1, {}});
    EXPECT_TRUE(next.ok() && next->stopped);
    if (next.ok()) serving.after_stop = Floats(next->published_weights);
    return serving;
  }
  ADD_FAILURE() << "early stopping never stopped the learner";
  return serving;
}

TEST(LearnerStopping, AStoppedLearnerServesItsBestWeightsOrWithLastItsLastTrainedOnes) {
  // Patience 1 stops the learner at the first round whose validation loss does not improve;
  // that round's trained weights are not the best.
  NodeConfig c = SyntheticConfig("stopped_serves");
  c.training.learning_rate = 0.05;
  c.training.patience = 1;
  const StoppedServing best = ServingWhenStopped(c);
  ASSERT_FALSE(best.best.empty());
  EXPECT_EQ(best.at_stop, best.best);
  EXPECT_EQ(best.after_stop, best.best);
  EXPECT_EQ(best.current, best.best) << "the model is set back to its best weights";

  c.training.stopped_serves = StoppedServes::kLast;
  const StoppedServing last = ServingWhenStopped(c);
  EXPECT_EQ(last.best, best.best) << "the same training up to the stop";
  EXPECT_NE(last.at_stop, last.best);
  EXPECT_EQ(last.at_stop, last.current) << "it keeps its last trained weights";
  EXPECT_EQ(last.after_stop, last.at_stop) << "and serves them while it rests";
}

}  // namespace
}  // namespace meshlearn::node
