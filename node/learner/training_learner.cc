#include "node/learner/learner_factory.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

#include "base/stable_hash.h"
#include "node/learner/poisoned_learner.h"
#include "similarity/cluster_policy.h"
#include "similarity/emd.h"
#include "similarity/kmeans.h"
#include "similarity/metric.h"
#include "similarity/projection.h"
#include "training/aggregation.h"
#include "training/early_stopping.h"
#include "training/model.h"
#include "training/rdp_accountant.h"
#include "training/shard_file.h"
#include "training/trainer.h"

namespace meshlearn::node {
namespace {

using SteadyClock = std::chrono::steady_clock;

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

class TrainingLearner final : public Learner {
 public:
  static Result<std::unique_ptr<Learner>> Create(const NodeConfig& config) {
    MESHLEARN_RETURN_IF_ERROR(training::SetComputeThreads(config.threads));
    auto shard = training::ReadShard(config.data.shard);
    if (!shard.ok()) return shard.status().WithContext("[data] shard");
    auto learner = std::unique_ptr<TrainingLearner>(new TrainingLearner(config));
    learner->shard_ = std::move(*shard);

    const training::Dataset& train = learner->shard_.train;
    if (train.size() == 0) {
      return Status::InvalidArgument("shard '" + config.data.shard + "' has no training samples");
    }
    training::ModelSpec spec;
    spec.architecture = config.model.architecture;
    spec.input_shape = train.sample_shape;
    spec.num_outputs =
        train.task == training::Task::kClassification ? train.num_classes : int64_t{1};
    spec.seed = config.seed;
    spec.hidden = config.model.hidden;
    spec.torchscript_path = config.model.torchscript_path;
    auto model = training::CreateModel(spec);
    if (!model.ok()) return model.status().WithContext("[model]");
    learner->model_ = std::move(*model);

    learner->metric_ = similarity::MakeSimilarityMetric(config.learning.metric);
    learner->rule_ = training::CreateAggregationRule(config.learning.aggregation);

    learner->initial_ = learner->model_->Parameters();
    if (learner->metric_->Needs().own_data_loss) {
      auto loss = training::MakeWeightsLossFn(*learner->model_, learner->shard_.train);
      if (!loss.ok()) return loss.status();
      learner->own_data_loss_ = std::move(*loss);
    }
    learner->architecture_id_ = ArchitectureIdOf(spec, learner->model_->Layout());
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
      learner->policy_ = std::move(*made);
    }
    auto needs_embedding = [&](const std::string& what) {
      return Status::InvalidArgument(
          what +
          " needs a model with an embedding (cnn_emd, cnn, mlp, or a "
          "TorchScript module with embed); '" +
          std::string(NameOf(training::ArchitectureNames(), config.model.architecture)) +
          "' has none");
    };
    if (config.learning.UsesSignatures()) {
      if (learner->model_->EmbeddingDim() == 0) {
        return needs_embedding("metric \"centroid\" / sampler \"centroid_cluster\"");
      }
      auto signature = learner->ComputeSignature();
      if (!signature.ok()) return signature.status().WithContext("[signature]");
      learner->signature_ = std::move(*signature);
    }
    if (config.privacy.enabled) MESHLEARN_RETURN_IF_ERROR(learner->SetUpPrivacy());
    if (config.emd.enabled) {
      similarity::EmdOptions emd;
      emd.solver = config.emd.solver;
      auto solver = similarity::MakeEmdSolver(emd);
      if (!solver.ok()) return solver.status().WithContext("[emd] solver");
      learner->emd_solver_ = std::move(*solver);
      if (learner->model_->EmbeddingDim() == 0) return needs_embedding("[emd] enabled");
    }
    return std::unique_ptr<Learner>(std::move(learner));
  }

  const ParamLayout& Layout() const override { return model_->Layout(); }
  uint64_t TrainSize() const override { return shard_.train.size(); }
  const std::string& ArchitectureId() const override { return architecture_id_; }

