#pragma once
// A set of points as a view over row-major floats: the shape in which embeddings, projected
// embeddings and k-means centroids cross the similarity module (EMD exchange, FLT signatures).

#include <cstddef>
#include <span>
#include <string_view>

#include "base/status.h"

namespace meshlearn::similarity {

// A set of `rows` points in `cols` dimensions, row-major: point i is values[i*cols, (i+1)*cols).
// A view; the caller keeps the values alive for the duration of the call that reads it.
struct PointSet {
  std::span<const float> values;
  size_t rows = 0;
  size_t cols = 0;
};

// Returns OK when `set` holds at least one point of at least one dimension, its values span is
// exactly rows × cols long, and every value is finite. Otherwise kInvalidArgument (empty, or the
// wrong number of values) or kNonFinite (a NaN or Inf, naming its row); messages start with
// `context` ("emd: point set a").
// Rationale: point sets come from peers; every reader checks them the same way before use.
Status CheckPointSet(const PointSet& set, std::string_view context);

}  // namespace meshlearn::similarity
