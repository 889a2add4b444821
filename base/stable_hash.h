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

// The SplitMix64 finaliser (Steele, Lea, Flood 2014): a bijection on 64 bits with full avalanche,
// for keys and hashes that must spread over every bit.
constexpr uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace meshlearn