  Result<RoundOutcome> RunRound(const RoundJob& job) override {
    RoundOutcome out;
    out.round = job.round;
    std::vector<float> own = model_->Parameters();
    ScorePeers(job, own, out);

    if (stopping_.stopped() || BudgetWouldRunOut()) {
      // file 004 / DESIGN.md: a stopped node neither trains nor merges; it serves its best model.
      // The privacy budget stops a node the same way (docs/privacy.md).
      FillLastMetrics(out);
      out.stopped = true;
      out.published_weights =
          FloatArray::Own(stopping_.has_best() ? stopping_.best_weights() : std::move(own));
      return out;
    }
    if (job.round > 0) MESHLEARN_RETURN_IF_ERROR(Merge(job, out, own));
    std::vector<float> merged = policy_ ? model_->Parameters() : std::vector<float>();

    auto train_start = SteadyClock::now();
    training::TrainConfig train_config;
    train_config.optimizer = {config_.training.optimizer, config_.training.learning_rate,
                              config_.training.momentum, config_.training.weight_decay};
    train_config.batch_size = config_.training.batch_size;
    train_config.epochs = config_.training.local_epochs;
    if (privacy_) train_config.privacy = privacy_->dp;
    auto stats = training::TrainLocal(*model_, shard_.train, train_config,
                                      train_seed_ + static_cast<uint64_t>(job.round));
    if (!stats.ok())
      return stats.status().WithContext("local training of round " + std::to_string(job.round));
    out.train_seconds = SecondsSince(train_start);
    last_.train_loss = stats->mean_loss;
    if (privacy_) {
      MESHLEARN_RETURN_IF_ERROR(privacy_->accountant.AddSteps(
          privacy_->rate, privacy_->dp.noise_multiplier, stats->steps));
    }

    auto eval_start = SteadyClock::now();
    MESHLEARN_RETURN_IF_ERROR(EvaluateInto(shard_.validation, &last_.val_loss, &last_.val_acc));
    MESHLEARN_RETURN_IF_ERROR(EvaluateInto(shard_.test, &last_.test_loss, &last_.test_acc));
    out.eval_seconds = SecondsSince(eval_start);

    std::vector<float> trained = model_->Parameters();
    if (job.round == 0) embedding_weights_ = trained;  // phi_i: the model after round 0
    if (policy_) MESHLEARN_RETURN_IF_ERROR(ObserveAndCluster(job, merged, trained, out));
    stopping_.Observe(job.round, last_.val_loss, trained);
    FillLastMetrics(out);
    out.stopped = stopping_.stopped();
    if (out.stopped) {
      MESHLEARN_RETURN_IF_ERROR(model_->LoadParameters(stopping_.best_weights()));
      out.published_weights = FloatArray::Own(stopping_.best_weights());
    } else {
      out.published_weights = FloatArray::Own(std::move(trained));
    }
    return out;
  }

  Result<ProjectedEmbeddings> EmbedForPeer(std::span<const float> weights, uint64_t seed,
                                           uint32_t max_samples) override {
    if (!scratch_) {
      auto clone = model_->Clone();
      if (!clone.ok()) return clone.status();
      scratch_ = std::move(*clone);
    }
    MESHLEARN_RETURN_IF_ERROR(scratch_->LoadParameters(weights).WithContext("requester's model"));
    auto z = EmbedSample(*scratch_, shard_.validation, max_samples, seed);
    if (!z.ok()) return z.status();
    return ProjectRows(*z, seed);
  }

  Result<EmdMeasure> MeasureEmd(const ProjectedEmbeddings& peer, uint64_t seed,
                                uint32_t max_samples) override {
    auto own = ProjectOwnTrain(seed, max_samples);
    if (!own.ok()) return own.status();
    auto emd = Distance(own->train, peer);
    if (!emd.ok()) return emd.status().WithContext("EMD(train_i, val_j)");
    return EmdMeasure{*emd, own->reference};
  }

