#pragma once
// Helpers for the end-to-end tests of meshlearn-launch.

#include <dirent.h>

#include <map>

#include "base/csv.h"
#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {

// Expects the files of `method` that a seed decides (each node's rounds.csv, comm.csv and
// scores.csv, for nodes 0..nodes-1, and the heatmap) to be written in run folder `a` and
// byte-identical in run folder `b`.
inline void ExpectIdenticalMethodFiles(const std::string& a, const std::string& b,
                                       const std::string& method, int nodes) {
  for (int i = 0; i < nodes; ++i) {
    for (const char* file : {"rounds.csv", "comm.csv", "scores.csv"}) {
      const std::string node = "/" + method + "/node-" + std::to_string(i) + "/" + file;
      const std::string expected = ReadText(a + node);
      EXPECT_FALSE(expected.empty()) << a << node;
      EXPECT_EQ(ReadText(b + node), expected) << b << node;
    }
  }
  EXPECT_EQ(ReadText(b + "/" + method + "/heatmap.csv"),
            ReadText(a + "/" + method + "/heatmap.csv"));
}

// Writes "<dir>/scenario.toml": 6 nodes in 2 synthetic clusters of 3, `rounds` rounds of at least
// `min_round_s` seconds, two methods (random, cos_weights); returns its path. The round deadline
// is generous unless a test needs a dead peer noticed quickly: on a loaded machine a 2 s deadline
// marks live peers dead, and then the samples (and the sync run's sequence) depend on the
// machine's speed.
inline std::string WriteScenario(const std::string& dir, int rounds, double min_round_s,
                                 double round_deadline_s = 30) {
  std::filesystem::create_directories(dir);
  std::string path = dir + "/scenario.toml";
  std::ofstream(path) << "name = \"e2e\"\nseed = 3\n"
                         "[data]\ndataset = \"synthetic\"\nshift = \"synthetic\"\nclients = 6\n"
                         "cluster_sizes = [3, 3]\ntrain_per_client = 60\n"
                         "validation_per_client = 30\ntest_per_client = 30\n"
                         "[node.model]\narchitecture = \"linear\"\n"
                         "[node.training]\noptimizer = \"sgd\"\nlearning_rate = 0.003\nrounds = "
                      << rounds
                      << "\n[node.learning]\npeers_per_round = 2\n"
                         "[node.round]\nlinger_s = 5\nround_deadline_s = "
                      << round_deadline_s << "\nmin_round_s = " << min_round_s
                      << "\n[[methods]]\nname = \"random\"\nlearning = { sampler = \"random\" }\n"
                         "[[methods]]\nname = \"cos_weights\"\n"
                         "learning = { metric = \"cos_weights\", tau = 140 }\n";
  return path;
}

// The cells of `method`'s row of the CSV file at `path` (header row first), by column name.
inline std::map<std::string, std::string> RowOf(const std::string& path,
                                                const std::string& method) {
  auto records = ParseCsv(ReadText(path), path);
  EXPECT_TRUE(records.ok()) << records.status().ToString();
  std::map<std::string, std::string> row;
  for (size_t r = 1; records.ok() && r < records->size(); ++r) {
    const std::vector<std::string>& cells = (*records)[r].fields;
    if (cells.front() != method) continue;
    for (size_t c = 0; c < cells.size() && c < records->front().fields.size(); ++c) {
      row[records->front().fields[c]] = cells[c];
    }
  }
  return row;
}

// True when the file at `path` starts with the PNG signature.
inline bool IsPng(const std::string& path) {
  std::string head = ReadText(path).substr(0, 8);
  return head == std::string("\x89PNG\r\n\x1a\n", 8);
}

// The pid of the meshlearn-node process whose command line mentions `needle`, or -1.
inline pid_t FindNodeProcess(const std::string& needle) {
  DIR* proc = ::opendir("/proc");
  pid_t found = -1;
  while (dirent* entry = proc ? ::readdir(proc) : nullptr) {
    std::string cmdline = ReadText(std::string("/proc/") + entry->d_name + "/cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find("meshlearn-node") != std::string::npos &&
        cmdline.find(needle) != std::string::npos) {
      found = std::atoi(entry->d_name);
    }
  }
  if (proc) ::closedir(proc);
  return found;
}

}  // namespace meshlearn::e2e
