// dashboard::DashboardModel: what the page shows, live from status documents and from a finished
// method's files, in cluster order.
#include "tools/dashboard/dashboard_model.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "node/host/outputs.h"

namespace meshlearn::dashboard {
namespace {

using nlohmann::json;

// Three nodes: "0" and "2" in cluster 1, "1" in cluster 0; shown in the order 1, 0, 2.
RunInfo ThreeNodes() {
  RunInfo info;
  info.scenario = "three";
  info.mode = "process";
  info.partition.ids = {"0", "1", "2"};
  info.partition.clusters = {1, 0, 1};
  info.partition.num_clusters = 2;
  info.partition.classification = false;
  info.methods = {"dac"};
  return info;
}

node::PeerStatus Peer(const std::string& id, topology::Liveness liveness, uint64_t sampled,
                      double probability) {
  node::PeerStatus p;
  p.id = id;
  p.liveness = liveness;
  p.times_sampled = sampled;
  p.probability = probability;
  p.score = probability * 10;
  return p;
}

launch::MethodRun RunIn(const std::string& dir) {
  launch::MethodRun run;
  run.method.name = "dac";
  run.dir = dir;
  for (const std::string id : {"0", "1", "2"}) {
    launch::NodeRun n;
    n.id = id;
    n.dir = dir + "/node-" + id;
    n.http_port = id == "0" ? 4242 : 0;
    run.nodes.push_back(n);
  }
  return run;
}

TEST(DashboardModel, ShowsLiveStatusesInClusterOrder) {
  DashboardModel model(ThreeNodes());
  std::string dir = ::testing::TempDir() + "/dashboard_live";
  std::filesystem::remove_all(dir);
  model.MethodStarted(RunIn(dir));
  node::NodeStatus zero;
  zero.id = "0";
  zero.round = 3;
  zero.rounds = 10;
  zero.val_loss = 1.5;
  zero.peers = {Peer("1", topology::Liveness::kAlive, 2, 0.25),
                Peer("2", topology::Liveness::kDead, 5, 0.75)};
  zero.counters.missed_deadlines = 4;
  zero.transport.bytes_in = 100;
  zero.transport.bytes_out = 200;
  node::NodeStatus one;
  one.id = "1";
  one.round = 2;
  one.rounds = 10;
  one.peers = {Peer("0", topology::Liveness::kAlive, 3, 1.0)};
  model.Observe("dac", {zero, one, std::nullopt}, 12.0);

  json state = json::parse(model.StateJson(""));
  EXPECT_EQ(state["method"], "dac");
  EXPECT_EQ(state["nodes"], json({"1", "0", "2"}));
  EXPECT_EQ(state["heatmap"][0], json({nullptr, 3, 0}));  // node 1 sampled 0 three times
  EXPECT_EQ(state["heatmap"][1], json({2, nullptr, 5}));
  EXPECT_EQ(state["heatmap"][2], json({nullptr, nullptr, nullptr}));  // node 2 never answered
  const json& row = state["table"][1];
  EXPECT_EQ(row["id"], "0");
  EXPECT_EQ(row["round"], 3);
  EXPECT_EQ(row["val_loss"], 1.5);
  EXPECT_EQ(row["peers_alive"], 1);
  EXPECT_EQ(row["peers_known"], 2);
  EXPECT_EQ(row["bytes_in"], 100);
  EXPECT_EQ(row["failures"], 4);
  EXPECT_EQ(row["http_port"], 4242);
  EXPECT_EQ(state["table"][2]["answering"], false);
  const json& method = state["methods"][0];
  EXPECT_EQ(method["state"], "running");
  EXPECT_EQ(method["rounds"], 10);
  EXPECT_EQ(method["reached_min"], -1);

  json history = json::parse(*model.NodeJson("dac", "0"));
  EXPECT_EQ(history["peers"], json({"1", "0", "2"}));
  EXPECT_EQ(history["rounds"], json({3}));
  EXPECT_EQ(history["probabilities"][0], json({0.25, nullptr, 0.75}));
  EXPECT_FALSE(model.NodeJson("dac", "9").ok());
  EXPECT_FALSE(model.NodeJson("other", "0").ok());
}

TEST(DashboardModel, ShowsAFinishedMethodFromItsFiles) {
  std::string dir = ::testing::TempDir() + "/dashboard_files";
  std::filesystem::remove_all(dir);
  // Node 0 ran two rounds (one sampled peer missed), node 1 one round; node 2 wrote nothing.
  for (const std::string id : {"0", "1"}) {
    auto outputs = node::NodeOutputs::Open(dir + "/node-" + id, -1);
    ASSERT_TRUE(outputs.ok()) << outputs.status().ToString();
    int rounds = id == "0" ? 2 : 1;
    for (int r = 0; r < rounds; ++r) {
      node::RoundRecord record;
      record.round = r;
      record.outcome.val_loss = 10.0 - r;
      record.outcome.test_loss = id == "0" ? 8.0 : 4.0;
      record.sampled = 2;
      record.answered = r == 1 ? 1 : 2;
      ASSERT_TRUE(outputs->AppendRound(record, 1000 * (r + 1), 2000 * (r + 1)).ok());
    }
    topology::PeerRecord score;
    score.peer = id == "0" ? "1" : "0";
    score.score = 0.5;
    score.probability = 0.9;
    ASSERT_TRUE(
        outputs->WriteCommAndScores({{id == "0" ? "1" : "0", 7, 6}, {"2", 1, 1}}, {score}).ok());
  }
  DashboardModel model(ThreeNodes());
  launch::MethodRun run = RunIn(dir);
  run.wall_seconds = 42;
  ASSERT_TRUE(model.ShowFinished(run).ok());

  json state = json::parse(model.StateJson("dac"));
  EXPECT_EQ(state["heatmap"][0], json({nullptr, 7, 1}));  // node 1: comm.csv
  EXPECT_EQ(state["heatmap"][1], json({7, nullptr, 1}));  // node 0
  const json& zero = state["table"][1];
  EXPECT_EQ(zero["round"], 1);
  EXPECT_EQ(zero["val_loss"], 9.0);
  EXPECT_EQ(zero["bytes_out"], 4000);
  EXPECT_EQ(zero["failures"], 1);
  EXPECT_EQ(zero["peers_alive"], nullptr);
  EXPECT_EQ(state["table"][2]["round"], -1);
  const json& method = state["methods"][0];
  EXPECT_EQ(method["state"], "complete");
  EXPECT_EQ(method["source"], "files");
  EXPECT_EQ(method["elapsed_s"], 42.0);
  // Mean test MSE per round: round 0 over nodes 0 and 1, round 1 node 0 only; per cluster.
  EXPECT_EQ(method["curve"]["mean"], json({6.0, 8.0}));
  EXPECT_EQ(method["curve"]["clusters"][0], json({4.0, nullptr}));
  EXPECT_EQ(method["curve"]["clusters"][1], json({8.0, 8.0}));
  json node0 = json::parse(*model.NodeJson("dac", "0"));
  EXPECT_EQ(node0["rounds"], json({1}));
  EXPECT_EQ(node0["scores"][0][0], 0.5);  // the score of peer 1, first in cluster order
}

// The run view gives each ended method's time to the run's target (tools/report/bytes_to_target.h):
// the lowest final accuracy of the ended methods less 1 point, 79 % here.
TEST(DashboardModel, EachEndedMethodHasItsTimeToTheRunsTarget) {
  RunInfo info = ThreeNodes();
  info.partition.classification = true;
  info.methods = {"fast", "slow"};
  DashboardModel model(info);
  EXPECT_EQ(json::parse(model.StateJson(""))["target_acc"], nullptr) << "none ended yet";
  for (const std::string name : {"fast", "slow"}) {
    launch::MethodRun run = RunIn(::testing::TempDir() + "/dashboard_target_" + name);
    run.method.name = name;
    for (launch::NodeRun& n : run.nodes) {
      for (int r = 0; r < 3; ++r) {
        node::RoundRow row;
        row.round = r;
        row.test_acc = name == "fast" ? 0.7 + 0.1 * r : 0.6 + 0.1 * r;
        row.wall_s = (name == "fast" ? 1.0 : 5.0) * (r + 1);
        n.rounds.push_back(row);
      }
    }
    model.ShowFinished(run);  // its files do not exist: what the rows say is shown
  }
  json state = json::parse(model.StateJson(""));
  EXPECT_NEAR(state["target_acc"].get<double>(), 79, 1e-9);
  EXPECT_EQ(state["methods"][0]["time_to_target_s"], 2.0) << "fast: 80 % at its round 1";
  EXPECT_EQ(state["methods"][1]["time_to_target_s"], 15.0) << "slow: 80 % at its round 2";
}

// scores.csv is read by base/csv.h's splitter: a peer id holding a comma is one quoted field, and
// its score reaches the page.
TEST(DashboardModel, ReadsQuotedPeerIdsInScoresCsv) {
  std::string dir = ::testing::TempDir() + "/dashboard_quoted";
  std::filesystem::remove_all(dir);
  RunInfo info = ThreeNodes();
  info.partition.ids = {"a,b", "c"};
  info.partition.clusters = {0, 0};
  info.partition.num_clusters = 1;
  launch::MethodRun run;
  run.method.name = "dac";
  run.dir = dir;
  for (const std::string id : {"a,b", "c"}) {
    launch::NodeRun n;
    n.id = id;
    n.dir = dir + "/node-" + id;
    run.nodes.push_back(n);
    auto outputs = node::NodeOutputs::Open(n.dir, -1);
    ASSERT_TRUE(outputs.ok()) << outputs.status().ToString();
    node::RoundRecord record;
    ASSERT_TRUE(outputs->AppendRound(record, 1, 1).ok());
    topology::PeerRecord score;
    score.peer = id == "c" ? "a,b" : "c";
    score.score = 0.25;
    score.probability = 0.75;
    ASSERT_TRUE(outputs->WriteCommAndScores({{score.peer, 1, 1}}, {score}).ok());
  }
  DashboardModel model(info);
  ASSERT_TRUE(model.ShowFinished(run).ok());
  json c = json::parse(*model.NodeJson("dac", "c"));
  EXPECT_EQ(c["scores"][0][0], 0.25);  // the score of peer "a,b"
  EXPECT_EQ(c["probabilities"][0][0], 0.75);
}

}  // namespace
}  // namespace meshlearn::dashboard
