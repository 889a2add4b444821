// Bytes to reach an accuracy (tools/report/bytes_to_target.h): the curves, the targets, the
// tables and what bad run folders get.
#include "tools/report/bytes_to_target.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "tests/tools/run_folder_support.h"
#include "tools/layout/run_layout.h"
#include "tools/report/run_report.h"
#include "tools/scenario/run_reader.h"

namespace meshlearn::launch {
namespace {

using testing::FolderOf;
using testing::RoundFigures;

const char kClusters[] = "node,cluster\n0,0\n1,0\n2,1\n";

// The cells of the CSV file at `path` by row (the header is row 0).
std::vector<std::vector<std::string>> CsvCells(const std::string& path) {
  auto text = ReadWholeFile(path);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  auto records = ParseCsv(text.ok() ? *text : "", path);
  EXPECT_TRUE(records.ok()) << records.status().ToString();
  std::vector<std::vector<std::string>> cells;
  for (const CsvRecord& r : records.ok() ? *records : std::vector<CsvRecord>{})
    cells.push_back(r.fields);
  return cells;
}

// The baseline of the file tests: every node's accuracy is 50, 70, 80.5, 81 % in rounds 0-3, so
// the final accuracy is 81 and the target 80, first reached in round 2. Node i has sent
// 1000 (r + 1) (i + 1) bytes by round r: 2000 (r + 1) per node on average, 6000 to target.
RoundFigures Baseline(const std::string&, const std::string& id, int round) {
  const double accuracy[] = {0.5, 0.7, 0.805, 0.81};
  return {accuracy[round], 1000ull * (round + 1) * (std::stoull(id) + 1)};
}

// A compressed run: the mean accuracy is 50, 60, 79, 80.33, 82 % in rounds 0-4 (node 1 is one
// point ahead of the others in round 3); node i has sent 250 (r + 1) (i + 1) bytes, 500 (r + 1)
// per node on average: 2000 to the target (round 3) and 2500 in all.
RoundFigures Compressed(const std::string&, const std::string& id, int round) {
  const double accuracy[] = {0.5, 0.6, 0.79, id == "1" ? 0.81 : 0.80, 0.82};
  return {accuracy[round], 250ull * (round + 1) * (std::stoull(id) + 1)};
}

// A run that never gets there: 79 % at best.
RoundFigures Short(const std::string&, const std::string&, int round) {
  return {0.7 + 0.03 * round, 100ull * (round + 1)};
}

TEST(BytesToTarget, TheCurveAveragesEachNodesRunningTotalOverTheRoundsEveryNodeReported) {
  // rounds.csv counts the bytes a node sent since its start: round 1's figures are the running
  // totals 300, 200 and 400, not their sums over rounds. Node 2 never reported round 2.
  const std::vector<std::vector<NodeRound>> nodes = {
      {{0, 0.5, 100}, {1, 0.6, 300}, {2, 0.7, 600}},
      {{0, 0.7, 200}, {1, 0.8, 200}, {2, 0.9, 1000}},
      {{0, 0.6, 300}, {1, 0.7, 400}},
  };
  const std::vector<CurvePoint> curve = MeanCurve(nodes);
  ASSERT_EQ(curve.size(), 2u) << "round 2 is left out: node 2 did not reach it";
  EXPECT_EQ(curve[0].round, 0);
  EXPECT_NEAR(curve[0].accuracy, 60, 1e-9);
  EXPECT_DOUBLE_EQ(curve[0].bytes_per_node, 200);
  EXPECT_EQ(curve[1].round, 1);
  EXPECT_NEAR(curve[1].accuracy, 70, 1e-9);
  EXPECT_DOUBLE_EQ(curve[1].bytes_per_node, 300);
  EXPECT_TRUE(MeanCurve({}).empty());
}

TEST(BytesToTarget, TheFirstRoundAtOrAboveTheTargetGivesTheBytes) {
  const std::vector<CurvePoint> curve = {{0, 50, 10}, {1, 79.9, 20}, {2, 80, 30}, {3, 85, 40}};
  ASSERT_TRUE(FirstReaching(curve, 80).has_value());
  EXPECT_EQ(FirstReaching(curve, 80)->round, 2) << "reaching the target exactly counts";
  EXPECT_DOUBLE_EQ(FirstReaching(curve, 80)->bytes_per_node, 30);
  EXPECT_EQ(FirstReaching(curve, 10)->round, 0);
  EXPECT_FALSE(FirstReaching(curve, 85.01).has_value());
}

// The figures of a row that reached its target.
struct Reached {
  double final_accuracy, target;
  int64_t round;
  double bytes_to_target, bytes_total, ratio;
};

// Expects `row` to have reached its target with `expected` (accuracies to 1e-9).
void ExpectReached(const BytesToTargetRow& row, const Reached& expected) {
  EXPECT_NEAR(row.final_accuracy, expected.final_accuracy, 1e-9) << row.run;
  EXPECT_NEAR(row.target, expected.target, 1e-9) << row.run;
  ASSERT_TRUE(row.reached.has_value()) << row.run;
  EXPECT_EQ(row.reached->round, expected.round) << row.run;
  EXPECT_DOUBLE_EQ(row.reached->bytes_per_node, expected.bytes_to_target) << row.run;
  EXPECT_DOUBLE_EQ(row.bytes_total, expected.bytes_total) << row.run;
  ASSERT_TRUE(row.ratio.has_value()) << row.run;
  EXPECT_DOUBLE_EQ(*row.ratio, expected.ratio) << row.run;
}

// The rows of two run folders: the baseline's final accuracy minus one point is the target of
// the same-named method of both; the compressed run needs a third of the baseline's bytes.
TEST(BytesToTarget, TargetFromTheBaselinesFinalAccuracyAndRatioOfBytes) {
  const std::string none = FolderOf("none", {"dac"}, kClusters, 3, Baseline);
  const std::string int8 = FolderOf("int8", {"dac"}, kClusters, 4, Compressed);
  auto baseline = ReadRunCurves(none);
  ASSERT_TRUE(baseline.ok()) << baseline.status().ToString();
  auto compressed = ReadRunCurves(int8);
  ASSERT_TRUE(compressed.ok()) << compressed.status().ToString();
  EXPECT_EQ(baseline->seed, 1u);
  auto rows = MeasureBytesToTarget({*baseline}, {*baseline, *compressed}, 1);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);

