#include "node/learner/embedding_sample.h"

#include <algorithm>
#include <random>
#include <utility>

#include "training/trainer.h"

namespace meshlearn::node {

Result<Embeddings> EmbedSample(training::Model& model, const training::Dataset& data,
                               uint32_t max_samples, uint64_t row_seed) {
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

}  // namespace meshlearn::node
