// The training learner: the Learner facade (node/logic/learner.h) over its parts, each with one
// job and its own header:
// - PeerMerger (peer_merger.h): scores the round's peer models and merges them, with the metric
//   and the merge rule of pluggable_parts.h;
// - LocalTrainer (local_trainer.h): local training, evaluation, early stopping, and the
//   PrivacyBudget (privacy_budget.h) of DP-SGD;
// - ClusterObserver (cluster_observer.h): the update directions of FLIC / OCFL;
// - EmdMeasurer (emd_measurer.h): the learner's side of the EMD exchange;
// - MakeDataSignature (data_signature.h): FLT's data signature.
// This file builds them from the config and sends each call on.
#include "node/learner/learner_factory.h"

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/stable_hash.h"
#include "node/learner/cluster_observer.h"
#include "node/learner/data_signature.h"
#include "node/learner/emd_measurer.h"
#include "node/learner/local_trainer.h"
#include "node/learner/peer_merger.h"
#include "node/learner/pluggable_parts.h"
#include "node/learner/poisoned_learner.h"
#include "node/learner/privacy_budget.h"
#include "training/model.h"
#include "training/shard_file.h"
#include "training/trainer.h"

namespace meshlearn::node {
namespace {

std::string ArchitectureIdOf(const training::ModelSpec& spec, const ParamLayout& layout) {
  std::ostringstream id;
  id << NameOf(training::ArchitectureNames(), spec.architecture) << '/' << spec.num_outputs << '/';
  for (size_t i = 0; i < spec.input_shape.size(); ++i) id << (i ? "x" : "") << spec.input_shape[i];
  id << '/' << layout.total_floats();
  return id.str();
}

// How the node averages its losses ([training] loss_mean): under "batches", over batches of its
// training batch size, as file 004's code does for its clients' training data (the batch size of
// its DataLoader; its validation batches are 8, the batch size of file 004's image runs).
training::LossAveraging LossAveragingOf(const NodeConfig& config) {
  if (config.training.loss_mean == training::LossMean::kSamples) return {};
  return {training::LossMean::kBatches, config.training.batch_size};
}

class TrainingLearner final : public Learner {
 public:
  // The learner of `config` over `shard` (the node's [data] shard as read).
  static Result<std::unique_ptr<Learner>> Create(const NodeConfig& config,
                                                 training::ClientShard shard) {
    MESHLEARN_RETURN_IF_ERROR(training::SetComputeThreads(config.threads));
    std::unique_ptr<TrainingLearner> learner(new TrainingLearner());
    learner->shard_ = std::move(shard);
    const training::Dataset& train = learner->shard_.train;
    if (train.size() == 0) {
      return Status::InvalidArgument("shard '" + config.data.shard + "' has no training samples");
    }
    const training::ModelSpec spec = ModelSpecOf(config, train);
    auto model = training::CreateModel(spec);
    if (!model.ok()) return model.status().WithContext("[model]");
    learner->model_ = std::move(*model);
    training::Model& m = *learner->model_;

    const size_t floats = m.Layout().total_floats();
    auto metric = MakeMetric(config.learning, floats);
    if (!metric.ok()) return metric.status();
    auto rule = MakeMergeRule(config.learning, floats);
    if (!rule.ok()) return rule.status();
    const training::LossAveraging averaging = LossAveragingOf(config);
    auto merger = PeerMerger::Create(m, train, std::move(*metric), std::move(*rule),
                                     config.learning.merge_min_score, averaging);
    if (!merger.ok()) return merger.status();
    learner->merger_ = std::move(*merger);
    learner->architecture_id_ = ArchitectureIdOf(spec, m.Layout());
    if (std::optional<similarity::ClusterPolicyKind> kind = config.learning.ClusterPolicy()) {
      similarity::ClusterPolicyConfig policy;
      policy.policy = *kind;
      policy.self = config.id;
      policy.cluster_after = config.clustering.cluster_after;
      policy.recluster_every = config.clustering.recluster_every;
      policy.algorithm = config.clustering.algorithm;
      policy.distance_threshold = config.clustering.distance_threshold;
      policy.linkage = config.clustering.linkage;
      policy.seed = config.seed;
      auto made = similarity::MakeClusterPolicy(policy);
      if (!made.ok()) return made.status().WithContext("[clustering]");
      learner->clusters_.emplace(config.id, std::move(*made));
    }
    auto needs_embedding = [&](const std::string& what) {
      return Status::InvalidArgument(
          what +
          " needs a model with an embedding (cnn_emd, cnn, mlp, or a "
          "TorchScript module with embed); '" +
          std::string(NameOf(training::ArchitectureNames(), config.model.architecture)) +
          "' has none");
    };
    const uint64_t train_seed = NodeTrainingSeed(config);
    if (config.learning.UsesSignatures()) {
      if (m.EmbeddingDim() == 0) {
        return needs_embedding("metric \"centroid\" / sampler \"centroid_cluster\"");
      }
      auto signature =
          MakeDataSignature(m, train, static_cast<size_t>(config.signature.k),
                            static_cast<uint32_t>(config.signature.max_samples), train_seed);
      if (!signature.ok()) return signature.status().WithContext("[signature]");
      learner->signature_ = std::move(*signature);
    }
    std::optional<PrivacyBudget> privacy;
    if (config.privacy.enabled) {
      auto budget =
          PrivacyBudget::Create(config.privacy, m, config.training.batch_size,
                                config.training.local_epochs, config.training.rounds, train.size());
      if (!budget.ok()) return budget.status();
      privacy = std::move(*budget);
    }
    training::TrainConfig train_config;
    train_config.optimizer = {config.training.optimizer, config.training.learning_rate,
                              config.training.momentum, config.training.weight_decay};
    train_config.batch_size = config.training.batch_size;
    train_config.epochs = config.training.local_epochs;
    learner->trainer_.emplace(m, learner->shard_, train_config, averaging, config.training.patience,
                              config.training.stopped_serves == StoppedServes::kLast, train_seed,
                              std::move(privacy));
    std::unique_ptr<similarity::EmdSolver> solver;
    if (config.emd.enabled) {
      similarity::EmdOptions emd;
      emd.solver = config.emd.solver;
      auto made = similarity::MakeEmdSolver(emd);
      if (!made.ok()) return made.status().WithContext("[emd] solver");
      solver = std::move(*made);
      if (m.EmbeddingDim() == 0) return needs_embedding("[emd] enabled");
    }
    learner->emd_.emplace(m, learner->shard_, train_seed, config.emd.proj_ratio, std::move(solver));
    return std::unique_ptr<Learner>(std::move(learner));
  }

