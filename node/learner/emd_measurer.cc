#include "node/learner/emd_measurer.h"

#include <algorithm>
#include <utility>

#include "similarity/projection.h"

namespace meshlearn::node {

EmdMeasurer::EmdMeasurer(training::Model& model, const training::ClientShard& shard,
                         uint64_t train_seed, double proj_ratio,
                         std::unique_ptr<similarity::EmdSolver> solver)
    : model_(model),
      shard_(shard),
      train_seed_(train_seed),
      proj_ratio_(proj_ratio),
      solver_(std::move(solver)) {}

void EmdMeasurer::RememberEmbeddingModel(std::vector<float> weights) {
  embedding_weights_ = std::move(weights);
}

Result<ProjectedEmbeddings> EmdMeasurer::EmbedForPeer(std::span<const float> weights, uint64_t seed,
                                                      uint32_t max_samples) {
  if (!scratch_) {
    auto clone = model_.Clone();
    if (!clone.ok()) return clone.status();
    scratch_ = std::move(*clone);
  }
  MESHLEARN_RETURN_IF_ERROR(scratch_->LoadParameters(weights).WithContext("requester's model"));
  auto z = EmbedSample(*scratch_, shard_.validation, max_samples, seed);
  if (!z.ok()) return z.status();
  return ProjectRows(*z, seed);
}

Result<EmdMeasure> EmdMeasurer::MeasureEmd(const ProjectedEmbeddings& peer, uint64_t seed,
                                           uint32_t max_samples) {
  auto own = ProjectOwnTrain(seed, max_samples);
  if (!own.ok()) return own.status();
  auto emd = Distance(own->train, peer);
  if (!emd.ok()) return emd.status().WithContext("EMD(train_i, val_j)");
  return EmdMeasure{*emd, own->reference};
}

Result<OwnProjection> EmdMeasurer::ProjectOwnTrain(uint64_t seed, uint32_t max_samples) {
  if (!solver_) return Status::InvalidArgument("[emd] is not enabled");
  if (!own_train_z_) {
    auto phi = model_.Clone();
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

Result<double> EmdMeasurer::WitnessDistance(const ProjectedEmbeddings& train,
                                            const ProjectedEmbeddings& validation) const {
  if (!solver_) return Status::InvalidArgument("[emd] is not enabled");
  return Distance(train, validation);
}

std::vector<float> EmdMeasurer::EmbeddingWeights() const {
  return embedding_weights_.empty() ? model_.Parameters() : embedding_weights_;
}

// W(a, b) with the configured solver (uniform weights, cosine cost).
Result<double> EmdMeasurer::Distance(const ProjectedEmbeddings& a,
                                     const ProjectedEmbeddings& b) const {
  return solver_->Distance({a.values.view(), a.rows, a.cols}, {b.values.view(), b.rows, b.cols});
}

// Projects `z` with R(`projection_seed`).
Result<ProjectedEmbeddings> EmdMeasurer::ProjectRows(const Embeddings& z,
                                                     uint64_t projection_seed) const {
  auto r = similarity::DrawProjection(projection_seed, z.dim, proj_ratio_);
  if (!r.ok()) return r.status();
  auto projected = similarity::Project({z.values, z.rows, z.dim}, *r);
  if (!projected.ok()) return projected.status();
  ProjectedEmbeddings out;
  out.rows = static_cast<uint32_t>(z.rows);
  out.cols = static_cast<uint32_t>(r->output_dim);
  out.values = FloatArray::Own(std::move(*projected));
  return out;
}

}  // namespace meshlearn::node