  const BytesToTargetRow& own = (*rows)[0];
  EXPECT_EQ(own.run, none);
  EXPECT_EQ(own.baseline, none);
  ExpectReached(own, {81, 80, 2, 6000, 8000, 1});

  const BytesToTargetRow& row = (*rows)[1];
  EXPECT_EQ(row.run, int8);
  EXPECT_EQ(row.method, "dac");
  EXPECT_EQ(row.seed, 1u);
  // The target is the baseline's final accuracy, not the run's own.
  ExpectReached(row, {82, 80, 3, 2000, 2500, 3});

  // 2.5 points below (78.5): the compressed run reaches it a round earlier (79 in round 2).
  auto lower = MeasureBytesToTarget({*baseline}, {*compressed}, 2.5);
  ASSERT_TRUE(lower.ok());
  EXPECT_EQ((*lower)[0].reached->round, 2);

  const std::string path = ::testing::TempDir() + "/bytes_to_target_rows.csv";
  ASSERT_TRUE(WriteBytesToTargetCsv(path, *rows).ok());
  const auto cells = CsvCells(path);
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0],
            (std::vector<std::string>{"run", "method", "codec", "seed", "baseline", "final_acc",
                                      "target_acc", "target_round", "bytes_to_target",
                                      "bytes_total", "ratio", "time_to_target_s"}));
  // Round 3 ends at wall_s 4: the time to the same target.
  EXPECT_EQ(cells[2],
            (std::vector<std::string>{int8, "dac", "", "1", none, ExactNumber(82),
                                      ExactNumber(row.target), "3", "2000", "2500", "3", "4"}));
}

// Issue 48: at a time t the mesh's accuracy is the mean of each node's latest row; rounds need not
// line up. Node 2 is a straggler whose first row comes at t = 10: the curve starts there.
TEST(TimeToTarget, TheMeshsAccuracyAtATimeIsTheMeanOfEachNodesLatestRow) {
  const std::vector<std::vector<NodeRound>> nodes = {
      {{0, 0.5, 0, 1}, {1, 0.8, 0, 2}, {2, 0.9, 0, 3}, {3, 0.9, 0, 12}},
      {{0, 0.6, 0, 1}, {1, 0.9, 0, 2}},
      {{0, 0.3, 0, 10}, {1, 0.6, 0, 20}},
  };
  const std::vector<TimedAccuracy> curve = AccuracyOverTime(nodes);
  ASSERT_EQ(curve.size(), 3u) << "t = 10, 12 and 20";
  EXPECT_DOUBLE_EQ(curve[0].seconds, 10);
  EXPECT_NEAR(curve[0].accuracy, 70, 1e-9);
  EXPECT_DOUBLE_EQ(curve[1].seconds, 12);
  EXPECT_NEAR(curve[1].accuracy, 70, 1e-9);
  EXPECT_DOUBLE_EQ(curve[2].seconds, 20);
  EXPECT_NEAR(curve[2].accuracy, 80, 1e-9);
  EXPECT_EQ(TimeToTarget(curve, 70), 10.0) << "reaching the target exactly counts";
  EXPECT_EQ(TimeToTarget(curve, 75), 20.0);
  EXPECT_FALSE(TimeToTarget(curve, 80.5));
  EXPECT_TRUE(AccuracyOverTime({{{0, 0.5, 0, 1}}, {}}).empty()) << "a node without a row";
}

