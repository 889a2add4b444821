#pragma once
// FLT's data signature (Learner::DataSignature): k centroids of the node's own training
// embeddings, computed once from the shared initial model.

#include <cstdint>

#include "base/status.h"
#include "node/logic/learner.h"
#include "training/dataset.h"
#include "training/model.h"

namespace meshlearn::node {

// The signature of `train` under `model` (which must still hold the shared initial weights, so
// that every node embeds with the same function): the k-means centroids (k = `k`) of the
// embeddings of at most `max_samples` training rows. The rows and the k-means seeding are drawn
// with `seed`, the node's own seed. Refuses k larger than the sample.
Result<ProjectedEmbeddings> MakeDataSignature(training::Model& model,
                                              const training::Dataset& train, size_t k,
                                              uint32_t max_samples, uint64_t seed);

}  // namespace meshlearn::node
