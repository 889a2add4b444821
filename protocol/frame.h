#pragma once
// Frames: byte buffers that move between the codec and the transport without copying, and the
// blob frames that carry float arrays (base/float_array.h).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/float_array.h"
#include "base/status.h"

namespace meshlearn {

// One frame of a multipart message: an immutable byte range plus whatever keeps it alive (an
// owned vector, a received transport buffer, a published snapshot). Copying a Frame shares the
// bytes; it never copies them.
class Frame {
 public:
  // An empty frame.
  Frame() = default;
  // A frame that owns `bytes`.
  explicit Frame(std::vector<uint8_t> bytes);
  // A frame holding a copy of `size` bytes at `data`.
  static Frame CopyOf(const void* data, size_t size);
  // A frame viewing `size` bytes at `data`, valid as long as `owner` lives. No copy.
  static Frame View(const void* data, size_t size, std::shared_ptr<const void> owner);

  // The bytes (nullptr when empty).
  const uint8_t* data() const { return data_; }
  // The number of bytes.
  size_t size() const { return size_; }
  // The bytes as a span.
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  // Byte-wise equality.
  bool operator==(const Frame& other) const;

 private:
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A frame viewing `array`'s values as little-endian float32 bytes (a blob frame). No copy.
Frame BlobOf(const FloatArray& array);

// Interprets a blob frame as little-endian float32 values without copying when the frame is
// 4-byte aligned (copies otherwise). kLayoutMismatch if the size is not a multiple of 4.
Result<FloatArray> FloatArrayOf(const Frame& frame);

}  // namespace meshlearn
