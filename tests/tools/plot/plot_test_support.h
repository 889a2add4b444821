#pragma once
// Folders, files and block-structured matrices shared by the plot and meshlearn-heatmap tests.

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "tests/fresh_dir.h"
#include "tools/plot/matrix_csv.h"

namespace meshlearn::plot::testing {

// A fresh, empty folder for the running test, under the system temp folder.
inline std::string TempDir() { return meshlearn::testing::FreshTestDir("meshlearn-plot-test"); }

// Writes `bytes` to `path`, creating its folder.
inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

// The whole content of `path` ("" when missing).
inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Node i of `n` belongs to cluster i % k (interleaved, so ordering by cluster changes the order).
inline std::map<std::string, int> InterleavedClusters(int n, int k) {
  std::map<std::string, int> clusters;
  for (int i = 0; i < n; ++i) clusters[std::to_string(i)] = i % k;
  return clusters;
}

// An n x n communication matrix over ids "0".."n-1": 20 within a cluster, 1 across, 0 on the
// diagonal, as a DAC run that found its clusters would produce.
inline LabeledMatrix BlockMatrix(int n, int k) {
  LabeledMatrix m;
  for (int i = 0; i < n; ++i) m.row_ids.push_back(std::to_string(i));
  m.col_ids = m.row_ids;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) m.values.push_back(i == j ? 0 : (i % k == j % k ? 20 : 1));
  }
  return m;
}

}  // namespace meshlearn::plot::testing
