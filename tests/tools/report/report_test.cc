// The launcher's report (tools/report/report.h) from node folders written by hand.
#include "tools/report/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "node/host/node.h"
#include "node/host/outputs.h"
#include "tests/fresh_dir.h"

namespace meshlearn::launch {
namespace {

// Nodes "0".."n-1" in `clusters` (one entry per node) of `num_clusters`.
Partition NodesIn(const std::vector<int>& clusters, int num_clusters, bool classification) {
  Partition partition;
  for (size_t i = 0; i < clusters.size(); ++i) partition.ids.push_back(std::to_string(i));
  partition.clusters = clusters;
  partition.num_clusters = num_clusters;
  partition.classification = classification;
  return partition;
}

// The header and first row of the summary.csv in `dir`.
std::pair<std::string, std::string> SummaryHeaderAndRow(const std::string& dir) {
  std::ifstream in(dir + "/summary.csv");
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  return {header, row};
}

// Issue 17, item 12: a node whose log ends saying it never reached a peer is named in the table.
TEST(Report, TheTableSaysHowManyNodesNeverReachedAPeer) {
  std::string dir = ::testing::TempDir() + "/report_alone";
  std::filesystem::remove_all(dir);
  MethodRun run;
  run.method.name = "dac";
  Partition partition;
  partition.ids = {"0", "1"};
  partition.clusters = {0, 0};
  partition.num_clusters = 1;
  for (const std::string& id : partition.ids) {
    NodeRun n;
    n.id = id;
    n.dir = dir + "/node-" + id;
    node::RoundRow row;
    row.val_loss = 1;
    n.rounds = {row};
    std::filesystem::create_directories(n.dir);
    std::ofstream(n.dir + "/node.log")
        << "[info] round 0 done\n"
        << (id == "1" ? std::string("[warning] stopped after round 0 ") + node::kNeverReachedAPeer +
                            ": none answered our Hello\n"
                      : std::string("[info] stopped after round 0\n"));
    run.nodes.push_back(n);
  }
  MethodSummary summary = Summarize(run, partition);
  EXPECT_EQ(summary.nodes_alone, 1);
  std::string table = FormatTable({summary}, 1);
  EXPECT_NE(table.find("(1 of 2 nodes never reached a peer: see their node.log)"),
            std::string::npos)
      << table;
}

// Issue 31: summary.csv's last column is the mean of the bytes each node sent, as the last row of
// its rounds.csv counts them (the encoded frames), attackers included.
TEST(Report, SummaryCsvHasTheMeanBytesSentPerNode) {
  const std::string dir = meshlearn::testing::FreshTestDir("report");
  MethodRun run;
  run.method.name = "int8";
  const Partition partition = NodesIn({0, 0, 0}, 1, false);
  const uint64_t sent[] = {1000, 3000, 0};
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    NodeRun n;
    n.id = partition.ids[i];
    n.dir = dir + "/node-" + n.id;
    n.attacker = i == 1;
    if (i < 2) {  // node 2 never completed a round: it is left out
      node::RoundRow first, last;
      first.val_loss = last.val_loss = 1;
      first.bytes_out = 10;
      last.round = 1;
      last.bytes_out = sent[i];
      n.rounds = {first, last};
    }
    run.nodes.push_back(n);
  }
  MethodSummary summary = Summarize(run, partition);
  EXPECT_EQ(summary.bytes_sent_per_node, 2000);
  ASSERT_TRUE(WriteSummaryCsv(dir + "/summary.csv", {summary}, 1).ok());
  const auto [header, row] = SummaryHeaderAndRow(dir);
  const std::string last = ",bytes_sent_per_node,target_acc,time_to_target_s,worst_node";
  EXPECT_EQ(header.substr(header.size() - last.size()), last) << header;
  // No target without a report; the worst (only) honest node tested at 0.
  EXPECT_EQ(row.substr(row.size() - 9), ",2000,,,0") << row;
}

// Issue 45: summary.csv names the worst honest node's test accuracy (its best-validation round),
// so a mean cannot hide a few nodes locked onto the wrong cluster; an attacker is never it.
TEST(Report, SummaryCsvNamesTheWorstHonestNode) {
  const std::string dir = meshlearn::testing::FreshTestDir("report");
  MethodRun run;
  run.method.name = "cos_weights";
  const Partition partition = NodesIn({0, 1, 1}, 2, true);
  // Node 1's best-validation round (loss 0.5) tests at 0.6; its last round tests lower but does
  // not count. Node 2 is an attacker at 0.1.
  const double best_acc[] = {0.9, 0.6, 0.1};
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    NodeRun n;
    n.id = partition.ids[i];
    n.dir = dir + "/node-" + n.id;
    n.cluster = partition.clusters[i];
    n.attacker = i == 2;
    node::RoundRow best, last;
    best.val_loss = 0.5;
    best.test_acc = best_acc[i];
    last.round = 1;
    last.val_loss = 0.7;
    last.test_acc = 0.2;
    n.rounds = {best, last};
    run.nodes.push_back(n);
  }
  MethodSummary summary = Summarize(run, partition);
  EXPECT_DOUBLE_EQ(summary.worst_node, 60);
  ASSERT_TRUE(WriteSummaryCsv(dir + "/summary.csv", {summary}, 2).ok());
  const auto [header, row] = SummaryHeaderAndRow(dir);
  EXPECT_EQ(row.substr(row.size() - 3), ",60") << header << "\n" << row;
}

