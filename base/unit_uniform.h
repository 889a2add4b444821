#pragma once
// One uniform draw in [0, 1) from a 64-bit generator, the same on every standard library.

#include <random>

namespace meshlearn {

// A uniform double in [0, 1): the generator's top 53 bits times 2^-53, one output consumed.
// Rationale: std::uniform_real_distribution's algorithm differs between standard libraries, so
// seeded runs would not give the same digits everywhere.
inline double UnitUniform(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

}  // namespace meshlearn
