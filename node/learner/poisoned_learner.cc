#include "node/learner/poisoned_learner.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace meshlearn::node {
namespace {

using Floats = std::vector<float>;

// sign_flip and noise as they always were (their outputs must not change).
Floats SignFlipped(std::span<const float> w) {
  Floats out(w.size());
  std::transform(w.begin(), w.end(), out.begin(), [](float v) { return -v; });
  return out;
}

Floats Noise(std::span<const float> w, uint64_t seed, int64_t round) {
  double square_sum = 0;
  for (float v : w) square_sum += static_cast<double>(v) * v;
  double rms = w.empty() ? 0 : std::sqrt(square_sum / static_cast<double>(w.size()));
  std::mt19937_64 rng(seed ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(round + 1)));
  std::normal_distribution<double> noise(0.0, rms > 0 ? rms : 1.0);
  Floats out(w.size());
  for (float& v : out) v = static_cast<float>(noise(rng));
  return out;
}

Floats Scaled(std::span<const float> w, double scale) {
  Floats out(w.size());
  std::transform(w.begin(), w.end(), out.begin(),
                 [&](float v) { return static_cast<float>(scale * v); });
  return out;
}

// The statistics attacks over S = {own} ∪ fetched, coordinate by coordinate in double.
Floats FromStatistics(const AttackSection& attack, std::span<const float> own,
                      const std::vector<std::span<const float>>& fetched) {
  const double n = static_cast<double>(fetched.size() + 1);
  Floats out(own.size());
  for (size_t i = 0; i < own.size(); ++i) {
    double sum = own[i];
    for (std::span<const float> x : fetched) sum += x[i];
    const double mean = sum / n;
    double value = 0;
    if (attack.kind == AttackKind::kAlie) {
      double squares = (own[i] - mean) * (own[i] - mean);
      for (std::span<const float> x : fetched) squares += (x[i] - mean) * (x[i] - mean);
      const double sigma = n > 1 ? std::sqrt(squares / (n - 1)) : 0.0;
      value = mean - attack.alie_z * sigma;
    } else if (attack.kind == AttackKind::kIpm) {
      value = -attack.ipm_epsilon * mean;
    } else {  // kDissensus: w − ε · mean over F of (x − w)
      const double pull = fetched.empty() ? 0.0 : (sum - own[i]) / (n - 1) - own[i];
      value = own[i] - attack.dissensus_epsilon * pull;
    }
    out[i] = static_cast<float>(value);
  }
  return out;
}

// The fetched model of the smallest peer id, or null.
const PeerModel* SmallestId(const RoundJob& job) {
  const PeerModel* best = nullptr;
  for (const PeerModel& p : job.peers) {
    if (!best || p.peer < best->peer) best = &p;
  }
  return best;
}