  Result<OwnProjection> ProjectOwnTrain(uint64_t seed, uint32_t max_samples) override {
    if (!emd_solver_) return Status::InvalidArgument("[emd] is not enabled");
    if (!own_train_z_) {
      // phi_i's embeddings of the node's own samples are the same for every peer (only R
      // differs), so they are computed once. The samples are chosen with the node's own seed.
      // The training sample is a multiple of the validation sample (Learner::MeasureEmd).
      auto phi = model_->Clone();
      if (!phi.ok()) return phi.status();
      MESHLEARN_RETURN_IF_ERROR((*phi)->LoadParameters(EmbeddingWeights()));
      const size_t validation = std::min<size_t>(max_samples, shard_.validation.size());
      const size_t train = std::min<size_t>(max_samples, shard_.train.size());
      const size_t train_multiple =
          validation > 0 && train >= validation ? train / validation * validation : train;
      auto train_z =
          EmbedSample(**phi, shard_.train, static_cast<uint32_t>(train_multiple), train_seed_);
      if (!train_z.ok()) return train_z.status();
      auto val_z =
          EmbedSample(**phi, shard_.validation, static_cast<uint32_t>(validation), train_seed_ + 1);
      if (!val_z.ok()) return val_z.status();
      own_train_z_ = std::move(*train_z);
      own_val_z_ = std::move(*val_z);
    }
    auto train = ProjectRows(*own_train_z_, seed);
    if (!train.ok()) return train.status();
    auto val = ProjectRows(*own_val_z_, seed);
    if (!val.ok()) return val.status();
    auto reference = Distance(*train, *val);
    if (!reference.ok()) return reference.status().WithContext("EMD(train_i, val_i)");
    return OwnProjection{std::move(*train), *reference};
  }

  Result<double> WitnessDistance(const ProjectedEmbeddings& train,
                                 const ProjectedEmbeddings& validation) override {
    if (!emd_solver_) return Status::InvalidArgument("[emd] is not enabled");
    return Distance(train, validation);
  }

  const ProjectedEmbeddings& DataSignature() const override { return signature_; }

  LearnerState Snapshot() const override {
    LearnerState s = last_;
    s.weights = model_->Parameters();
    s.best_loss = stopping_.best_loss();
    s.best_round = stopping_.best_round();
    s.best_weights = stopping_.best_weights();
    s.rounds_without_improvement = stopping_.rounds_without_improvement();
    s.privacy_steps = privacy_ ? privacy_->accountant.steps() : 0;
    return s;
  }

  Status Restore(const LearnerState& state) override {
    MESHLEARN_RETURN_IF_ERROR(model_->LoadParameters(state.weights).WithContext("checkpoint"));
    if (!state.best_weights.empty() && state.best_weights.size() != state.weights.size()) {
      return Status::LayoutMismatch("checkpoint: best weights do not fit the model");
    }
    stopping_.Restore(state.best_loss, state.best_round, state.best_weights,
                      state.rounds_without_improvement);
    if (privacy_) {
      privacy_->accountant = training::RdpAccountant();
      MESHLEARN_RETURN_IF_ERROR(privacy_->accountant.AddSteps(
          privacy_->rate, privacy_->dp.noise_multiplier, state.privacy_steps));
    }
    last_ = state;
    last_.weights.clear();
    last_.best_weights.clear();
    return Status::Ok();
  }

 private:
  explicit TrainingLearner(const NodeConfig& config)
      : config_(config),
        stopping_(config.training.patience),
        train_seed_(NodeTrainingSeed(config)) {}

  // DP-SGD's settings and budget (docs/privacy.md), when [privacy] is enabled.
  struct Privacy {
    training::DpSgdConfig dp;
    double rate = 0;              // Poisson sampling rate q
    int64_t steps_per_round = 0;  // local_epochs × ceil(N / batch_size)
    training::RdpAccountant accountant;
  };

