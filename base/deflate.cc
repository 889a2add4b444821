#include "base/deflate.h"

#include <zlib.h>

namespace meshlearn {

DeflatedBytes Deflate(std::string_view bytes) {
  DeflatedBytes packed;
  packed.size = bytes.size();
  uLongf length = compressBound(static_cast<uLong>(bytes.size()));
  packed.deflated.resize(length);
  // compress2 cannot fail with a buffer of compressBound bytes and a valid level.
  compress2(reinterpret_cast<Bytef*>(packed.deflated.data()), &length,
            reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uLong>(bytes.size()),
            Z_BEST_SPEED);
  packed.deflated.resize(length);
  packed.deflated.shrink_to_fit();
  return packed;
}

Result<std::string> Inflate(const DeflatedBytes& packed) {
  std::string bytes(packed.size, '\0');
  uLongf length = static_cast<uLongf>(packed.size);
  const int code = uncompress(reinterpret_cast<Bytef*>(bytes.data()), &length,
                              reinterpret_cast<const Bytef*>(packed.deflated.data()),
                              static_cast<uLong>(packed.deflated.size()));
  if (code != Z_OK || length != packed.size) {
    return Status::Internal("cannot inflate " + std::to_string(packed.deflated.size()) +
                            " bytes into " + std::to_string(packed.size) + ": zlib error " +
                            std::to_string(code));
  }
  return bytes;
}

}  // namespace meshlearn
