#include "protocol/frame.h"

#include <bit>
#include <cstring>
#include <string>

namespace meshlearn {

static_assert(std::endian::native == std::endian::little,
              "meshlearn sends float32 blobs in host order and supports little-endian hosts only");

Frame::Frame(std::vector<uint8_t> bytes) {
  auto owned = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  data_ = owned->data();
  size_ = owned->size();
  owner_ = std::move(owned);
}

Frame Frame::CopyOf(const void* data, size_t size) {
  const auto* first = static_cast<const uint8_t*>(data);
  return Frame(std::vector<uint8_t>(first, first + size));
}

Frame Frame::View(const void* data, size_t size, std::shared_ptr<const void> owner) {
  Frame frame;
  frame.owner_ = std::move(owner);
  frame.data_ = static_cast<const uint8_t*>(data);
  frame.size_ = size;
  return frame;
}

bool Frame::operator==(const Frame& other) const {
  return size_ == other.size_ && (size_ == 0 || std::memcmp(data_, other.data_, size_) == 0);
}

Result<FloatArray> FloatArrayOf(const Frame& frame) {
  if (frame.size() % sizeof(float) != 0) {
    return Status::LayoutMismatch("blob of " + std::to_string(frame.size()) +
                                  " bytes is not a whole number of float32 values");
  }
  size_t count = frame.size() / sizeof(float);
  if (reinterpret_cast<uintptr_t>(frame.data()) % alignof(float) != 0) {
    std::vector<float> copy(count);
    if (count) std::memcpy(copy.data(), frame.data(), frame.size());
    return FloatArray::Own(std::move(copy));
  }
  return FloatArray::View(reinterpret_cast<const float*>(frame.data()), count,
                          std::make_shared<const Frame>(frame));
}

Frame BlobOf(const FloatArray& array) {
  return Frame::View(array.view().data(), array.size() * sizeof(float), array.owner());
}

}  // namespace meshlearn