// Issue 47: an honest node whose learning halted on a failed round (here, overflowed weights
// under `scaling`) is counted in summary.csv and named in the table; its figure is its best round
// before the failure. An attacker's unmeasured rounds (a free rider's) are not counted.
TEST(Report, HonestNodesHaltedOnAFailedRoundAreCounted) {
  const std::string dir = meshlearn::testing::FreshTestDir("report");
  MethodRun run;
  run.method.name = "cos_weights";
  const Partition partition = NodesIn({0, 0, 0}, 1, true);
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    NodeRun n;
    n.id = partition.ids[i];
    n.dir = dir + "/node-" + n.id;
    n.attacker = i == 2;
    node::RoundRow measured;
    measured.val_loss = 0.5;
    measured.test_acc = 0.8;
    node::RoundRow last = measured;
    last.round = 1;
    if (i != 0) {  // node 1 halted in round 1; node 2, an attacker, never measures a round
      last = node::RoundRow{};
      last.round = 1;
      last.stopped = true;
      last.val_loss = last.test_acc = std::numeric_limits<double>::quiet_NaN();
    }
    n.rounds = {measured, last};
    run.nodes.push_back(n);
  }
  MethodSummary summary = Summarize(run, partition);
  EXPECT_EQ(summary.nodes_halted, 1);
  EXPECT_DOUBLE_EQ(summary.mean, 80) << "the halted node's figure is its round before";
  std::string table = FormatTable({summary}, 1);
  EXPECT_NE(table.find("(1 of 2 honest nodes halted on a failed round, figures from before it: see "
                       "their node.log)"),
            std::string::npos)
      << table;
  ASSERT_TRUE(WriteSummaryCsv(dir + "/summary.csv", {summary}, 1).ok());
  const auto [header, row] = SummaryHeaderAndRow(dir);
  EXPECT_NE(header.find(",nodes,nodes_failed,nodes_halted,"), std::string::npos) << header;
  EXPECT_NE(row.find(",3,0,1,"), std::string::npos) << row;
}

// cluster.csv is described once (node::ClusterLabelRow): what a node writes, the report reads; a
// row the description does not read is an error naming the file, the line and the column.
TEST(Report, PolicyClustersReadTheClusterCsvNodesWrite) {
  const std::string dir = ::testing::TempDir() + "/report_policy_clusters";
  std::filesystem::remove_all(dir);
  MethodRun run;
  const Partition partition = NodesIn({0, 0, 1}, 2, true);
  for (const std::string& id : partition.ids) {
    run.nodes.push_back({.id = id, .dir = dir + "/node-" + id});
    auto outputs = node::NodeOutputs::Open(run.nodes.back().dir, -1);
    ASSERT_TRUE(outputs.ok()) << outputs.status().ToString();
    // Nodes 0 and 1 find the true clusters at round 4; node 2 puts node 1 with itself at round 6.
    const int64_t round = id == "2" ? 6 : 4;
    const int other = id == "2" ? 1 : 0;
    ASSERT_TRUE(outputs->WriteCluster({{"0", 0}, {"1", other}, {"2", 1}}, round).ok());
  }
  EXPECT_EQ(ReadWholeFile(dir + "/node-0/cluster.csv").value(),
            "node,label,round\n0,0,4\n1,0,4\n2,1,4\n");
  auto found = ReadPolicyClusters(run, partition);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->clustered_nodes, 3);
  EXPECT_DOUBLE_EQ((*found)->mean_round, 14.0 / 3);
  EXPECT_LT((*found)->ari, 1.0);  // node 2's partition is not the truth

  ASSERT_TRUE(
      WriteFileAtomically(dir + "/node-1/cluster.csv", "node,label,round\n0,0,4\n1,x,4\n").ok());
  auto bad = ReadPolicyClusters(run, partition);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("node-1/cluster.csv line 3, column 2 (label)"),
            std::string::npos)
      << bad.status().ToString();
}

