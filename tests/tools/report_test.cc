// The launcher's report (tools/launch/report.h) from node folders written by hand.
#include "tools/launch/report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "node/host/node.h"

namespace meshlearn::launch {
namespace {

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

}  // namespace
}  // namespace meshlearn::launch
