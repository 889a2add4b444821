#pragma once
// A hash of text that is the same on every platform and standard library, for seeds derived from
// node ids (std::hash is not portable, and runs must be reproducible everywhere).

#include <cstdint>
#include <string_view>

namespace meshlearn {

// An FNV-1a style hash (64-bit prime) of `text`, with `seed` mixed into the offset basis. Equal
// inputs give equal values on every build. The basis, 1469598103934665603, is not FNV's standard
// one (14695981039346656037, one digit longer); it is kept because every node's sampling and
// training seeds derive from it, and changing it would change every run's results.
constexpr uint64_t StableHash(std::string_view text, uint64_t seed = 0) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace meshlearn
