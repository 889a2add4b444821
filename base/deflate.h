#pragma once
// Bytes kept compressed in memory: zlib's deflate at its fastest level, and back. For data a
// program holds for a while and seldom reads, such as a simulated node's unwritten checkpoint
// (node/host/node_host.h); not a file or wire format.

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace meshlearn {

// `bytes` compressed, with their size, for Inflate. Any length, empty included.
struct DeflatedBytes {
  std::string deflated;
  size_t size = 0;  // of the bytes before compression
};

// `bytes` compressed by zlib at level 1 (Z_BEST_SPEED).
DeflatedBytes Deflate(std::string_view bytes);

// The bytes that Deflate compressed into `packed`; kInternal naming zlib's error when `packed` is
// not what Deflate made.
Result<std::string> Inflate(const DeflatedBytes& packed);

}  // namespace meshlearn
