#pragma once
// Run folders as a launch leaves them, written by the tests of the readers of run folders
// (tools/layout/run_layout.h and what reads through it).

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "node/host/outputs.h"
#include "tools/layout/run_layout.h"
#include "tools/scenario/manifest.h"

namespace meshlearn::launch::testing {

// What a test node reports in a round besides its fixed figures (RoundRecord's defaults).
struct RoundFigures {
  double test_acc = 0;
  uint64_t bytes_out = 100;  // sent since its start
  double wall_s = NAN;       // when it completed the round; NaN: round + 1
};

// The figures of node `id` of method `method` in round `round`.
using FiguresOf =
    std::function<RoundFigures(const std::string& method, const std::string& id, int round)>;

// Node `id` of the method folder `method_dir` wrote rounds 0..`last` (none when last < 0): round r
// with wall_s r + 1, validation loss 10 - r, test loss 5 - r, one peer sampled and answered, and
// `figures(r)` (RoundFigures' defaults without it).
inline void WriteRounds(const std::string& method_dir, const std::string& id, int last,
                        const std::function<RoundFigures(int round)>& figures = {}) {
  auto outputs = node::NodeOutputs::Open(NodeDir(method_dir, id), -1);
  ASSERT_TRUE(outputs.ok()) << outputs.status().ToString();
  for (int r = 0; r <= last; ++r) {
    const RoundFigures f = figures ? figures(r) : RoundFigures{};
    node::RoundRecord record;
    record.round = r;
    record.wall_seconds = std::isnan(f.wall_s) ? r + 1.0 : f.wall_s;
    record.outcome.val_loss = 10.0 - r;
    record.outcome.test_loss = 5.0 - r;
    record.outcome.test_acc = f.test_acc;
    record.sampled = 1;
    record.answered = 1;
    ASSERT_TRUE(outputs->AppendRound(record, 100, f.bytes_out).ok());
  }
}

// A complete run folder `tag` of scenario "one" with seed `seed` holding `methods` (nodes 0-2
// ran rounds 0-`last`, with `figures`) over `clusters_csv`. The folder is named after the test
// (ctest runs tests in parallel).
inline std::string FolderOf(const std::string& tag, const std::vector<std::string>& methods,
                            const std::string& clusters_csv, int last = 1,
                            const FiguresOf& figures = {}, uint64_t seed = 1) {
  std::string dir = ::testing::TempDir() + "/run_folder_" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" + tag;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(PathIn(dir, kClustersFile)) << clusters_csv;
  Manifest manifest;
  manifest.scenario_name = "one";
  manifest.status = kComplete;
  manifest.seed = seed;
  for (const std::string& name : methods) {
    for (const std::string id : {"0", "1", "2"}) {
      std::function<RoundFigures(int)> of;
      if (figures) of = [&](int round) { return figures(name, id, round); };
      WriteRounds(MethodDir(dir, name), id, last, of);
    }
    MethodRecord record;
    record.name = name;
    record.status = kComplete;
    manifest.methods.push_back(record);
  }
  std::ofstream(PathIn(dir, kManifestFile)) << RenderManifest(manifest);
  return dir;
}

}  // namespace meshlearn::launch::testing