TEST(TimeToTarget, TheRunsTargetIsTheLowestFinalAccuracyLessThePoints) {
  EXPECT_EQ(RunTarget({{{1, 50}, {2, 80}}, {}, {{1, 60}, {5, 75}}}, 1), 74.0);
  EXPECT_FALSE(RunTarget({{}, {}}, 1));
}

// The run's report: summary.csv and the table give each method's time to the run's target. In
// "async" node 2 reports round r at 10 + 2r s, the others at r + 1; the curve waits for its first
// row.
TEST(TimeToTarget, SummaryCsvAndTheTableHaveEachMethodsTimeToTheRunsTarget) {
  const std::string dir = FolderOf("times", {"sync", "async"}, kClusters, 3,
                                   [](const std::string& method, const std::string& id, int round) {
                                     const double accuracy[] = {0.5, 0.7, 0.8, 0.82};
                                     RoundFigures f;
                                     f.test_acc = accuracy[round];
                                     f.wall_s = method == "sync" ? 3.0 * (round + 1)
                                                : id == "2"      ? 10.0 + 2 * round
                                                                 : round + 1.0;
                                     return f;
                                   });
  auto folder = ReadRunFolder(dir);
  ASSERT_TRUE(folder.ok()) << folder.status().ToString();
  ::testing::internal::CaptureStdout();
  WriteRunReport(dir, folder->title, folder->partition, folder->runs);
  const std::string table = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(table.find("to target"), std::string::npos) << table;
  EXPECT_NE(table.find("first reached 81.00%"), std::string::npos) << table;
  const auto cells = CsvCells(PathIn(dir, kSummaryFile));
  ASSERT_EQ(cells.size(), 3u);
  const auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(cells[0].begin(), cells[0].end(), name) -
                               cells[0].begin());
  };
  ASSERT_LT(column("time_to_target_s"), cells[0].size());
  // Target 82 - 1: sync reaches it when all three report round 3 (t = 12); async when node 2
  // reports its round 2 (t = 14: 82, 82 and 80), the others long done.
  EXPECT_EQ(cells[1][column("method")], "sync");
  EXPECT_EQ(cells[1][column("target_acc")], "81");
  EXPECT_EQ(cells[1][column("time_to_target_s")], "12");
  EXPECT_EQ(cells[2][column("time_to_target_s")], "14");
}

TEST(BytesToTarget, ARunThatNeverReachesTheTargetHasEmptyCells) {
  const std::string none = FolderOf("none", {"dac"}, kClusters, 3, Baseline);
  const std::string fp16 = FolderOf("fp16", {"dac"}, kClusters, 3, Short);
  auto baseline = ReadRunCurves(none);
  auto run = ReadRunCurves(fp16);
  ASSERT_TRUE(baseline.ok() && run.ok());
  auto rows = MeasureBytesToTarget({*baseline}, {*run}, 1);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_FALSE((*rows)[0].reached.has_value());
  EXPECT_FALSE((*rows)[0].ratio.has_value());
  EXPECT_DOUBLE_EQ((*rows)[0].bytes_total, 400);

  const std::string path = ::testing::TempDir() + "/bytes_to_target_never.csv";
  ASSERT_TRUE(WriteBytesToTargetCsv(path, *rows).ok());
  const auto cells = CsvCells(path);
  ASSERT_EQ(cells.size(), 2u);
  EXPECT_EQ(cells[1][7], "") << "target_round";
  EXPECT_EQ(cells[1][8], "") << "bytes_to_target";
  EXPECT_EQ(cells[1][9], "400") << "bytes_total";
  EXPECT_EQ(cells[1][10], "") << "ratio";

  const std::vector<BytesToTargetMean> means = MeanOverSeeds(*rows);
  ASSERT_EQ(means.size(), 1u);
  EXPECT_EQ(means[0].reached, 0);
  EXPECT_FALSE(means[0].bytes_to_target.has_value());
  EXPECT_NE(FormatBytesToTarget(means, 1).find("0 of 1"), std::string::npos)
      << FormatBytesToTarget(means, 1);
}

