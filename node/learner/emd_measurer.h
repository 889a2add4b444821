#pragma once
// The EMD measurer: the learner's side of the EMD embedding exchange (DESIGN.md "EMD embedding
// exchange"; node/logic/emd_exchange.h drives it through the Learner interface).
//
// Specification.
// - φ_i, the node's embedding model, is its model after round 0's local training
//   (RememberEmbeddingModel); until then it is the current model.
//   Rationale: file 004 embeds with the model every node trained once on its own data.
// - The node's own embeddings under φ_i (a training sample and a validation sample, drawn with
//   the node's own seed) are computed once, on the first ProjectOwnTrain; every peer and every
//   refresh differs only in the projection R(seed).
// - The training sample is a multiple of the validation sample (Learner::MeasureEmd).
// - Embedding a requester's model (EmbedForPeer) works without [emd]; measuring needs its solver.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "node/learner/embedding_sample.h"
#include "node/logic/learner.h"
#include "similarity/emd.h"
#include "training/dataset.h"
#include "training/model.h"
#include "training/partition.h"

namespace meshlearn::node {

class EmdMeasurer {
 public:
  // Measures with `model`'s architecture on `shard` (both outlive the measurer); `solver` is
  // empty when [emd] is disabled. `train_seed` is the node's own seed (NodeTrainingSeed);
  // `proj_ratio` is [emd] proj_ratio.
  EmdMeasurer(training::Model& model, const training::ClientShard& shard, uint64_t train_seed,
              double proj_ratio, std::unique_ptr<similarity::EmdSolver> solver);

  // Remembers `weights` as φ_i (the model after round 0).
  void RememberEmbeddingModel(std::vector<float> weights);

  // Learner::EmbedForPeer: the requester's `weights` embed at most `max_samples` rows of this
  // node's validation data, projected with R(`seed`).
  Result<ProjectedEmbeddings> EmbedForPeer(std::span<const float> weights, uint64_t seed,
                                           uint32_t max_samples);
  // Learner::MeasureEmd: W(own training sample, `peer`) and the own reference distance.
  Result<EmdMeasure> MeasureEmd(const ProjectedEmbeddings& peer, uint64_t seed,
                                uint32_t max_samples);
  // Learner::ProjectOwnTrain: the own training sample projected with R(`seed`), and
  // W(own training, own validation) under the same projection.
  Result<OwnProjection> ProjectOwnTrain(uint64_t seed, uint32_t max_samples);
  // Learner::WitnessDistance: W(`train`, `validation`) with the configured solver.
  Result<double> WitnessDistance(const ProjectedEmbeddings& train,
                                 const ProjectedEmbeddings& validation) const;

 private:
  std::vector<float> EmbeddingWeights() const;
  Result<double> Distance(const ProjectedEmbeddings& a, const ProjectedEmbeddings& b) const;
  Result<ProjectedEmbeddings> ProjectRows(const Embeddings& z, uint64_t projection_seed) const;

  training::Model& model_;
  const training::ClientShard& shard_;
  uint64_t train_seed_;
  double proj_ratio_;
  std::unique_ptr<similarity::EmdSolver> solver_;  // set when [emd] is enabled
  std::vector<float> embedding_weights_;           // φ_i (after round 0)
  std::unique_ptr<training::Model> scratch_;       // embeds with a requester's weights
  std::optional<Embeddings> own_train_z_;          // φ_i(own train sample)
  std::optional<Embeddings> own_val_z_;            // φ_i(own validation sample)
};

}  // namespace meshlearn::node
