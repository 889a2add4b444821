#include "base/float_array.h"

#include <cstdint>
#include <cstring>
#include <string>

namespace meshlearn {

FloatArray FloatArray::Own(std::vector<float> values) {
  return Share(std::make_shared<const std::vector<float>>(std::move(values)));
}

FloatArray FloatArray::Share(std::shared_ptr<const std::vector<float>> values) {
  const float* data = values->data();
  const size_t size = values->size();
  return View(data, size, std::move(values));
}

FloatArray FloatArray::View(const float* data, size_t size, std::shared_ptr<const void> owner) {
  FloatArray array;
  array.data_ = data;
  array.size_ = size;
  array.owner_ = std::move(owner);
  return array;
}

bool FloatArray::operator==(const FloatArray& other) const {
  return size_ == other.size_ &&
         (size_ == 0 || std::memcmp(data_, other.data_, size_ * sizeof(float)) == 0);
}

namespace {

// A float is NaN or Inf exactly when all its exponent bits are set.
constexpr uint32_t kExponent = 0x7f800000u;

// Whether any of `count` values at `data` is NaN or Inf. OR-reducing a flag keeps the loop
// branch-free so the compiler vectorises it. It is cloned for AVX2, picked at load time where
// the CPU has it.
// Rationale: every model a node receives passes here (1M floats per 4 MB reply); the check is
// bound by memory bandwidth, and 32-byte loads reach more of it than 16-byte ones (about 10%
// less time on a freshly received 4 MB blob, measured on the project's machine).
__attribute__((target_clones("avx2", "default"))) bool AnyNonFinite(const float* data,
                                                                    size_t count) {
  uint32_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, data + i, sizeof(bits));
    bad |= static_cast<uint32_t>((bits & kExponent) == kExponent);
  }
  return bad != 0;
}

}  // namespace

Status CheckFinite(std::span<const float> values) {
  if (!AnyNonFinite(values.data(), values.size())) return Status::Ok();
  // Only on failure: find the index for the message.
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, values.data() + i, sizeof(bits));
    if ((bits & kExponent) == kExponent) {
      return Status::NonFinite("value #" + std::to_string(i) + " of " +
                               std::to_string(values.size()) + " is NaN or Inf");
    }
  }
  return Status::Ok();
}

}  // namespace meshlearn
