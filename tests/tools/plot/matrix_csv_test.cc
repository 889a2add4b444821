// Matrix CSV, cluster file, comm.csv merge and cluster ordering (tools/plot/matrix_csv.h).

#include "tools/plot/matrix_csv.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "tests/tools/plot/plot_test_support.h"

namespace meshlearn::plot {
namespace {

using testing::ReadAll;
using testing::TempDir;
using testing::WriteFile;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(NaturalLessTest, DigitRunsCompareAsNumbers) {
  EXPECT_TRUE(NaturalLess("node-2", "node-10"));
  EXPECT_FALSE(NaturalLess("node-10", "node-2"));
  EXPECT_TRUE(NaturalLess("2", "10"));
  EXPECT_TRUE(NaturalLess("a", "b"));
  EXPECT_TRUE(NaturalLess("n1", "n1a"));
  EXPECT_FALSE(NaturalLess("n7", "n7"));
  // "07" and "7" are equal as numbers; plain order breaks the tie so the order stays strict.
  EXPECT_NE(NaturalLess("07", "7"), NaturalLess("7", "07"));
}

TEST(MatrixCsvTest, RoundTripKeepsIdsValuesNaNAndBytes) {
  const std::string dir = TempDir();
  LabeledMatrix m;
  m.row_ids = {"a", "b,comma", "c \"quoted\""};
  m.col_ids = {"x", "y"};
  m.values = {0, 0.1, 1e-300, kNaN, -12345.678, 3};
  ASSERT_TRUE(WriteMatrixCsv(dir + "/m.csv", m).ok());
  const Result<LabeledMatrix> back = ReadMatrixCsv(dir + "/m.csv");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->row_ids, m.row_ids);
  EXPECT_EQ(back->col_ids, m.col_ids);
  ASSERT_EQ(back->values.size(), m.values.size());
  for (size_t i = 0; i < m.values.size(); ++i) {
    if (std::isnan(m.values[i])) {
      EXPECT_TRUE(std::isnan(back->values[i]));
    } else {
      EXPECT_EQ(back->values[i], m.values[i]);  // exact: shortest round-trip text
    }
  }
  ASSERT_TRUE(WriteMatrixCsv(dir + "/again.csv", *back).ok());
  EXPECT_EQ(ReadAll(dir + "/again.csv"), ReadAll(dir + "/m.csv"));
  EXPECT_EQ(ReadAll(dir + "/m.csv").substr(0, 5), ",x,y\n");
}

TEST(MatrixCsvTest, ReadsCrLfBlanksAndExplicitPlus) {
  const std::string dir = TempDir();
  WriteFile(dir + "/m.csv", ",1,2\r\n1, 0 ,+2.5\r\n2,,7\r\n\r\n");
  const Result<LabeledMatrix> m = ReadMatrixCsv(dir + "/m.csv");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->rows(), 2u);
  EXPECT_EQ(m->at(0, 1), 2.5);
  EXPECT_TRUE(std::isnan(m->at(1, 0)));
  EXPECT_EQ(m->at(1, 1), 7);
}

// A malformed file is rejected with an error that names the file, the place and the rule.
struct MalformedCase {
  const char* name;
  const char* text;
  const char* expected;  // a piece the message must contain
};

// Prints the case name only, so test listings stay short.
void PrintTo(const MalformedCase& c, std::ostream* os) { *os << c.name; }

class MalformedMatrixCsvTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedMatrixCsvTest, RejectedWithPlaceInMessage) {
  const std::string path = TempDir() + "/bad.csv";
  WriteFile(path, GetParam().text);
  const Result<LabeledMatrix> m = ReadMatrixCsv(path);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kMalformed);
  EXPECT_NE(m.status().message().find(path), std::string::npos) << m.status().message();
  EXPECT_NE(m.status().message().find(GetParam().expected), std::string::npos)
      << m.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedMatrixCsvTest,
    ::testing::Values(
        MalformedCase{"Empty", "", "empty file"},
        MalformedCase{"HeaderOnly", ",a,b\n", "no matrix rows"},
        MalformedCase{"HeaderWithoutEmptyCell", "x,a,b\na,1,2\nb,3,4\n", "line 1, column 1"},
        MalformedCase{"RaggedShort", ",a,b\na,1,2\nb,3\n", "line 3: row has 2 cells"},
        MalformedCase{"RaggedLong", ",a,b\na,1,2,9\nb,3,4\n", "line 2: row has 4 cells"},
        MalformedCase{"NotANumber", ",a,b\na,1,2\nb,3,abc\n", "line 3, column 3"},
        MalformedCase{"NanSpelledOut", ",a,b\na,1,nan\nb,3,4\n", "line 2, column 3"},
        MalformedCase{"Infinity", ",a,b\na,1,2\nb,inf,4\n", "is not a number"},
        MalformedCase{"TrailingGarbage", ",a,b\na,1,2x\nb,3,4\n", "allowed: a finite decimal"},
        MalformedCase{"RepeatedColumn", ",a,a\na,1,2\nb,3,4\n", "line 1, column 3"},
        MalformedCase{"RepeatedRow", ",a,b\na,1,2\na,3,4\n", "line 3, column 1"},
        MalformedCase{"EmptyRowId", ",a,b\na,1,2\n,3,4\n", "is empty"},
        MalformedCase{"UnclosedQuote", ",a,b\n\"a,1,2\nb,3,4\n", "never closed"},
        MalformedCase{"TextAfterQuote", ",a,b\n\"a\"x,1,2\n", "after a closing quote"}),
    [](const auto& info) { return std::string(info.param.name); });

