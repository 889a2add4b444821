#pragma once
// Paths, file helpers and small datasets shared by the training tests. Tests run from the
// repository root (see tests/CMakeLists.txt), so repository-relative paths work.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "tests/fresh_dir.h"
#include "training/dataset.h"
#include "training/partition.h"

namespace meshlearn::training::testing {

inline const std::string kFixtureDir = "tests/training/fixtures";

// A fresh, empty folder for this test, under the system temp folder.
inline std::string TempDir() { return meshlearn::testing::FreshTestDir("meshlearn-training-test"); }

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A pool of `n` distinct 1 x side x side images, label = row % classes. Pixel 0 is
// tag + row / n (so every image is unique); the others are tag + a fixed pattern in [0, 1).
inline Dataset MakeImagePool(size_t n, int64_t classes, float tag, int64_t side = 8) {
  Dataset d;
  d.sample_shape = {1, side, side};
  d.num_classes = classes;
  const size_t pixels = static_cast<size_t>(side * side);
  for (size_t i = 0; i < n; ++i) {
    for (size_t p = 0; p < pixels; ++p) {
      const size_t mixed = (i * 2654435761u + p * 40503u) % 1000;
      d.features.push_back(tag + (p == 0 ? static_cast<float>(i) / static_cast<float>(n)
                                         : static_cast<float>(mixed) / 1000.0f));
    }
    d.labels.push_back(static_cast<int64_t>(i) % classes);
  }
  return d;
}

// A partition config with the given shift, client count, split sizes and seed.
inline PartitionConfig SizedConfig(ShiftKind shift, int clients, size_t train, size_t validation,
                                   size_t test, uint64_t seed) {
  PartitionConfig c;
  c.shift = shift;
  c.num_clients = clients;
  c.train_per_client = train;
  c.validation_per_client = validation;
  c.test_per_client = test;
  c.seed = seed;
  return c;
}

}  // namespace meshlearn::training::testing