// A curve of one method whose accuracy is `final` from round 1 on, with `bytes` per round.
MethodCurve Flat(const std::string& codec, double final, double bytes) {
  return {"dac", codec, {{0, final - 20, bytes}, {1, final, 2 * bytes}}, {}};
}

// With several baselines each run is compared with the one of its seed; the mean table averages
// a codec over its seeds.
TEST(BytesToTarget, EachSeedHasItsBaselineAndTheMeanTableAveragesOverSeeds) {
  const std::vector<RunCurves> baselines = {{"none-1", 1, {Flat("none", 80, 1000)}},
                                            {"none-2", 2, {Flat("none", 70, 1000)}}};
  const std::vector<RunCurves> int8 = {{"int8-1", 1, {Flat("int8", 79.5, 250)}},
                                       {"int8-2", 2, {Flat("int8", 69.5, 500)}}};
  std::vector<RunCurves> runs = baselines;
  runs.insert(runs.end(), int8.begin(), int8.end());
  auto rows = MeasureBytesToTarget(baselines, runs, 1);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[2].baseline, "none-1");
  EXPECT_DOUBLE_EQ((*rows)[2].target, 79);
  EXPECT_EQ((*rows)[3].baseline, "none-2");
  EXPECT_DOUBLE_EQ((*rows)[3].target, 69);
  EXPECT_DOUBLE_EQ(*(*rows)[2].ratio, 4);
  EXPECT_DOUBLE_EQ(*(*rows)[3].ratio, 2);

  const std::vector<BytesToTargetMean> means = MeanOverSeeds(*rows);
  ASSERT_EQ(means.size(), 2u);
  EXPECT_EQ(means[1].codec, "int8");
  EXPECT_EQ(means[1].runs, 2);
  EXPECT_EQ(means[1].seeds, (std::vector<uint64_t>{1, 2}));
  EXPECT_DOUBLE_EQ(means[1].final_accuracy, 74.5);
  EXPECT_EQ(means[1].reached, 2);
  EXPECT_DOUBLE_EQ(*means[1].bytes_to_target, 750);
  EXPECT_DOUBLE_EQ(means[1].bytes_total, 750);
  EXPECT_DOUBLE_EQ(*means[1].ratio, 3);
  const std::string path = ::testing::TempDir() + "/bytes_to_target_mean.csv";
  ASSERT_TRUE(WriteBytesToTargetMeanCsv(path, means).ok());
  const auto cells = CsvCells(path);
  ASSERT_EQ(cells.size(), 3u);
  EXPECT_EQ(cells[0], (std::vector<std::string>{"method", "codec", "runs", "seeds", "final_acc",
                                                "reached", "bytes_to_target", "bytes_total",
                                                "ratio", "time_to_target_s"}));
  // Curves made by hand have no accuracy over time: no time to target.
  EXPECT_EQ(cells[2], (std::vector<std::string>{"dac", "int8", "2", "1;2", "74.5", "2", "750",
                                                "750", "3", ""}));

  // A seed no baseline has, and two baselines of one seed, are refused by name.
  auto stray = MeasureBytesToTarget(baselines, {{"int8-3", 3, {Flat("int8", 70, 1)}}}, 1);
  ASSERT_FALSE(stray.ok());
  EXPECT_NE(stray.status().message().find("'int8-3' has seed 3"), std::string::npos)
      << stray.status().ToString();
  auto twice = MeasureBytesToTarget({baselines[0], {"again", 1, {Flat("none", 80, 1)}}}, int8, 1);
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("'none-1' and 'again' both have seed 1"),
            std::string::npos)
      << twice.status().ToString();
}

TEST(BytesToTarget, AMethodAbsentFromTheBaselineIsNamed) {
  const std::string none = FolderOf("none", {"dac"}, kClusters, 3, Baseline);
  const std::string other = FolderOf("other", {"dac", "random"}, kClusters, 3, Baseline);
  auto baseline = ReadRunCurves(none);
  auto run = ReadRunCurves(other);
  ASSERT_TRUE(baseline.ok() && run.ok());
  auto rows = MeasureBytesToTarget({*baseline}, {*run}, 1);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(
      rows.status().message().find("method 'random' of run '" + other +
                                   "' is not in its baseline run '" + none + "' (which has 'dac')"),
      std::string::npos)
      << rows.status().ToString();
}

