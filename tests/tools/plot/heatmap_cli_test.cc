// The meshlearn-heatmap binary on good and bad input, as a user runs it.

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/tools/plot/plot_test_support.h"
#include "tools/plot/matrix_csv.h"

namespace meshlearn::plot {
namespace {

using testing::ReadAll;
using testing::TempDir;
using testing::WriteFile;

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs meshlearn-heatmap with `args` (already shell-quoted where needed).
CliRun Heatmap(const std::string& args) {
  const std::string command = std::string(MESHLEARN_HEATMAP_BIN) + " " + args + " 2>&1";
  CliRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) run.output.append(buffer, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

// Six nodes in two interleaved clusters under `dir`/run: each node sampled its cluster mates 5
// times, the others once. Returns the run folder.
std::string SixNodeRun(const std::string& dir) {
  const std::string run = dir + "/run";
  for (int i = 0; i < 6; ++i) {
    std::string comm = "peer,times_sampled,answered\n";
    for (int j = 0; j < 6; ++j) {
      if (i == j) continue;
      const int count = i % 2 == j % 2 ? 5 : 1;
      comm += std::to_string(j) + "," + std::to_string(count) + "," + std::to_string(count) + "\n";
    }
    WriteFile(run + "/node-" + std::to_string(i) + "/comm.csv", comm);
  }
  WriteFile(run + "/clusters.csv", "node,cluster\n0,0\n1,1\n2,0\n3,1\n4,0\n5,1\n");
  return run;
}

TEST(HeatmapCliTest, MergeWritesOrderedCsvAndPng) {
  const std::string run = SixNodeRun(TempDir());
  const CliRun r = Heatmap("merge " + run + " --clusters " + run + "/clusters.csv");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(run + "/heatmap.png"), std::string::npos) << r.output;
  const Result<LabeledMatrix> m = ReadMatrixCsv(run + "/heatmap.csv");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<std::string> ids = {"0", "2", "4", "1", "3", "5"};
  EXPECT_EQ(m->row_ids, ids);
  EXPECT_EQ(m->col_ids, ids);
  EXPECT_EQ(m->at(0, 1), 5);  // 0 sampled 2 (same cluster)
  EXPECT_EQ(m->at(0, 3), 1);  // 0 sampled 1 (other cluster)
  EXPECT_EQ(m->at(4, 4), 0);
  EXPECT_GT(std::filesystem::file_size(run + "/heatmap.png"), 1000u);
}

// Above --max-side, runs of nodes in cluster order become one row each: with 6 nodes and a side
// of 2, each cluster's three nodes are one group, and a cell is the mean count per pair.
TEST(HeatmapCliTest, MergeGroupsNodesAboveMaxSideByCluster) {
  const std::string run = SixNodeRun(TempDir());
  const CliRun r = Heatmap("merge " + run + " --clusters " + run + "/clusters.csv --max-side 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Result<LabeledMatrix> m = ReadMatrixCsv(run + "/heatmap.csv");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->row_ids, (std::vector<std::string>{"0..4", "1..5"}));
  EXPECT_EQ(m->at(0, 0), 5);  // cluster mates, self pairs left out
  EXPECT_EQ(m->at(0, 1), 1);
  EXPECT_EQ(m->at(1, 1), 5);
  EXPECT_GT(std::filesystem::file_size(run + "/heatmap.png"), 1000u);
}

TEST(HeatmapCliTest, MergeWithoutClustersUsesNaturalOrderAndGivenPaths) {
  const std::string dir = TempDir();
  const std::string run = SixNodeRun(dir);
  const std::string out = dir + "/elsewhere";
  std::filesystem::create_directories(out);
  const CliRun r = Heatmap("merge " + run + " --out " + out + "/m.csv --png " + out + "/m.png");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Result<LabeledMatrix> m = ReadMatrixCsv(out + "/m.csv");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->row_ids, (std::vector<std::string>{"0", "1", "2", "3", "4", "5"}));
  EXPECT_TRUE(std::filesystem::exists(out + "/m.png"));
  EXPECT_FALSE(std::filesystem::exists(run + "/heatmap.csv"));
}

TEST(HeatmapCliTest, RenderDrawsAnyMatrixCsv) {
  const std::string dir = TempDir();
  WriteFile(dir + "/emd.csv", ",a,b,c\na,0,0.8,\nb,0.8,0,0.1\nc,,0.1,0\n");
  WriteFile(dir + "/clusters.csv", "node,cluster\na,1\nb,0\nc,0\n");
  const CliRun r = Heatmap("render " + dir + "/emd.csv " + dir + "/emd.png --clusters " + dir +
                           "/clusters.csv --title 'EMD matrix' "
                           "--label 'EMD'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GT(std::filesystem::file_size(dir + "/emd.png"), 1000u);
}

// Bad input: exit code 2 and one message naming the file and the problem; no picture.
struct BadInput {
  const char* name;
  const char* matrix;    // content of m.csv ("" = do not create it)
  const char* clusters;  // content of clusters.csv ("" = do not pass --clusters)
  const char* expected;  // a piece the message must contain
};

// Prints the case name only, so test listings stay short.
void PrintTo(const BadInput& c, std::ostream* os) { *os << c.name; }

class HeatmapCliBadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(HeatmapCliBadInputTest, ExitsTwoWithClearMessage) {
  const std::string dir = TempDir();
  const BadInput& c = GetParam();
  if (*c.matrix != '\0') WriteFile(dir + "/m.csv", c.matrix);
  std::string args = "render " + dir + "/m.csv " + dir + "/m.png";
  if (*c.clusters != '\0') {
    WriteFile(dir + "/clusters.csv", c.clusters);
    args += " --clusters " + dir + "/clusters.csv";
  }
  const CliRun r = Heatmap(args);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(c.expected), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir + "/m.png"));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HeatmapCliBadInputTest,
    ::testing::Values(
        BadInput{"MissingFile", "", "", "m.csv: no such file"},
        BadInput{"Ragged", ",a,b\na,1,2\nb,3\n", "", "m.csv line 3: row has 2 cells"},
        BadInput{"NonNumeric", ",a,b\na,1,2\nb,x,4\n", "", "m.csv line 3, column 2"},
        BadInput{"NotSquare", ",a,b,c\na,1,2,3\nb,3,4,5\n", "", "2 rows but 3 columns"},
        BadInput{"DifferentIds", ",a,b\na,1,2\nc,3,4\n", "", "row ids and the column ids differ"},
        BadInput{"BadClusters", ",a,b\na,1,2\nb,3,4\n", "node,cluster\na,zero\n",
                 "clusters.csv line 2, column 2"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(HeatmapCliTest, MergeOfFolderWithoutNodesExitsTwo) {
  const CliRun r = Heatmap("merge " + TempDir());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no node folder"), std::string::npos) << r.output;
}

TEST(HeatmapCliTest, UsageErrorsExitTwoAndHelpExitsZero) {
  CliRun r = Heatmap("");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = Heatmap("render only-one-arg.csv");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = Heatmap("--help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("merge"), std::string::npos);
  EXPECT_NE(r.output.find("render"), std::string::npos);
}

}  // namespace
}  // namespace meshlearn::plot