  // Checks that the model takes DP-SGD and fixes σ: [privacy] noise_multiplier, or the smallest
  // σ that keeps the ε of all (rounds + 1) rounds' steps within target_epsilon.
  Status SetUpPrivacy() {
    const PrivacySection& p = config_.privacy;
    MESHLEARN_RETURN_IF_ERROR(training::CheckDpSgdSupported(*model_));
    Privacy privacy;
    privacy.rate = training::PoissonSamplingRate(config_.training.batch_size, shard_.train.size());
    privacy.steps_per_round =
        config_.training.local_epochs *
        training::DpSgdStepsPerEpoch(config_.training.batch_size, shard_.train.size());
    privacy.dp.max_grad_norm = p.max_grad_norm;
    if (p.noise_multiplier) {
      privacy.dp.noise_multiplier = *p.noise_multiplier;
    } else {
      const int64_t planned_steps = (config_.training.rounds + 1) * privacy.steps_per_round;
      auto sigma =
          training::NoiseMultiplierFor(*p.target_epsilon, p.delta, privacy.rate, planned_steps);
      if (!sigma.ok()) return sigma.status().WithContext("[privacy] target_epsilon");
      privacy.dp.noise_multiplier = *sigma;
    }
    privacy_ = std::move(privacy);
    return Status::Ok();
  }

  // True when [privacy] max_epsilon is set and this round's training would take ε past it.
  bool BudgetWouldRunOut() const {
    if (!privacy_ || !config_.privacy.max_epsilon) return false;
    training::RdpAccountant after = privacy_->accountant;
    (void)after.AddSteps(privacy_->rate, privacy_->dp.noise_multiplier, privacy_->steps_per_round);
    return after.Epsilon(config_.privacy.delta) > *config_.privacy.max_epsilon;
  }

  // The weights of the embedding model φ_i: the model after round 0's local training (the
  // current weights before that).
  std::vector<float> EmbeddingWeights() const {
    return embedding_weights_.empty() ? model_->Parameters() : embedding_weights_;
  }

  static std::string ArchitectureIdOf(const training::ModelSpec& spec, const ParamLayout& layout) {
    std::ostringstream id;
    id << NameOf(training::ArchitectureNames(), spec.architecture) << '/' << spec.num_outputs
       << '/';
    for (size_t i = 0; i < spec.input_shape.size(); ++i)
      id << (i ? "x" : "") << spec.input_shape[i];
    id << '/' << layout.total_floats();
    return id.str();
  }

  // Unprojected embeddings: rows x dim floats, row-major.
  struct Embeddings {
    std::vector<float> values;
    size_t rows = 0;
    size_t dim = 0;
  };

  // Embeds at most `max_samples` rows of `data` (a subset drawn with `row_seed`) with `model`.
  Result<Embeddings> EmbedSample(training::Model& model, const training::Dataset& data,
                                 uint32_t max_samples, uint64_t row_seed) const {
    std::vector<size_t> rows(data.size());
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
    std::mt19937_64 rng(row_seed);
    for (size_t i = rows.size(); i > 1; --i) std::swap(rows[i - 1], rows[rng() % i]);
    rows.resize(std::min<size_t>(rows.size(), max_samples));
    if (rows.empty()) return Status::InvalidArgument("no samples to embed");
    auto z = training::Embed(model, data, rows);
    if (!z.ok()) return z.status();
    return Embeddings{std::move(*z), rows.size(), static_cast<size_t>(model.EmbeddingDim())};
  }

  // FLT's signature (DataSignature()), from the current model, which must still be the shared
  // initial one. The samples and the k-means seeding are drawn with the node's own seed.
  Result<ProjectedEmbeddings> ComputeSignature() const {
    auto z = EmbedSample(*model_, shard_.train,
                         static_cast<uint32_t>(config_.signature.max_samples), train_seed_);
    if (!z.ok()) return z.status();
    auto k = static_cast<size_t>(config_.signature.k);
    if (k > z->rows) {
      return Status::InvalidArgument("k = " + std::to_string(k) + " centroids need at least " +
                                     std::to_string(k) + " training samples; the shard has " +
                                     std::to_string(z->rows));
    }
    auto centroids = similarity::KMeans({z->values, z->rows, z->dim}, k, train_seed_);
    if (!centroids.ok()) return centroids.status().WithContext("k-means");
    return ProjectedEmbeddings{static_cast<uint32_t>(k), static_cast<uint32_t>(z->dim),
                               FloatArray::Own(std::move(centroids->centroids))};
  }