// Replaces line `line` (1-based) of the file at `path` with `text`.
void ReplaceLine(const std::string& path, size_t line, const std::string& text) {
  auto content = ReadWholeFile(path);
  ASSERT_TRUE(content.ok());
  std::string out;
  std::istringstream lines(*content);
  size_t number = 0;
  for (std::string l; std::getline(lines, l);) out += (++number == line ? text : l) + "\n";
  std::ofstream(path, std::ios::trunc) << out;
}

TEST(BytesToTarget, BadRoundsCsvFilesAreNamedWithLineAndColumn) {
  const std::string dir = FolderOf("bad", {"dac"}, kClusters, 3, Baseline);
  const std::string node1 = PathIn(NodeDir(MethodDir(dir, "dac"), "1"), kRoundsFile);
  const std::string node2 = PathIn(NodeDir(MethodDir(dir, "dac"), "2"), kRoundsFile);

  // A non-numeric cell: bytes_out, column 11, of round 1 (line 3).
  auto good = ReadNodeRounds(node2);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  ASSERT_EQ(good->size(), 4u);
  ReplaceLine(node2, 3, "1,2,0,9,0,4,0.7,1,1,100,12x,0,,,,,");
  auto bad = ReadRunCurves(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kMalformed);
  EXPECT_NE(bad.status().message().find(node2 + " line 3, column 11 (bytes_out): '12x'"),
            std::string::npos)
      << bad.status().ToString();
  // An empty test accuracy (a regression run) is named so.
  ReplaceLine(node2, 3, "1,2,0,9,0,4,,1,1,100,3000,0,,,,,");
  bad = ReadRunCurves(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(node2 + " line 3, column 7 (test_acc): ''"),
            std::string::npos)
      << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("classification"), std::string::npos);
  // A row cut short.
  ReplaceLine(node2, 3, "1,2,0");
  auto cut = ReadNodeRounds(node2);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find(node2 + " line 3: 3 cells; allowed: 17"), std::string::npos)
      << cut.status().ToString();

  // A node of clusters.csv without rounds.csv.
  std::filesystem::remove(node1);
  bad = ReadRunCurves(dir);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(bad.status().message().find(node1), std::string::npos) << bad.status().ToString();
}

// The command on good folders writes both tables; on a bad one it says what is wrong and exits 2.
TEST(BytesToTarget, TheCommandWritesBothTablesOrExitsTwoNamingTheProblem) {
  const std::string none = FolderOf("none", {"dac"}, kClusters, 3, Baseline);
  const std::string int8 = FolderOf("int8", {"dac"}, kClusters, 4, Compressed);
  const std::string out = ::testing::TempDir() + "/bytes_to_target_command";
  std::filesystem::remove_all(out);
  std::vector<std::string> args = {"bytes-to-target", int8, none, "--baseline", none, "--out", out};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  EXPECT_EQ(BytesToTargetCommand(static_cast<int>(argv.size()), argv.data()), 0);
  auto rows = CsvCells(PathIn(out, kBytesToTargetFile));
  ASSERT_EQ(rows.size(), 3u) << "the baseline once, given twice, and the run";
  EXPECT_EQ(rows[1][0], none);
  EXPECT_EQ(rows[2][0], int8);
  EXPECT_EQ(CsvCells(PathIn(out, kBytesToTargetMeanFile)).size(), 2u)
      << "one method of unknown codec (no node.toml) over two runs";

  std::filesystem::remove(PathIn(NodeDir(MethodDir(int8, "dac"), "0"), kRoundsFile));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(BytesToTargetCommand(static_cast<int>(argv.size()), argv.data()), 2);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find(PathIn(NodeDir(MethodDir(int8, "dac"), "0"), kRoundsFile)), std::string::npos)
      << said;
}

TEST(BytesToTarget, CodecTextNamesWhatDiffersFromTheDefaults) {
  node::CompressionSection c;
  EXPECT_EQ(CodecText(c), "none");
  c.codec = CompressionCodec::kInt8;
  EXPECT_EQ(CodecText(c), "int8");
  c.block_size = 64;
  EXPECT_EQ(CodecText(c), "int8 (block 64)");
  c.codec = CompressionCodec::kTopK;
  c.topk_fraction = 0.05;
  c.topk_values = CompressionCodec::kFp16;
  EXPECT_EQ(CodecText(c), "topk (0.05, fp16)");
  c.consensus_step = 1;  // runs at another consensus step are told apart (and not averaged)
  EXPECT_EQ(CodecText(c), "topk (0.05, fp16, step 1)");
}

}  // namespace
}  // namespace meshlearn::launch