// Arbitrary bytes built from CSV's special characters either read as a matrix that writes back
// unchanged in meaning, or fail with kMalformed; nothing crashes.
TEST(MatrixCsvTest, RandomTextNeverCrashes) {
  const std::string path = TempDir() + "/random.csv";
  const std::string alphabet = ",,,\"\n\r 0123456789.-eabx";
  std::mt19937 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::string text = trial % 2 == 0 ? ",a,b\n" : "";
    const size_t length = rng() % 60;
    for (size_t i = 0; i < length; ++i) text += alphabet[rng() % alphabet.size()];
    WriteFile(path, text);
    const Result<LabeledMatrix> m = ReadMatrixCsv(path);
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), ErrorCode::kMalformed) << text;
      continue;
    }
    EXPECT_EQ(m->values.size(), m->rows() * m->cols());
    ASSERT_TRUE(WriteMatrixCsv(path, *m).ok());
    const Result<LabeledMatrix> again = ReadMatrixCsv(path);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->row_ids, m->row_ids);
    EXPECT_EQ(again->col_ids, m->col_ids);
  }
}

TEST(MatrixCsvTest, MissingFileIsNotFound) {
  const Result<LabeledMatrix> m = ReadMatrixCsv(TempDir() + "/absent.csv");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(m.status().message().find("absent.csv"), std::string::npos);
}

TEST(MatrixCsvTest, WriteRejectsMismatchedValueCount) {
  LabeledMatrix m;
  m.row_ids = {"a"};
  m.col_ids = {"a", "b"};
  m.values = {1};
  EXPECT_EQ(WriteMatrixCsv(TempDir() + "/m.csv", m).code(), ErrorCode::kInvalidArgument);
}

TEST(MatrixCsvTest, WriteIntoMissingFolderIsIoError) {
  LabeledMatrix m = testing::BlockMatrix(2, 1);
  EXPECT_EQ(WriteMatrixCsv(TempDir() + "/no/such/folder/m.csv", m).code(), ErrorCode::kIoError);
}

// A run folder as nodes leave it: node-2 and node-10 sort naturally, node-3 died before writing
// comm.csv, and node-10 names a peer (7) that has no folder.
std::string FabricatedRun() {
  const std::string run = TempDir();
  WriteFile(run + "/node-2/comm.csv", "peer,times_sampled,answered\n10,5,4\n3,1,0\n");
  WriteFile(run + "/node-10/comm.csv", "peer,times_sampled\n2,7\n7,2\n");
  std::filesystem::create_directories(run + "/node-3");
  WriteFile(run + "/node-2/rounds.csv", "round\n");
  WriteFile(run + "/heatmap.csv", "not a node folder\n");
  std::filesystem::create_directories(run + "/logs");
  return run;
}

TEST(MergeCommCountsTest, BuildsNaturallyOrderedMatrixWithZerosAndUnknownRows) {
  const Result<LabeledMatrix> m = MergeCommCounts(FabricatedRun());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<std::string> ids = {"2", "3", "7", "10"};
  EXPECT_EQ(m->row_ids, ids);
  EXPECT_EQ(m->col_ids, ids);
  // Row 2: sampled 10 five times, 3 once, never 7 nor itself.
  EXPECT_EQ(m->at(0, 3), 5);
  EXPECT_EQ(m->at(0, 1), 1);
  EXPECT_EQ(m->at(0, 2), 0);
  EXPECT_EQ(m->at(0, 0), 0);
  // Row 10.
  EXPECT_EQ(m->at(3, 0), 7);
  EXPECT_EQ(m->at(3, 2), 2);
  EXPECT_EQ(m->at(3, 1), 0);
  // Rows 3 (no comm.csv) and 7 (no folder) are unknown, not zero.
  for (size_t c = 0; c < 4; ++c) {
    EXPECT_TRUE(std::isnan(m->at(1, c)));
    EXPECT_TRUE(std::isnan(m->at(2, c)));
  }
}

