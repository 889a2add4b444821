// The model attacks ([attack]; node/learner/poisoned_learner.h), each against a hand-worked
// example. The honest learner is a stand-in that publishes fixed weights: these tests check what
// the attacker serves, not how it trains.
#include "node/learner/poisoned_learner.h"

#include <gtest/gtest.h>

#include <cmath>

namespace meshlearn::node {
namespace {

// An honest learner whose every round publishes `trained` (after training from `trained` −
// `update`), and whose state holds `initial` until its first round.
class FixedLearner final : public Learner {
 public:
  std::vector<float> initial = {0, 0};
  std::vector<float> trained = {1, 2};
  std::vector<float> update = {0.5, 0.5};
  int rounds_run = 0;

  const ParamLayout& Layout() const override { return layout_; }
  uint64_t TrainSize() const override { return 10; }
  const std::string& ArchitectureId() const override { return id_; }
  Result<ProjectedEmbeddings> EmbedForPeer(std::span<const float>, uint64_t, uint32_t) override {
    return Status::InvalidArgument("unused");
  }
  Result<EmdMeasure> MeasureEmd(const ProjectedEmbeddings&, uint64_t, uint32_t) override {
    return Status::InvalidArgument("unused");
  }
  Result<OwnProjection> ProjectOwnTrain(uint64_t, uint32_t) override {
    return Status::InvalidArgument("unused");
  }
  Result<double> WitnessDistance(const ProjectedEmbeddings&, const ProjectedEmbeddings&) override {
    return Status::InvalidArgument("unused");
  }
  const ProjectedEmbeddings& DataSignature() const override { return signature_; }
  LearnerState Snapshot() const override {
    LearnerState s;
    s.weights = rounds_run == 0 ? initial : trained;
    return s;
  }
  Status Restore(const LearnerState&) override { return Status::Ok(); }
  Result<RoundOutcome> RunRound(const RoundJob& job) override {
    ++rounds_run;
    RoundOutcome out;
    out.round = job.round;
    out.train_loss = 0.5;
    out.published_weights = FloatArray::Own(std::vector<float>(trained));
    out.published_update = FloatArray::Own(std::vector<float>(update));
    return out;
  }