  const ParamLayout& Layout() const override { return model_->Layout(); }
  uint64_t TrainSize() const override { return shard_.train.size(); }
  const std::string& ArchitectureId() const override { return architecture_id_; }

  Result<RoundOutcome> RunRound(const RoundJob& job) override {
    RoundOutcome out;
    out.round = job.round;
    std::vector<float> own = model_->Parameters();
    merger_->Score(job, own, out);
    if (trainer_->MustRest()) {
      trainer_->Rest(std::move(own), out);
      return out;
    }
    if (job.round > 0) MESHLEARN_RETURN_IF_ERROR(merger_->Merge(job, out, own));
    std::vector<float> merged = clusters_ ? model_->Parameters() : std::vector<float>();
    if (job.return_merged && job.round > 0) {
      out.merged_weights = FloatArray::Own(clusters_ ? merged : model_->Parameters());
    }
    MESHLEARN_RETURN_IF_ERROR(trainer_->TrainAndEvaluate(job.round, out));
    std::vector<float> trained = model_->Parameters();
    if (job.round == 0) emd_->RememberEmbeddingModel(trained);
    if (clusters_) MESHLEARN_RETURN_IF_ERROR(clusters_->Observe(job, merged, trained, out));
    MESHLEARN_RETURN_IF_ERROR(trainer_->Finish(job.round, std::move(trained), out));
    return out;
  }

  Result<ProjectedEmbeddings> EmbedForPeer(std::span<const float> weights, uint64_t seed,
                                           uint32_t max_samples) override {
    return emd_->EmbedForPeer(weights, seed, max_samples);
  }
  Result<EmdMeasure> MeasureEmd(const ProjectedEmbeddings& peer, uint64_t seed,
                                uint32_t max_samples) override {
    return emd_->MeasureEmd(peer, seed, max_samples);
  }
  Result<OwnProjection> ProjectOwnTrain(uint64_t seed, uint32_t max_samples) override {
    return emd_->ProjectOwnTrain(seed, max_samples);
  }
  Result<double> WitnessDistance(const ProjectedEmbeddings& train,
                                 const ProjectedEmbeddings& validation) override {
    return emd_->WitnessDistance(train, validation);
  }
  const ProjectedEmbeddings& DataSignature() const override { return signature_; }
  LearnerState Snapshot() const override { return trainer_->Snapshot(); }
  Status Restore(const LearnerState& state) override { return trainer_->Restore(state); }

 private:
  TrainingLearner() = default;

  training::ClientShard shard_;
  std::unique_ptr<training::Model> model_;
  std::string architecture_id_;
  std::unique_ptr<PeerMerger> merger_;
  std::optional<LocalTrainer> trainer_;
  std::optional<ClusterObserver> clusters_;  // sampler louvain|temperature
  std::optional<EmdMeasurer> emd_;
  ProjectedEmbeddings signature_;  // FLT's data signature (0 rows: off)
};

}  // namespace

uint64_t NodeTrainingSeed(const NodeConfig& config) { return config.seed ^ StableHash(config.id); }

training::ModelSpec ModelSpecOf(const NodeConfig& config, const training::Dataset& samples) {
  training::ModelSpec spec;
  spec.architecture = config.model.architecture;
  spec.input_shape = samples.sample_shape;
  spec.num_outputs =
      samples.task == training::Task::kClassification ? samples.num_classes : int64_t{1};
  spec.seed = config.seed;
  spec.hidden = config.model.hidden;
  spec.torchscript_path = config.model.torchscript_path;
  return spec;
}

Result<std::unique_ptr<Learner>> CreateLearner(const NodeConfig& config) {
  auto shard = training::ReadShard(config.data.shard);
  if (!shard.ok()) return shard.status().WithContext("[data] shard");
  PoisonData(config.attack, *shard);
  auto honest = TrainingLearner::Create(config, std::move(*shard));
  if (!honest.ok() || !config.attack.PoisonsModels()) return honest;
  auto script = MakeScriptAttack(config.attack, (*honest)->Layout().total_floats());
  if (!script.ok()) return script.status();
  return MakePoisonedLearner(std::move(*honest), config.attack, NodeTrainingSeed(config),
                             std::move(*script));
}

}  // namespace meshlearn::node
