// One reader of a run folder (tools/layout/run_layout.h): `meshlearn-launch report` and the
// dashboard (`serve`) show the same methods, rows and statuses for the same folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/tools/run_folder_support.h"
#include "tools/dashboard/dashboard_model.h"
#include "tools/dashboard/live_dashboard.h"
#include "tools/layout/run_layout.h"
#include "tools/report/report.h"
#include "tools/scenario/manifest.h"
#include "tools/scenario/run_reader.h"
#include "tools/scenario/summary_csv.h"

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::FolderOf;
using testing::WriteRounds;

// A run folder of three nodes and three methods, as a launch leaves it:
// - "complete": every node ran rounds 0-2;
// - "stopped": Ctrl-C after round 0 (the manifest records it interrupted);
// - "broken": node 2 exited with code 1 after round 1 (engine runs write exit_status).
// The folder is named after the test (ctest runs tests in parallel).
std::string ThreeMethodFolder() {
  std::string dir = ::testing::TempDir() + "/run_reader_" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(PathIn(dir, kClustersFile)) << "node,cluster\n0,0\n1,0\n2,1\n";
  Manifest manifest;
  manifest.scenario_name = "three";
  manifest.status = kInterrupted;
  for (const auto& [name, status, last] : {std::tuple{"complete", kComplete, 2},
                                           {"stopped", kInterrupted, 0},
                                           {"broken", kFailed, 1}}) {
    std::string method_dir = MethodDir(dir, name);
    for (const std::string id : {"0", "1", "2"}) WriteRounds(method_dir, id, last);
    MethodRecord record;
    record.name = name;
    record.status = status;
    record.ended = "2026-11-26T07:00:00Z";
    record.rounds = 2;
    record.wall_seconds = 12;
    manifest.methods.push_back(record);
  }
  std::ofstream(PathIn(NodeDir(MethodDir(dir, "broken"), "2"), kExitStatusFile)) << "1\n";
  std::ofstream(PathIn(dir, kManifestFile)) << RenderManifest(manifest);
  return dir;
}

TEST(RunReader, ReportAndDashboardShowTheSameMethodsRowsAndStatuses) {
  std::string dir = ThreeMethodFolder();
  auto folder = ReadRunFolder(dir);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();

  // The report: one summary per method, as `meshlearn-launch report` prints them.
  std::vector<std::string> report_names, report_statuses;
  std::vector<std::vector<int64_t>> report_rows;
  for (const MethodRun& run : folder->runs) {
    MethodSummary s = Summarize(run, folder->partition);
    report_names.push_back(s.name);
    report_statuses.push_back(s.status);
    std::vector<int64_t> reached;
    for (const NodeRun& n : run.nodes)
      reached.push_back(n.rounds.empty() ? -1 : n.rounds.back().round);
    report_rows.push_back(reached);
  }
  // The manifest's order (no summary.csv yet); statuses as the manifest has them.
  EXPECT_EQ(report_names, (std::vector<std::string>{"complete", "stopped", "broken"}));
  EXPECT_EQ(report_statuses, (std::vector<std::string>{kComplete, kInterrupted, kFailed}));

  // The dashboard of `serve`, from the same reader.
  dashboard::DashboardModel model(dashboard::RunInfoOf(*folder, dir));
  for (const MethodRun& run : folder->runs) ASSERT_TRUE(model.ShowFinished(run).ok());
  std::vector<std::string> board_names, board_statuses;
  std::vector<std::vector<int64_t>> board_rows;
  for (const std::string& name : report_names) {
    json state = json::parse(model.StateJson(name));
    std::vector<int64_t> reached(3, -2);
    for (const json& row : state["table"]) {
      std::string id = row["id"];
      reached[std::stoi(id)] = row["round"];
    }
    board_rows.push_back(reached);
  }
  json state = json::parse(model.StateJson(""));
  for (const json& m : state["methods"]) {
    board_names.push_back(m["name"]);
    board_statuses.push_back(m["state"]);
  }
  EXPECT_EQ(board_names, report_names);
  EXPECT_EQ(board_statuses, report_statuses);
  EXPECT_EQ(board_rows, report_rows);
  EXPECT_EQ(report_rows[0], (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(report_rows[2], (std::vector<int64_t>{1, 1, 1}));
}

// Methods of one scenario run into separate folders (one per method, as long runs are) read as
// one table; folders of other nodes or clusters, or one method twice, are refused by name.
TEST(RunReader, SeveralFoldersOfOneScenarioReadAsOneTable) {
  const std::string clusters = "node,cluster\n0,0\n1,0\n2,1\n";
  std::string a = FolderOf("a", {"oracle"}, clusters);
  std::string b = FolderOf("b", {"random", "local"}, clusters);
  auto both = ReadRunFolders({a, b});
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  std::vector<std::string> names;
  for (const MethodRun& run : both->runs) names.push_back(run.method.name);
  EXPECT_EQ(names, (std::vector<std::string>{"oracle", "random", "local"}));
  EXPECT_EQ(both->title, "one");
  EXPECT_EQ(both->partition.clusters, (std::vector<int>{0, 0, 1}));

  std::string other = FolderOf("other", {"random"}, "node,cluster\n0,0\n1,1\n2,1\n");
  auto mixed = ReadRunFolders({a, other});
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(mixed.status().message().find(other), std::string::npos);

  auto twice = ReadRunFolders({a, b, FolderOf("again", {"oracle"}, clusters)});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("method 'oracle' is in both"), std::string::npos)
      << twice.status().ToString();
}

// The same folder after the report wrote summary.csv in another order: both follow it.
TEST(RunReader, SummaryCsvGivesTheMethodOrder) {
  std::string dir = ThreeMethodFolder();
  MethodSummary stopped, complete;
  stopped.name = "stopped";
  complete.name = "complete";
  stopped.metric = complete.metric = "mse";
  ASSERT_TRUE(WriteSummaryCsv(PathIn(dir, kSummaryFile), {stopped, complete}, 1).ok());
  auto folder = ReadRunFolder(dir);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  std::vector<std::string> names;
  for (const MethodRun& run : folder->runs) names.push_back(run.method.name);
  EXPECT_EQ(names, (std::vector<std::string>{"stopped", "complete", "broken"}));
  EXPECT_EQ(dashboard::RunInfoOf(*folder, dir).methods, names);
}

}  // namespace
}  // namespace meshlearn::launch