// Issue 59: the EMD matrix is read only when a node wrote emd.csv, and only up to its limit; a
// 100,000-node run without the exchange once failed allocating the dense N x N matrix.
TEST(Report, EmdMatrixIsReadOnlyWhenANodeWroteEmdCsvAndUpToItsLimit) {
  const std::string dir = ::testing::TempDir() + "/report_emd_matrix";
  std::filesystem::remove_all(dir);
  MethodRun run;
  const Partition partition = NodesIn({0, 0, 1}, 2, true);
  for (const std::string& id : partition.ids) {
    run.nodes.push_back({.id = id, .dir = dir + "/node-" + id});
    std::filesystem::create_directories(run.nodes.back().dir);
  }
  auto none = ReadEmdMatrix(run, partition);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());

  const std::string header =
      "peer,emd,ref,accepted,peer_accepted,mutual,witness,threshold,measured_round,measured_s\n";
  ASSERT_TRUE(WriteFileAtomically(dir + "/node-0/emd.csv",
                                  header + "1,0.25,0.5,1,1,1,,,3,1.5\n2,2.5,0.5,0,0,0,,,4,2.0\n")
                  .ok());
  ASSERT_TRUE(
      WriteFileAtomically(dir + "/node-1/emd.csv", header + "0,0.5,0.5,1,1,1,,,3,1.0\n").ok());
  auto read = ReadEmdMatrix(run, partition);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_TRUE(read->has_value());
  const EmdMatrix& emd = **read;
  EXPECT_DOUBLE_EQ(emd.matrix.values[0 * 3 + 1], 0.25);
  EXPECT_DOUBLE_EQ(emd.matrix.values[0 * 3 + 2], 2.5);
  EXPECT_DOUBLE_EQ(emd.matrix.values[1 * 3 + 0], 0.5);
  EXPECT_TRUE(std::isnan(emd.matrix.values[2 * 3 + 0]));  // node 2 wrote nothing
  EXPECT_EQ(emd.found[0], emd.found[1]);
  EXPECT_NE(emd.found[0], emd.found[2]);
  EXPECT_DOUBLE_EQ(emd.ari, 1.0);
  EXPECT_DOUBLE_EQ(emd.exchange_seconds.value(), 2.0);
  EXPECT_EQ(emd.exchange_rounds.value(), std::make_pair(int64_t{3}, int64_t{4}));

  // One node past the limit: an error naming the file and the limit, not an allocation.
  Partition large = NodesIn(std::vector<int>(kMaxEmdMatrixNodes + 1, 0), 1, true);
  MethodRun large_run = run;
  for (size_t i = run.nodes.size(); i < large.ids.size(); ++i)
    large_run.nodes.push_back({.id = large.ids[i], .dir = dir + "/absent-" + large.ids[i]});
  auto too_large = ReadEmdMatrix(large_run, large);
  ASSERT_FALSE(too_large.ok());
  EXPECT_EQ(too_large.status().code(), ErrorCode::kTooLarge);
  EXPECT_NE(too_large.status().message().find("node-0/emd.csv"), std::string::npos)
      << too_large.status().ToString();
  EXPECT_NE(too_large.status().message().find("4096"), std::string::npos)
      << too_large.status().ToString();
}

}  // namespace
}  // namespace meshlearn::launch
