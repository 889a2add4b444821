#pragma once
// CRC-32 (zlib's, the one of gzip and PNG) of a byte string: the checksum of shard files and
// checkpoints, which detects corrupted or truncated bytes.

#include <cstdint>
#include <string_view>

namespace meshlearn {

// The CRC-32 of `bytes`; the same on every platform. Any length, empty included (0).
uint32_t Crc32(std::string_view bytes);

}  // namespace meshlearn