  // FLIC / OCFL (similarity/cluster_policy.h): stores the update directions of the peers that
  // answered and of this node, then lets the policy decide whether to cluster. Every direction is
  // a node's own local update: Δ = its weights after local training − the weights it trained from
  // (its model after that round's merge). The node's own is computed here from `base`, this
  // round's merged model, and served with its snapshot (out.published_update); a peer's is the
  // one it sent with its model (PeerModel::update). A peer that sent none (an older build, or one
  // that stopped training) keeps its stored direction; one whose update is refused is skipped.
  // Rationale: files 002/003 measure each client's update δ = w^{t-1} − w_k^t from the global
  // model it started from (the sign is immaterial to cosines); in a mesh, a node's merged model is
  // that starting point. Measured from the shared initial model w0 instead (DESIGN.md's wording),
  // gossip averaging makes every node's displacement nearly the same within a few rounds: the
  // temperature only fell (15 nodes, 3 label clusters, 14 rounds) and no cluster was found.
  // Measured as w_j − (this node's merged model), a same-cluster peer differs from it mostly by
  // noise that depends on which peers were merged that round, and FLIC's communities fragmented
  // (flic-label-swap, clustering once at round 10, seeds 1-3: ARI 0.83, 0.88, 0.82; with the
  // peers' own Δ_j: 0.94, 0.97, 0.92). The peer's own Δ_j does not depend on the receiver.
  Status ObserveAndCluster(const RoundJob& job, const std::vector<float>& base,
                           const std::vector<float>& trained, RoundOutcome& out) {
    for (const PeerModel& peer : job.peers) {
      if (peer.update) (void)policy_->ObserveUpdate(peer.peer, peer.update->view());
    }
    std::vector<float> update(base.size());
    for (size_t k = 0; k < update.size(); ++k) update[k] = trained[k] - base[k];
    MESHLEARN_RETURN_IF_ERROR(
        policy_->ObserveUpdate(config_.id, update).WithContext("own update direction"));
    out.published_update = FloatArray::Own(std::move(update));
    auto clustered = policy_->EndRound(job.round);
    if (!clustered.ok()) return clustered.status().WithContext("clustering");
    out.temperature = policy_->Temperature().value_or(out.temperature);
    if (*clustered) {
      out.cluster_mates = policy_->ClusterMates();
      out.cluster_partition = policy_->Partition();
    }
    return Status::Ok();
  }

  // W(a, b) with the configured solver (uniform weights, cosine cost).
  Result<double> Distance(const ProjectedEmbeddings& a, const ProjectedEmbeddings& b) const {
    return emd_solver_->Distance({a.values.view(), a.rows, a.cols},
                                 {b.values.view(), b.rows, b.cols});
  }

  // Projects `z` with R(`projection_seed`).
  Result<ProjectedEmbeddings> ProjectRows(const Embeddings& z, uint64_t projection_seed) const {
    auto r = similarity::DrawProjection(projection_seed, z.dim, config_.emd.proj_ratio);
    if (!r.ok()) return r.status();
    auto projected = similarity::Project({z.values, z.rows, z.dim}, *r);
    if (!projected.ok()) return projected.status();
    ProjectedEmbeddings out;
    out.rows = static_cast<uint32_t>(z.rows);
    out.cols = static_cast<uint32_t>(r->output_dim);
    out.values = FloatArray::Own(std::move(*projected));
    return out;
  }

  // Scores every answered peer with the configured metric against the node's current weights.
  void ScorePeers(const RoundJob& job, const std::vector<float>& own, RoundOutcome& out) const {
    similarity::MetricNeeds needs = metric_->Needs();
    for (const PeerModel& peer : job.peers) {
      similarity::MetricInput input;
      input.own = own;
      input.peer = peer.weights.view();
      if (needs.initial_weights) input.initial = initial_;
      if (needs.own_data_loss) input.own_data_loss = own_data_loss_;
      PeerScoreOutcome score;
      score.peer = peer.peer;
      // Exchanged metrics: the exchange that measured the peer computed s_ij; it is taken as is.
      auto s = needs.exchanged_score ? ExchangedScore(peer) : metric_->Score(input);
      if (s.ok()) {
        score.score = *s;
      } else {
        score.error = s.status();
      }
      out.scores.push_back(std::move(score));
    }
  }

