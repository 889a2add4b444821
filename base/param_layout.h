#pragma once
// The layout descriptor of a flat parameter vector: which named tensor occupies which floats.
//
// Parameters cross module boundaries (and the wire) as one contiguous float32 vector plus this
// descriptor, so that aggregation and similarity never touch per-tensor objects.

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace meshlearn {

// One tensor inside a flat parameter vector.
struct TensorSpec {
  std::string name;            // parameter name, e.g. "fc1.weight"
  std::vector<int64_t> shape;  // dimensions; an empty shape is a scalar (1 element)
  uint64_t offset = 0;         // index of the tensor's first float in the flat vector

  // Number of floats the tensor holds (product of `shape`; 1 for a scalar). Returns 0 if any
  // dimension is negative. Wraps around modulo 2^64; a layout that passed Validate() never does.
  uint64_t numel() const;
  bool operator==(const TensorSpec& other) const = default;
};

// The ordered list of tensors of a model's flat parameter vector.
struct ParamLayout {
  std::vector<TensorSpec> tensors;

  // Total floats covered: offset + numel of the last tensor (0 when empty). Exact for a layout
  // that passed Validate().
  uint64_t total_floats() const;
  // OK when tensors are back to back from offset 0 in order, with non-negative dimensions,
  // non-empty unique names and at most 2^64 - 1 floats in all (counted without wrap-around);
  // otherwise kLayoutMismatch naming the first offending tensor.
  Status Validate() const;
  // Compares with `expected` (the local model's layout) and explains the first difference:
  // tensor count, name, shape or offset. OK when identical.
  Status Matches(const ParamLayout& expected) const;
  bool operator==(const ParamLayout& other) const = default;
};

// Builds a back-to-back layout from (name, shape) pairs, assigning offsets in order.
ParamLayout MakeContiguousLayout(
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors);

}  // namespace meshlearn