 private:
  ParamLayout layout_;
  std::string id_ = "fixed";
  ProjectedEmbeddings signature_;
};

PeerModel Peer(const std::string& id, std::vector<float> w) {
  PeerModel p;
  p.peer = id;
  p.weights = FloatArray::Own(std::move(w));
  return p;
}

// The attacker's round: its honest model w = (1, 2) and two fetched models, a = (3, 2) and
// b = (2, 5). S = {w, a, b}: per coordinate the mean is (2, 3) and the sample standard deviation
// (n − 1) is (1, √3) (squared deviations 1 + 1 + 0 and 1 + 1 + 4, over 2).
RoundJob TwoPeers() {
  RoundJob job;
  job.round = 3;
  job.peers.push_back(Peer("b", {2, 5}));
  job.peers.push_back(Peer("a", {3, 2}));
  return job;
}

struct Served {
  std::vector<float> weights;
  std::vector<float> update;  // empty when none is served
  RoundOutcome outcome;
};

Served ServeOnce(const AttackSection& attack, const RoundJob& job,
                 FixedLearner** honest_out = nullptr) {
  auto honest = std::make_unique<FixedLearner>();
  if (honest_out) *honest_out = honest.get();
  auto attacker = MakePoisonedLearner(std::move(honest), attack, 7);
  auto out = attacker->RunRound(job);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  Served s;
  s.weights.assign(out->published_weights.view().begin(), out->published_weights.view().end());
  if (out->published_update) {
    s.update.assign(out->published_update->view().begin(), out->published_update->view().end());
  }
  s.outcome = std::move(*out);
  return s;
}

AttackSection Kind(AttackKind kind) {
  AttackSection a;
  a.kind = kind;
  return a;
}

TEST(ModelAttack, SignFlipServesMinusTheModelAndItsUpdate) {
  Served s = ServeOnce(Kind(AttackKind::kSignFlip), TwoPeers());
  EXPECT_EQ(s.weights, (std::vector<float>{-1, -2}));
  EXPECT_EQ(s.update, (std::vector<float>{-0.5, -0.5}));
}

TEST(ModelAttack, ScalingServesLambdaTimesTheModel) {
  AttackSection a = Kind(AttackKind::kScaling);
  a.scale = 10;
  Served s = ServeOnce(a, TwoPeers());
  EXPECT_EQ(s.weights, (std::vector<float>{10, 20}));
  EXPECT_EQ(s.update, (std::vector<float>{5, 5}));
}

TEST(ModelAttack, NoiseServesTheSameNoiseOnARerunAndNotTheModel) {
  Served first = ServeOnce(Kind(AttackKind::kNoise), TwoPeers());
  Served again = ServeOnce(Kind(AttackKind::kNoise), TwoPeers());
  EXPECT_EQ(first.weights, again.weights);
  EXPECT_NE(first.weights, (std::vector<float>{1, 2}));
}

TEST(ModelAttack, AlieServesMeanMinusZSigmaOfItsOwnAndTheFetchedModels) {
  AttackSection a = Kind(AttackKind::kAlie);
  a.alie_z = 1;
  Served s = ServeOnce(a, TwoPeers());
  ASSERT_EQ(s.weights.size(), 2u);
  EXPECT_FLOAT_EQ(s.weights[0], 1.0f);                    // 2 − 1
  EXPECT_FLOAT_EQ(s.weights[1], 3.0f - std::sqrt(3.0f));  // 3 − √3
  // The update is the served model minus the model the round trained from, (0.5, 1.5).
  EXPECT_FLOAT_EQ(s.update[0], 0.5f);
  EXPECT_FLOAT_EQ(s.update[1], 1.5f - std::sqrt(3.0f));
  a.alie_z = 2;
  Served wider = ServeOnce(a, TwoPeers());
  EXPECT_FLOAT_EQ(wider.weights[0], 0.0f);  // 2 − 2 · 1
}

TEST(ModelAttack, AlieWithNothingFetchedServesItsOwnModel) {
  RoundJob alone;
  alone.round = 0;
  Served s = ServeOnce(Kind(AttackKind::kAlie), alone);
  EXPECT_EQ(s.weights, (std::vector<float>{1, 2}));
}

TEST(ModelAttack, IpmServesMinusEpsilonTimesTheMean) {
  AttackSection a = Kind(AttackKind::kIpm);
  a.ipm_epsilon = 0.1;
  Served s = ServeOnce(a, TwoPeers());
  EXPECT_FLOAT_EQ(s.weights[0], -0.2f);
  EXPECT_FLOAT_EQ(s.weights[1], -0.3f);
}

TEST(ModelAttack, DissensusPushesAwayFromTheFetchedModelsMean) {
  // The fetched models' mean is (2.5, 3.5), their pull on w is (1.5, 1.5); ε = 1.5 serves
  // w − 2.25 = (−1.25, −0.25).
  AttackSection a = Kind(AttackKind::kDissensus);
  a.dissensus_epsilon = 1.5;
  Served s = ServeOnce(a, TwoPeers());
  EXPECT_FLOAT_EQ(s.weights[0], -1.25f);
  EXPECT_FLOAT_EQ(s.weights[1], -0.25f);
}

TEST(ModelAttack, LabelFlipServesWhatItTrainedAndFlipsLabels) {
  Served s = ServeOnce(Kind(AttackKind::kLabelFlip), TwoPeers());
  EXPECT_EQ(s.weights, (std::vector<float>{1, 2}));
  training::Dataset classes;
  classes.num_classes = 10;
  classes.labels = {0, 3, 9};
  FlipLabels(classes);
  EXPECT_EQ(classes.labels, (std::vector<int64_t>{9, 6, 0}));
  training::Dataset regression;
  regression.task = training::Task::kRegression;
  regression.targets = {1.5f, -2.0f};
  FlipLabels(regression);
  EXPECT_EQ(regression.targets, (std::vector<float>{-1.5f, 2.0f}));
}

TEST(ModelAttack, OnlyLabelFlipPoisonsTheData) {
  training::ClientShard shard;
  for (training::Dataset* d : {&shard.train, &shard.validation, &shard.test}) {
    d->num_classes = 4;
    d->labels = {0, 1};
  }
  for (const auto& [name, kind] : AttackKindNames()) {
    if (kind == AttackKind::kLabelFlip) continue;
    PoisonData(Kind(kind), shard);
    EXPECT_EQ(shard.train.labels, (std::vector<int64_t>{0, 1})) << name;
  }
  PoisonData(Kind(AttackKind::kLabelFlip), shard);
  for (const training::Dataset* d : {&shard.train, &shard.validation, &shard.test}) {
    EXPECT_EQ(d->labels, (std::vector<int64_t>{3, 2})) << "every split, so early stopping follows";
  }
}

TEST(ModelAttack, FreeRiderNeverTrainsAndServesTheInitialModel) {
  FixedLearner* honest = nullptr;
  Served s = ServeOnce(Kind(AttackKind::kFreeRider), TwoPeers(), &honest);
  EXPECT_EQ(honest->rounds_run, 0);
  EXPECT_EQ(s.weights, (std::vector<float>{0, 0}));
  EXPECT_TRUE(s.update.empty());
  EXPECT_TRUE(s.outcome.scores.empty());
  EXPECT_TRUE(std::isnan(s.outcome.train_loss));
}

TEST(ModelAttack, FreeRiderOnFetchedServesTheLastModelItFetched) {
  AttackSection a = Kind(AttackKind::kFreeRider);
  a.stale = StaleModel::kFetched;
  auto attacker = MakePoisonedLearner(std::make_unique<FixedLearner>(), a, 7);
  RoundJob none;
  auto round0 = attacker->RunRound(none);
  ASSERT_TRUE(round0.ok());
  EXPECT_EQ(round0->published_weights.view()[0], 0.0f);  // nothing fetched: the initial model
  auto round1 = attacker->RunRound(TwoPeers());          // "a" is the smallest id: (3, 2)
  ASSERT_TRUE(round1.ok());
  EXPECT_EQ(round1->published_weights.view()[0], 3.0f);
  auto round2 = attacker->RunRound(none);  // keeps its copy
  EXPECT_EQ(round2->published_weights.view()[1], 2.0f);
}

TEST(ModelAttack, MimicCopiesItsTargetAndKeepsTheCopyWhenItIsNotFetched) {
  AttackSection a = Kind(AttackKind::kMimic);
  a.target = "b";
  auto attacker = MakePoisonedLearner(std::make_unique<FixedLearner>(), a, 7);
  RoundJob only_a;
  only_a.peers.push_back(Peer("a", {3, 2}));
  auto before = attacker->RunRound(only_a);  // no copy of b yet: its own model
  EXPECT_EQ(before->published_weights.view()[1], 2.0f);
  EXPECT_EQ(before->published_weights.view()[0], 1.0f);
  auto copied = attacker->RunRound(TwoPeers());
  EXPECT_EQ(copied->published_weights.view()[1], 5.0f);
  auto kept = attacker->RunRound(only_a);
  EXPECT_EQ(kept->published_weights.view()[1], 5.0f);
}

TEST(ModelAttack, MimicWithoutTargetSticksToTheFirstPeerItFetched) {
  auto attacker =
      MakePoisonedLearner(std::make_unique<FixedLearner>(), Kind(AttackKind::kMimic), 7);
  auto first = attacker->RunRound(TwoPeers());  // "a" (smallest id)
  EXPECT_EQ(first->published_weights.view()[0], 3.0f);
  RoundJob only_b;
  only_b.peers.push_back(Peer("b", {2, 5}));
  auto later = attacker->RunRound(only_b);  // still a's copy
  EXPECT_EQ(later->published_weights.view()[0], 3.0f);
}

}  // namespace
}  // namespace meshlearn::node