class PoisonedLearner final : public Learner {
 public:
  PoisonedLearner(std::unique_ptr<Learner> honest, const AttackSection& attack, uint64_t seed,
                  std::unique_ptr<plugins::ScriptAttack> script)
      : honest_(std::move(honest)), attack_(attack), seed_(seed), script_(std::move(script)) {
    stale_ = honest_->Snapshot().weights;
    mimicked_ = attack_.target;
  }

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
    if (attack_.kind == AttackKind::kFreeRider) return FreeRide(job);
    auto out = honest_->RunRound(job);
    if (!out.ok() || attack_.kind == AttackKind::kLabelFlip) return out;
    if (!out->merged_weights.view().empty()) {  // a turn of the sequential schedule serves it
      Result<Floats> merged = Served(job, out->merged_weights.view());
      if (merged.ok()) {
        out->merged_weights = FloatArray::Own(std::move(*merged));
      } else {
        out->round_errors.push_back(merged.status().WithContext(kServesHonestly));
      }
    }
    const std::span<const float> w = out->published_weights.view();
    Result<Floats> served = Served(job, w);
    if (!served.ok()) {
      out->round_errors.push_back(served.status().WithContext(kServesHonestly));
      return out;
    }
    if (out->published_update) {
      const std::span<const float> delta = out->published_update->view();
      out->published_update = FloatArray::Own(ServedUpdate(job, w, delta, *served));
    }
    out->published_weights = FloatArray::Own(std::move(*served));
    return out;
  }

 private:
  // The context of an attack that failed this round.
  static constexpr const char* kServesHonestly =
      "[attack] failed, the honest model is served this round";

  // The model served this round, from the honest model `w` and the models of `job`; only the
  // plug-in of kTorchScript can fail.
  Result<Floats> Served(const RoundJob& job, std::span<const float> w) {
    std::vector<std::span<const float>> fetched;
    for (const PeerModel& p : job.peers) fetched.push_back(p.weights.view());
    switch (attack_.kind) {
      case AttackKind::kSignFlip:
        return SignFlipped(w);
      case AttackKind::kNoise:
        return Noise(w, seed_, job.round);
      case AttackKind::kScaling:
        return Scaled(w, attack_.scale);
      case AttackKind::kMimic:
        return Mimicked(job, w);
      case AttackKind::kTorchScript:
        if (!script_)
          return Status::InvalidArgument("[attack] kind = torchscript without a module");
        return script_->Served(w, fetched);
      default:  // alie, ipm, dissensus
        return FromStatistics(attack_, w, fetched);
    }
  }

  // The update served with `served`, from the honest model `w` and its update `delta`.
  Floats ServedUpdate(const RoundJob& job, std::span<const float> w, std::span<const float> delta,
                      const Floats& served) const {
    if (attack_.kind == AttackKind::kSignFlip) return SignFlipped(delta);
    if (attack_.kind == AttackKind::kNoise) return Noise(delta, seed_, job.round);
    if (attack_.kind == AttackKind::kScaling) return Scaled(delta, attack_.scale);
    Floats update(served.size());
    for (size_t i = 0; i < served.size(); ++i) update[i] = served[i] - (w[i] - delta[i]);
    return update;
  }

  Floats Mimicked(const RoundJob& job, std::span<const float> w) {
    if (mimicked_.empty()) {
      if (const PeerModel* first = SmallestId(job)) mimicked_ = first->peer;
    }
    for (const PeerModel& p : job.peers) {
      if (p.peer == mimicked_) copy_.assign(p.weights.view().begin(), p.weights.view().end());
    }
    return copy_.empty() ? Floats(w.begin(), w.end()) : copy_;
  }

  RoundOutcome FreeRide(const RoundJob& job) {
    if (attack_.stale == StaleModel::kFetched) {
      if (const PeerModel* fetched = SmallestId(job)) {
        stale_.assign(fetched->weights.view().begin(), fetched->weights.view().end());
      }
    }
    RoundOutcome out = RoundOutcome::Unmeasured(job.round);
    out.published_weights = FloatArray::Own(Floats(stale_));
    if (job.return_merged) out.merged_weights = FloatArray::Own(Floats(stale_));
    return out;
  }

  std::unique_ptr<Learner> honest_;
  AttackSection attack_;
  uint64_t seed_;
  Floats stale_;                                   // free_rider: what it serves
  std::string mimicked_;                           // mimic: the peer it copies (empty until chosen)
  Floats copy_;                                    // mimic: the latest copy of that peer's model
  std::unique_ptr<plugins::ScriptAttack> script_;  // torchscript: the module
};

}  // namespace

std::unique_ptr<Learner> MakePoisonedLearner(std::unique_ptr<Learner> honest,
                                             const AttackSection& attack, uint64_t seed,
                                             std::unique_ptr<plugins::ScriptAttack> script) {
  return std::make_unique<PoisonedLearner>(std::move(honest), attack, seed, std::move(script));
}

void PoisonData(const AttackSection& attack, training::ClientShard& shard) {
  if (attack.kind != AttackKind::kLabelFlip) return;
  for (training::Dataset* d : {&shard.train, &shard.validation, &shard.test}) FlipLabels(*d);
}

void FlipLabels(training::Dataset& data) {
  for (int64_t& y : data.labels) y = data.num_classes - 1 - y;
  for (float& y : data.targets) y = -y;
}

}  // namespace meshlearn::node