  // s_ij of `peer` as its exchange measured it (metrics emd and centroid).
  Result<double> ExchangedScore(const PeerModel& peer) const {
    if (peer.exchanged_score) return *peer.exchanged_score;
    return Status::InvalidArgument(std::string(metric_->Name()) +
                                   ": the exchange with this peer has not measured it yet");
  }

  // Merges the scored peers (all of them, or those at or above merge_min_score) into the model.
  Status Merge(const RoundJob& job, RoundOutcome& out, std::vector<float>& own) {
    std::vector<training::MergeInput> peers;
    for (size_t k = 0; k < job.peers.size(); ++k) {
      PeerScoreOutcome& score = out.scores[k];
      if (!score.score) continue;
      if (config_.learning.merge_min_score && *score.score < *config_.learning.merge_min_score) {
        ++out.excluded_by_min_score;
        continue;
      }
      score.merged = true;
      peers.push_back(
          {job.peers[k].weights.view(), job.peers[k].train_size, job.peers[k].probability});
    }
    if (peers.empty()) return Status::Ok();
    training::MergeInput self{own, TrainSize(), 0};
    MESHLEARN_RETURN_IF_ERROR(rule_->Merge(self, peers, own).WithContext("merge"));
    return model_->LoadParameters(own);
  }

  Status EvaluateInto(const training::Dataset& data, double* loss, double* accuracy) {
    if (data.size() == 0) {
      *loss = *accuracy = std::numeric_limits<double>::quiet_NaN();
      return Status::Ok();
    }
    auto eval = training::Evaluate(*model_, data);
    if (!eval.ok()) return eval.status();
    *loss = eval->loss;
    *accuracy = eval->accuracy;
    return Status::Ok();
  }

  void FillLastMetrics(RoundOutcome& out) const {
    if (privacy_) out.epsilon = privacy_->accountant.Epsilon(config_.privacy.delta);
    out.train_loss = last_.train_loss;
    out.val_loss = last_.val_loss;
    out.val_acc = last_.val_acc;
    out.test_loss = last_.test_loss;
    out.test_acc = last_.test_acc;
  }

  NodeConfig config_;
  training::ClientShard shard_;
  std::unique_ptr<training::Model> model_;
  std::unique_ptr<similarity::SimilarityMetric> metric_;
  std::unique_ptr<training::AggregationRule> rule_;
  training::EarlyStopping stopping_;
  std::vector<float> initial_;
  similarity::LossOfWeights own_data_loss_;
  std::string architecture_id_;
  uint64_t train_seed_;
  std::vector<float> embedding_weights_;               // phi_i (after round 0)
  std::unique_ptr<training::Model> scratch_;           // embeds with a requester's weights
  std::optional<Embeddings> own_train_z_;              // phi_i(own train sample), for MeasureEmd
  std::optional<Embeddings> own_val_z_;                // phi_i(own validation sample)
  std::unique_ptr<similarity::EmdSolver> emd_solver_;  // set when [emd] is enabled
  std::unique_ptr<similarity::ClusterPolicy> policy_;  // sampler louvain|temperature
  ProjectedEmbeddings signature_;                      // FLT's data signature (0 rows: off)
  std::optional<Privacy> privacy_;                     // set when [privacy] is enabled
  LearnerState last_;
};

}  // namespace

uint64_t NodeTrainingSeed(const NodeConfig& config) { return config.seed ^ StableHash(config.id); }

Result<std::unique_ptr<Learner>> CreateLearner(const NodeConfig& config) {
  auto honest = TrainingLearner::Create(config);
  if (!honest.ok() || config.attack.kind == AttackKind::kNone) return honest;
  return MakePoisonedLearner(std::move(*honest), config.attack.kind, NodeTrainingSeed(config));
}

}  // namespace meshlearn::node
