#pragma once
// A learner whose every number can be worked by hand, for tests of what a simulated node reads
// from its peers: its model is one float, starting at 10 × the digit that ends its node's id
// ("n2": 20); a round merges by averaging its own model with every peer model it received
// (FedAvg with equal weights), then trains by adding 1. Every peer scores 1. rounds.csv shows
// the merged model as train_loss and the trained one as val_loss and test_loss.

#include <memory>
#include <string>

#include "node/config/config.h"
#include "node/logic/learner.h"

namespace meshlearn::sim::testing {

class AveragingLearner final : public node::Learner {
 public:
  // The learner of the node of `config`.
  explicit AveragingLearner(const node::NodeConfig& config)
      : weight_(10.0f * static_cast<float>(config.id.back() - '0')) {}

  const ParamLayout& Layout() const override { return layout_; }
  uint64_t TrainSize() const override { return 1; }
  const std::string& ArchitectureId() const override { return architecture_; }
  Result<node::ProjectedEmbeddings> EmbedForPeer(std::span<const float>, uint64_t,
                                                 uint32_t) override {
    return Status::InvalidArgument("the averaging learner has no embedding");
  }
  Result<node::EmdMeasure> MeasureEmd(const node::ProjectedEmbeddings&, uint64_t,
                                      uint32_t) override {
    return Status::InvalidArgument("the averaging learner has no embedding");
  }
  Result<node::OwnProjection> ProjectOwnTrain(uint64_t, uint32_t) override {
    return Status::InvalidArgument("the averaging learner has no embedding");
  }
  Result<double> WitnessDistance(const node::ProjectedEmbeddings&,
                                 const node::ProjectedEmbeddings&) override {
    return Status::InvalidArgument("the averaging learner has no embedding");
  }
  const node::ProjectedEmbeddings& DataSignature() const override { return signature_; }

  Result<node::RoundOutcome> RunRound(const node::RoundJob& job) override {
    node::RoundOutcome out;
    out.round = job.round;
    float sum = weight_;
    for (const node::PeerModel& p : job.peers) {
      sum += p.weights.view()[0];
      out.scores.push_back({p.peer, 1.0, Status::Ok(), true});
    }
    const float merged = sum / static_cast<float>(job.peers.size() + 1);
    if (job.return_merged && job.round > 0) out.merged_weights = FloatArray::Own({merged});
    weight_ = merged + 1.0f;
    out.train_loss = merged;
    out.val_loss = weight_;
    out.test_loss = weight_;
    out.published_weights = FloatArray::Own({weight_});
    return out;
  }

  node::LearnerState Snapshot() const override {
    node::LearnerState state;
    state.weights = {weight_};
    state.best_weights = {weight_};
    return state;
  }
  Status Restore(const node::LearnerState& state) override {
    if (state.weights.size() != 1) return Status::LayoutMismatch("one float expected");
    weight_ = state.weights[0];
    return Status::Ok();
  }

 private:
  float weight_;
  ParamLayout layout_ = MakeContiguousLayout({{"w", {1}}});
  std::string architecture_ = "averaging/1";
  node::ProjectedEmbeddings signature_;
};

}  // namespace meshlearn::sim::testing
