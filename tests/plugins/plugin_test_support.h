#pragma once
// What the tests of plugins/ share: where the build saved the plug-ins they load
// (tests/plugins/CMakeLists.txt), and random weights.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "base/status.h"

namespace meshlearn::plugins::testing {

// A plug-in of tests/plugins/make_fixtures.py, saved by the build.
inline std::string Fixture(const std::string& name) {
  return std::string(MESHLEARN_PLUGIN_FIXTURES) + "/" + name + ".pt";
}

// A worked example of plugins/examples/, saved by the build.
inline std::string Example(const std::string& name) {
  return std::string(MESHLEARN_PLUGIN_EXAMPLES) + "/" + name + ".pt";
}

// `floats` standard normal values from `seed`.
inline std::vector<float> RandomWeights(size_t floats, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> w(floats);
  for (float& v : w) v = normal(rng);
  return w;
}

// A file of `text` under the test's temporary folder, for a file that is not TorchScript.
std::string TextFile(const std::string& name, const std::string& text);

// The error of `loaded`, a plug-in loaded from `path` that should have been refused (a test
// failure, and Ok, when it loaded).
template <class T>
Status Refused(const Result<T>& loaded, const std::string& path) {
  EXPECT_FALSE(loaded.ok()) << path << " loaded";
  return loaded.ok() ? Status::Ok() : loaded.status();
}

// Expects `status` to have `code` and a message holding every one of `parts`.
void ExpectError(const Status& status, ErrorCode code, const std::vector<std::string>& parts);

}  // namespace meshlearn::plugins::testing
