#pragma once
// The learner: everything a node does with its model and data in one round — score the peers'
// models, merge, train, evaluate, early-stop — behind a torch-free interface. It runs on the
// node's training worker thread; the state machine (node/logic/state_machine.h) never waits for it.

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/float_array.h"
#include "base/param_layout.h"
#include "base/status.h"

namespace meshlearn::node {

// A model received from a sampled peer for this round.
struct PeerModel {
  std::string peer;
  FloatArray weights;       // already checked against the local layout and for finiteness
  uint64_t train_size = 0;  // n_j, for FedAvg
  double probability = 0;   // p_ij from before this round's update, for FedSim
  // Metrics scored by an exchange (emd, centroid): s_ij as that exchange measured it, or empty
  // when it has not measured the peer yet. The learner takes it as the peer's score.
  std::optional<double> exchanged_score;
  // The peer's last local update Δ_j (Model.update), checked like `weights`, when it sent one.
  // Clustering policies take it as the peer's update direction (Learner::RunRound).
  std::optional<FloatArray> update;
  // The round of the peer's snapshot (Model.round), from which the merge's staleness weights
  // ([learning] staleness, training/staleness.h) take the rounds it is behind; -1 when unknown.
  int64_t round = -1;
};

// One round of work for the learner.
struct RoundJob {
  int64_t round = 0;             // 0: local training from the shared initial model
  std::vector<PeerModel> peers;  // the sampled peers that answered in time
  // Return the model as merged, before training, in RoundOutcome::merged_weights (the
  // simulator's sequential exchange schedule serves it to the nodes whose turn comes later).
  bool return_merged = false;
};

// The score the learner gave one peer this round.
struct PeerScoreOutcome {
  std::string peer;
  std::optional<double> score;  // empty when scoring failed (see error)
  Status error;                 // why scoring failed
  bool merged = false;          // the peer's model took part in the merge
};

// What a round produced. Metrics are NaN where they do not apply (accuracy for regression).
struct RoundOutcome {
  int64_t round = 0;
  std::vector<PeerScoreOutcome> scores;
  int excluded_by_min_score = 0;  // sampled peers left out of the merge by merge_min_score
  double train_loss = 0;
  double val_loss = 0;
  double val_acc = 0;
  double test_loss = 0;
  double test_acc = 0;
  double train_seconds = 0;  // local training
  double eval_seconds = 0;   // validation + test evaluation
  bool stopped = false;      // early stopping or the privacy budget has stopped the node
  // [privacy]: the ε (at [privacy] delta) the node's training records have spent so far; NaN
  // without DP.
  double epsilon = std::numeric_limits<double>::quiet_NaN();
  // Clustering policies (sampler louvain|temperature; similarity/cluster_policy.h):
  double temperature = std::numeric_limits<double>::quiet_NaN();  // OCFL's T this round
  // Set when the policy clustered this round: the node's cluster mates, and every clustered
  // node's label.
  std::optional<std::vector<std::string>> cluster_mates;
  std::vector<std::pair<std::string, int>> cluster_partition;
  // What the node serves from now on: once stopped, its best model ([training] stopped_serves =
  // "last": its last trained one).
  FloatArray published_weights;
  // With RoundJob::return_merged, in a round that merged: the model after this round's merge and
  // before its training, as the node would serve it (poisoned by an attacker). Empty otherwise.
  FloatArray merged_weights;
  // With a clustering policy: this round's local update Δ_i = weights after local training −
  // weights after this round's merge, served with the model to peers that ask for it
  // (GetModel.with_update). Empty when the node did not train this round.
  std::optional<FloatArray> published_update;
  // What went wrong in this round without failing it, each costing the round one part (a merge
  // left out, an attack's plug-in that failed): the node logs one error line for each.
  std::vector<Status> round_errors;

