#include "node/learner/data_signature.h"

#include <string>
#include <utility>

#include "node/learner/embedding_sample.h"
#include "similarity/kmeans.h"

namespace meshlearn::node {

Result<ProjectedEmbeddings> MakeDataSignature(training::Model& model,
                                              const training::Dataset& train, size_t k,
                                              uint32_t max_samples, uint64_t seed) {
  auto z = EmbedSample(model, train, max_samples, seed);
  if (!z.ok()) return z.status();
  if (k > z->rows) {
    return Status::InvalidArgument("k = " + std::to_string(k) + " centroids need at least " +
                                   std::to_string(k) + " training samples; the shard has " +
                                   std::to_string(z->rows));
  }
  auto centroids = similarity::KMeans({z->values, z->rows, z->dim}, k, seed);
  if (!centroids.ok()) return centroids.status().WithContext("k-means");
  return ProjectedEmbeddings{static_cast<uint32_t>(k), static_cast<uint32_t>(z->dim),
                             FloatArray::Own(std::move(centroids->centroids))};
}

}  // namespace meshlearn::node
