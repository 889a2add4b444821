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

Status CheckFinite(std::span<const float> values) {
  // A float is NaN or Inf exactly when all exponent bits are set. OR-reducing a flag keeps the
  // loop branch-free so the compiler vectorises it; the index is searched only on failure.
  constexpr uint32_t kExponent = 0x7f800000u;
  uint32_t bad = 0;
  const float* data = values.data();
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, data + i, sizeof(bits));
    bad |= static_cast<uint32_t>((bits & kExponent) == kExponent);
  }
  if (!bad) return Status::Ok();
  for (size_t i = 0; i < values.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, data + i, sizeof(bits));
    if ((bits & kExponent) == kExponent) {
      return Status::NonFinite("value #" + std::to_string(i) + " of " +
                               std::to_string(values.size()) + " is NaN or Inf");
    }
  }
  return Status::Ok();
}

}  // namespace meshlearn
