#include "base/crc32.h"

#include <zlib.h>

#include <algorithm>

namespace meshlearn {

uint32_t Crc32(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes a uInt length; feed large buffers in pieces.
  for (size_t at = 0; at < bytes.size(); at += 1u << 30) {
    const size_t n = std::min<size_t>(bytes.size() - at, 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + at), static_cast<uInt>(n));
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace meshlearn