TEST(MergeCommCountsTest, GivenOrderComesFirst) {
  const Result<LabeledMatrix> m = MergeCommCounts(FabricatedRun(), {"10", "3", "99"});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const std::vector<std::string> ids = {"10", "3", "99", "2", "7"};
  EXPECT_EQ(m->row_ids, ids);
  EXPECT_EQ(m->at(0, 3), 7);  // 10 sampled 2 seven times
}

// When node ids themselves start with "node-" (folder node-3 holds node "node-3"), the peers in
// comm.csv say so, and the rows join their columns instead of forming separate ids.
TEST(MergeCommCountsTest, FolderNamedAfterWholeIdJoinsItsColumn) {
  const std::string run = TempDir();
  WriteFile(run + "/node-1/comm.csv", "peer,times_sampled\nnode-2,3\nnode-10,1\n");
  WriteFile(run + "/node-2/comm.csv", "peer,times_sampled\nnode-1,4\n");
  WriteFile(run + "/node-10/comm.csv", "peer,times_sampled\n");
  const Result<LabeledMatrix> m = MergeCommCounts(run);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->row_ids, (std::vector<std::string>{"node-1", "node-2", "node-10"}));
  EXPECT_EQ(m->at(0, 1), 3);
  EXPECT_EQ(m->at(0, 2), 1);
  EXPECT_EQ(m->at(1, 0), 4);
  EXPECT_EQ(m->at(2, 0), 0);
}

TEST(MergeCommCountsTest, RejectsBadCommCsvWithPlace) {
  const std::string run = TempDir();
  WriteFile(run + "/node-1/comm.csv", "peer,times_sampled\n2,3\n3,-1\n");
  Result<LabeledMatrix> m = MergeCommCounts(run);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), ErrorCode::kMalformed);
  EXPECT_NE(m.status().message().find("node-1/comm.csv line 3, column 2"), std::string::npos)
      << m.status().message();

  WriteFile(run + "/node-1/comm.csv", "peer,count\n2,3\n");
  m = MergeCommCounts(run);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("header must be `peer,times_sampled`"), std::string::npos)
      << m.status().message();

  WriteFile(run + "/node-1/comm.csv", "peer,times_sampled\n2,3\n2,4\n");
  m = MergeCommCounts(run);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("repeated"), std::string::npos) << m.status().message();
}

// Five nodes and a side of 2: groups of ceil(5 / 2) = 3 consecutive ids, {1, 2, 3} and {4, 5};
// node 3 has no comm.csv, so group {1, 2, 3} has two known rows. Worked by hand:
//   (A, A) = (1->2: 3 + 2->1: 1) / (2 known rows x 3 members - 2 self pairs) = 4 / 4 = 1
//   (A, B) = (1->4: 6 + 2->5: 2) / (2 x 2) = 2
//   (B, A) = (4->1: 4) / (2 x 3) = 2/3
//   (B, B) = (4->5: 8 + 5->4: 2) / (2 x 2 - 2) = 5
TEST(MergeCommCountsTest, GroupsConsecutiveIdsAboveMaxSideIntoMeanPerPair) {
  const std::string run = TempDir();
  WriteFile(run + "/node-1/comm.csv", "peer,times_sampled\n2,3\n4,6\n");
  WriteFile(run + "/node-2/comm.csv", "peer,times_sampled\n1,1\n5,2\n");
  std::filesystem::create_directories(run + "/node-3");
  WriteFile(run + "/node-4/comm.csv", "peer,times_sampled\n1,4\n5,8\n");
  WriteFile(run + "/node-5/comm.csv", "peer,times_sampled\n4,2\n");
  const Result<LabeledMatrix> m = MergeCommCounts(run, {}, 2);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->row_ids, (std::vector<std::string>{"1..3", "4..5"}));
  EXPECT_EQ(m->col_ids, m->row_ids);
  EXPECT_EQ(m->row_members, (std::vector<std::vector<std::string>>{{"1", "2", "3"}, {"4", "5"}}));
  EXPECT_DOUBLE_EQ(m->at(0, 0), 1.0);
  EXPECT_DOUBLE_EQ(m->at(0, 1), 2.0);
  EXPECT_DOUBLE_EQ(m->at(1, 0), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m->at(1, 1), 5.0);

  // A side of at least N keeps one row per node, as with no limit.
  const Result<LabeledMatrix> whole = MergeCommCounts(run, {}, 5);
  const Result<LabeledMatrix> unlimited = MergeCommCounts(run);
  ASSERT_TRUE(whole.ok() && unlimited.ok());
  EXPECT_EQ(whole->row_ids, unlimited->row_ids);
  EXPECT_EQ(whole->row_ids.size(), 5u);
  EXPECT_TRUE(whole->row_members.empty());
  for (size_t k = 0; k < whole->values.size(); ++k) {
    const double a = whole->values[k];
    const double b = unlimited->values[k];
    EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << k;
  }

  // A group none of whose members has a comm.csv is unknown.
  std::filesystem::remove(run + "/node-4/comm.csv");
  std::filesystem::remove(run + "/node-5/comm.csv");
  const Result<LabeledMatrix> blind = MergeCommCounts(run, {}, 2);
  ASSERT_TRUE(blind.ok());
  EXPECT_TRUE(std::isnan(blind->at(1, 0)));
  EXPECT_TRUE(std::isnan(blind->at(1, 1)));
}