  // The outcome of round `round` in which nothing was measured (a failed round, a free rider
  // that never trains): every loss and accuracy NaN, which rounds.csv leaves empty, so no summary
  // takes the round for the node's best-validation one (a zero loss would always win).
  static RoundOutcome Unmeasured(int64_t round) {
    const double nothing = std::numeric_limits<double>::quiet_NaN();
    RoundOutcome out;
    out.round = round;
    out.train_loss = out.val_loss = out.val_acc = out.test_loss = out.test_acc = nothing;
    return out;
  }
};

// Projected embeddings exchanged in the EMD protocol: rows x cols floats, row-major. They are
// never raw samples (DESIGN.md "EMD embedding exchange"). FLT's data signatures (k centroids of
// unprojected embeddings, one per row) use the same shape.
struct ProjectedEmbeddings {
  uint32_t rows = 0;
  uint32_t cols = 0;
  FloatArray values;
};

// Node i's EMD measurement of peer j: EMD_ij = W(train_i, val_j) and ref_i = W(train_i, val_i).
struct EmdMeasure {
  double emd = 0;
  double reference = 0;
};

// Node i's own side of a witnessed EMD measurement: its projected training rows, sent to the
// witness, and ref_i = W(train_i, val_i), which never leaves the node.
struct OwnProjection {
  ProjectedEmbeddings train;
  double reference = 0;
};

// The learner's state for checkpoints: current weights and early-stopping memory.
struct LearnerState {
  std::vector<float> weights;
  double best_loss = 0;
  int64_t best_round = -1;
  std::vector<float> best_weights;
  int rounds_without_improvement = 0;
  // The last round's evaluation (restored so a stopped node still reports its metrics).
  double val_loss = 0, val_acc = 0, test_loss = 0, test_acc = 0, train_loss = 0;
  // [privacy]: the DP-SGD steps taken so far, from which the accountant's ε is rebuilt.
  int64_t privacy_steps = 0;
};

// The compute side of a node. Not thread-safe: one thread at a time.
class Learner {
 public:
  virtual ~Learner() = default;
  // The layout of the flat parameter vector (every peer model must match it).
  virtual const ParamLayout& Layout() const = 0;
  // The node's number of training samples (n_i).
  virtual uint64_t TrainSize() const = 0;
  // Architecture id exchanged in Hello, e.g. "cnn/10/1x28x28": peers must have the same.
  virtual const std::string& ArchitectureId() const = 0;
  // Peer side of the EMD exchange (step 2): embeds at most `max_samples` of this node's
  // validation samples with the requester's `weights`, projects them with R(`seed`) and returns
  // the rows. kInvalidArgument when the model has no embedding.
  virtual Result<ProjectedEmbeddings> EmbedForPeer(std::span<const float> weights, uint64_t seed,
                                                   uint32_t max_samples) = 0;
  // Requester side (step 3): embeds and projects v = min(max_samples, validation set size) of its
  // own validation samples and the largest multiple of v, at most min(max_samples, training set
  // size), of its training samples with phi_i and R(`seed`), and measures the two distances.
  // Rationale: when one set's size divides the other's, the exact EMD is a capacitated
  // assignment, and the peer sends v rows whenever the nodes hold validation sets of one size
  // (similarity/emd.h). The network simplex on 500 × 100 took 150 times as long as an assignment
  // of 100 × 100 (issue 19). Taking the training sample down to v instead blurred the clusters of
  // emd-rotated-fmnist (seed 2: the smallest gap between a row's same-cluster and other-cluster
  // excess fell from 0.0114 with 500 training samples to 0.0066 with 200).
  virtual Result<EmdMeasure> MeasureEmd(const ProjectedEmbeddings& peer_validation, uint64_t seed,
                                        uint32_t max_samples) = 0;
  // Requester side in witness mode: projects the training sample of MeasureEmd with phi_i and
  // R(`seed`) (the rows for the witness) and measures ref_i the same way MeasureEmd does.
  // kInvalidArgument when [emd] is off.
  virtual Result<OwnProjection> ProjectOwnTrain(uint64_t seed, uint32_t max_samples) = 0;
  // Witness side: W(`train`, `validation`) with the configured solver, uniform weights and cosine
  // cost. kInvalidArgument when [emd] is off, empty sets or mismatched widths; kNonFinite on NaN.
  virtual Result<double> WitnessDistance(const ProjectedEmbeddings& train,
                                         const ProjectedEmbeddings& validation) = 0;
  // FLT (DESIGN.md "Other seed methods", FLT): this node's data signature, the k-means centroids
  // ([signature] k, seeded by the node) of the embeddings of up to [signature] max_samples of its
  // training samples under the shared initial model, one centroid per row. Computed once when
  // the learner is created; 0 rows unless LearningSection::UsesSignatures() (node/config/config.h).
  virtual const ProjectedEmbeddings& DataSignature() const = 0;
  // Runs one round (see RoundJob). Errors only for failures of the node itself (a NaN loss);
  // a bad peer model costs that peer's score, never the round. With a clustering policy, a peer's
  // update direction is the update it sent (PeerModel::update); a peer that sent none keeps its
  // stored direction.
  virtual Result<RoundOutcome> RunRound(const RoundJob& job) = 0;
  // The state to checkpoint.
  virtual LearnerState Snapshot() const = 0;
  // Restores a checkpointed state; kLayoutMismatch when the weights do not fit the model.
  virtual Status Restore(const LearnerState& state) = 0;
};

}  // namespace meshlearn::node
