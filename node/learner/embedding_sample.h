#pragma once
// Embeddings of a random sample of a dataset's rows, shared by the EMD measurer
// (node/learner/emd_measurer.h) and FLT's data signature (node/learner/data_signature.h).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "training/dataset.h"
#include "training/model.h"

namespace meshlearn::node {

// Unprojected embeddings: rows x dim floats, row-major.
struct Embeddings {
  std::vector<float> values;
  size_t rows = 0;
  size_t dim = 0;
};

// Embeds at most `max_samples` rows of `data` with `model`. The rows are the first ones of a
// shuffle of all rows drawn with `row_seed`, so the same seed picks the same rows. Refuses an
// empty sample.
Result<Embeddings> EmbedSample(training::Model& model, const training::Dataset& data,
                               uint32_t max_samples, uint64_t row_seed);

}  // namespace meshlearn::node
