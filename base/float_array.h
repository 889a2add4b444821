#pragma once
// Shared read-only float32 arrays: how parameters and embeddings move between modules (the
// learner, the node, the codec, the transport) without being copied.

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"

namespace meshlearn {

// Read-only float32 values shared with their owner. Weights travel between the node, the codec
// and the transport as FloatArray so that a 1M-parameter model is never copied on the way.
// Copying a FloatArray shares the values; it never copies them.
class FloatArray {
 public:
  // An empty array.
  FloatArray() = default;
  // An array that takes ownership of `values`.
  static FloatArray Own(std::vector<float> values);
  // An array sharing `values` (e.g. a published snapshot's weights).
  static FloatArray Share(std::shared_ptr<const std::vector<float>> values);
  // An array viewing `size` floats at `data`, valid as long as `owner` lives. No copy.
  static FloatArray View(const float* data, size_t size, std::shared_ptr<const void> owner);

  // The values.
  std::span<const float> view() const { return {data_, size_}; }
  // The number of values.
  size_t size() const { return size_; }
  // What keeps the values alive (shared with every copy of this array).
  const std::shared_ptr<const void>& owner() const { return owner_; }
  // Value-wise equality (bitwise for NaN-free data).
  bool operator==(const FloatArray& other) const;

 private:
  std::shared_ptr<const void> owner_;
  const float* data_ = nullptr;
  size_t size_ = 0;
};

// OK when every value is finite; otherwise kNonFinite naming the first bad index. One pass at
// memory bandwidth (tests the exponent bits, vectorised, with AVX2 where the CPU has it).
Status CheckFinite(std::span<const float> values);

}  // namespace meshlearn
