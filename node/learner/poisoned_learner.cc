#include "node/learner/poisoned_learner.h"

#include <cmath>
#include <random>
#include <vector>

namespace meshlearn::node {
namespace {

class PoisonedLearner final : public Learner {
 public:
  PoisonedLearner(std::unique_ptr<Learner> honest, AttackKind attack, uint64_t seed)
      : honest_(std::move(honest)), attack_(attack), seed_(seed) {}

  const ParamLayout& Layout() const override { return honest_->Layout(); }
  uint64_t TrainSize() const override { return honest_->TrainSize(); }
  const std::string& ArchitectureId() const override { return honest_->ArchitectureId(); }
  Result<ProjectedEmbeddings> EmbedForPeer(std::span<const float> weights, uint64_t seed,
                                           uint32_t max_samples) override {
    return honest_->EmbedForPeer(weights, seed, max_samples);
  }
  Result<EmdMeasure> MeasureEmd(const ProjectedEmbeddings& peer_validation, uint64_t seed,
                                uint32_t max_samples) override {
    return honest_->MeasureEmd(peer_validation, seed, max_samples);
  }
  Result<OwnProjection> ProjectOwnTrain(uint64_t seed, uint32_t max_samples) override {
    return honest_->ProjectOwnTrain(seed, max_samples);
  }
  Result<double> WitnessDistance(const ProjectedEmbeddings& train,
                                 const ProjectedEmbeddings& validation) override {
    return honest_->WitnessDistance(train, validation);
  }
  const ProjectedEmbeddings& DataSignature() const override { return honest_->DataSignature(); }
  LearnerState Snapshot() const override { return honest_->Snapshot(); }
  Status Restore(const LearnerState& state) override { return honest_->Restore(state); }

  Result<RoundOutcome> RunRound(const RoundJob& job) override {
    auto out = honest_->RunRound(job);
    if (!out.ok()) return out;
    out->published_weights = Poisoned(out->published_weights.view(), job.round);
    if (!out->merged_weights.view().empty()) {
      out->merged_weights = Poisoned(out->merged_weights.view(), job.round);
    }
    if (out->published_update) {
      out->published_update = Poisoned(out->published_update->view(), job.round);
    }
    return out;
  }

 private:
  FloatArray Poisoned(std::span<const float> weights, int64_t round) const {
    std::vector<float> poisoned(weights.begin(), weights.end());
    if (attack_ == AttackKind::kSignFlip) {
      for (float& w : poisoned) w = -w;
      return FloatArray::Own(std::move(poisoned));
    }
    double square_sum = 0;
    for (float w : weights) square_sum += static_cast<double>(w) * w;
    double rms = weights.empty() ? 0 : std::sqrt(square_sum / static_cast<double>(weights.size()));
    std::mt19937_64 rng(seed_ ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(round + 1)));
    std::normal_distribution<double> noise(0.0, rms > 0 ? rms : 1.0);
    for (float& w : poisoned) w = static_cast<float>(noise(rng));
    return FloatArray::Own(std::move(poisoned));
  }

  std::unique_ptr<Learner> honest_;
  AttackKind attack_;
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<Learner> MakePoisonedLearner(std::unique_ptr<Learner> honest, AttackKind attack,
                                             uint64_t seed) {
  return std::make_unique<PoisonedLearner>(std::move(honest), attack, seed);
}

}  // namespace meshlearn::node