TEST(RowClustersTest, AGroupHasTheClusterItsMembersShare) {
  LabeledMatrix m;
  m.row_ids = m.col_ids = {"1..3", "4..5"};
  m.row_members = {{"1", "2", "3"}, {"4", "5"}};
  m.values.assign(4, 0);
  const std::map<std::string, int> clusters = {{"1", 0}, {"2", 0}, {"3", 0}, {"4", 1}, {"5", 2}};
  EXPECT_EQ(RowClusters(m, clusters), (std::map<std::string, int>{{"1..3", 0}}));
  LabeledMatrix nodes;
  nodes.row_ids = nodes.col_ids = {"4", "9"};
  nodes.values.assign(4, 0);
  EXPECT_EQ(RowClusters(nodes, clusters), (std::map<std::string, int>{{"4", 1}}));
  EXPECT_EQ(ClusterOrderedIds({"5", "1", "9", "4"}, clusters),
            (std::vector<std::string>{"1", "4", "5", "9"}));
}

TEST(MergeCommCountsTest, FolderWithoutNodesIsNotFound) {
  const std::string run = TempDir();
  EXPECT_EQ(MergeCommCounts(run).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(MergeCommCounts(run + "/absent").status().code(), ErrorCode::kNotFound);
}

TEST(ClusterCsvTest, RoundTripInNaturalOrder) {
  const std::string path = TempDir() + "/clusters.csv";
  const std::map<std::string, int> clusters = {{"10", 1}, {"2", 0}, {"x", -3}};
  ASSERT_TRUE(WriteClusterCsv(path, clusters).ok());
  EXPECT_EQ(ReadAll(path), "node,cluster\n2,0\n10,1\nx,-3\n");
  const Result<std::map<std::string, int>> back = ReadClusterCsv(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, clusters);
}

TEST(ClusterCsvTest, RejectsBadFilesWithPlace) {
  const std::string path = TempDir() + "/clusters.csv";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"node,group\n1,0\n", "line 1, column 2: the column 'group' where the column 'cluster'"},
      {"node,cluster\n1,0\n2,one\n", "line 3, column 2"},
      {"node,cluster\n1,0\n1,1\n", "line 3, column 1"},
      {"node,cluster\n1,0,5\n", "line 2: 3 cells; allowed: 2"},
      {"", ": empty; allowed: the header node,cluster"},
  };
  for (const auto& [text, expected] : cases) {
    WriteFile(path, text);
    const Result<std::map<std::string, int>> c = ReadClusterCsv(path);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.status().message().find(expected), std::string::npos) << c.status().message();
  }
  EXPECT_EQ(ReadClusterCsv(path + ".absent").status().code(), ErrorCode::kNotFound);
}

TEST(OrderByClustersTest, GroupsByClusterKeepsNaturalOrderAndMovesValues) {
  const LabeledMatrix m = testing::BlockMatrix(7, 3);
  std::map<std::string, int> clusters = testing::InterleavedClusters(7, 3);
  clusters.erase("4");  // a node without a cluster goes last
  const LabeledMatrix o = OrderByClusters(m, clusters);
  const std::vector<std::string> ids = {"0", "3", "6", "1", "2", "5", "4"};
  EXPECT_EQ(o.row_ids, ids);
  EXPECT_EQ(o.col_ids, ids);
  for (size_t r = 0; r < o.rows(); ++r) {
    for (size_t c = 0; c < o.cols(); ++c) {
      EXPECT_EQ(o.at(r, c), m.at(std::stoul(o.row_ids[r]), std::stoul(o.col_ids[c])));
    }
  }
  // The first cluster is now a solid block of in-cluster counts off the diagonal.
  EXPECT_EQ(o.at(0, 1), 20);
  EXPECT_EQ(o.at(1, 2), 20);
  EXPECT_EQ(o.at(0, 3), 1);
}

}  // namespace
}  // namespace meshlearn::plot
