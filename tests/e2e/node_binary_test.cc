// meshlearn-node processes started only from config files. A killed node and a slow node:
// node_binary_reliability_test.cc.
#include <gtest/gtest.h>

#include <set>

#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

TEST(NodeBinary, LanMeshFromConfigFilesEachKnowingOnlyOnePeerLearnsEveryPeer) {
  std::string dir = ::testing::TempDir() + "/e2e_lan";
  std::filesystem::remove_all(dir);
  auto shards = WriteSyntheticShards(dir + "/shards", 3, 1, 3);
  ASSERT_EQ(shards.size(), 3u);
  // Three "machines" on their own loopback addresses. alpha knows beta, beta knows gamma, gamma
  // knows beta: alpha and gamma can only find each other through beta's PeerList.
  std::vector<std::string> ids = {"alpha", "beta", "gamma"};
  std::vector<std::string> endpoints = {FreeEndpoint("127.0.0.2"), FreeEndpoint("127.0.0.3"),
                                        FreeEndpoint("127.0.0.4")};
  std::vector<ChildProcess> nodes;
  for (int i = 0; i < 3; ++i) {
    node::NodeConfig c = SyntheticNodeConfig(ids[i], endpoints[i], shards[i], dir + "/" + ids[i]);
    c.training.rounds = 25;
    c.round.min_round_s = 0.05;
    c.learning.sampler = topology::SamplerKind::kRandom;
    int known = i == 2 ? 1 : i + 1;
    c.peers = {{ids[known], endpoints[known]}};
    std::string config = WriteConfig(dir + "/" + ids[i] + ".toml", c);
    auto child =
        ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", config}, dir + "/" + ids[i] + ".log");
    ASSERT_TRUE(child.has_value());
    nodes.push_back(std::move(*child));
  }
  for (int i = 0; i < 3; ++i) {
    auto status = nodes[i].Wait(seconds(120));
    EXPECT_TRUE(ExitedWith(status, 0)) << ids[i] << " log:\n"
                                       << ReadText(dir + "/" + ids[i] + ".log");
  }
  for (int i = 0; i < 3; ++i) {
    std::set<std::string> others;
    for (int j = 0; j < 3; ++j) {
      if (j != i) others.insert(ids[j]);
    }
    EXPECT_EQ(ScoredPeers(dir + "/" + ids[i]), others)
        << ids[i] << " did not learn and score every peer; log:\n"
        << ReadText(dir + "/" + ids[i] + ".log");
    EXPECT_EQ(LastRound(dir + "/" + ids[i]), 25);
  }
  std::string alpha_log = ReadText(dir + "/alpha.log");
  std::string gamma_log = ReadText(dir + "/gamma.log");
  // Without [security] the node says once, at start, that anyone can listen in.
  const std::string warning_text = "traffic is unencrypted and unauthenticated";
  size_t warning = alpha_log.find(warning_text);
  EXPECT_NE(warning, std::string::npos) << alpha_log;
  EXPECT_EQ(alpha_log.find(warning_text, warning + 1), std::string::npos) << alpha_log;
  EXPECT_TRUE(alpha_log.find("learned peer gamma") != std::string::npos ||
              gamma_log.find("learned peer alpha") != std::string::npos)
      << "alpha and gamma did not meet by gossip:\n"
      << alpha_log << gamma_log;
}

// Issue 31: node processes of this build that send int8 models and one that announces protocol
// version 2 ([round] max_protocol_version) train together, from config files: every node merges
// and scores the models of both others, and no message is refused. (The simulator's test of the
// same mesh checks the bytes: the version-2 node gets exactly the float32 bytes of a v2 mesh.)
TEST(NodeBinary, AVersion2NodeAndInt8NodesTrainTogether) {
  std::string dir = ::testing::TempDir() + "/e2e_compression";
  std::filesystem::remove_all(dir);
  const std::vector<std::string> ids = {"new-a", "new-b", "old"};
  auto configs = WriteFullMesh(dir, ids, 5, [](node::NodeConfig& c) {
    c.training.rounds = 8;
    c.round.min_round_s = 0.05;
    c.learning.peers_per_round = 2;
    if (c.id == "old") {
      c.round.max_protocol_version = 2;
    } else {
      c.compression.codec = CompressionCodec::kInt8;
      c.compression.block_size = 64;
    }
  });
  ASSERT_EQ(configs.size(), 3u);
  std::vector<ChildProcess> nodes;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto child = ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", configs[i]},
                                     dir + "/" + ids[i] + ".log");
    ASSERT_TRUE(child.has_value());
    nodes.push_back(std::move(*child));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_TRUE(ExitedWith(nodes[i].Wait(seconds(120)), 0))
        << ids[i] << " log:\n"
        << ReadText(dir + "/" + ids[i] + ".log");
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    std::set<std::string> others;
    for (size_t j = 0; j < ids.size(); ++j) {
      if (j != i) others.insert(ids[j]);
    }
    const std::string log = ReadText(dir + "/" + ids[i] + ".log");
    EXPECT_EQ(ScoredPeers(dir + "/" + ids[i]), others) << ids[i] << " log:\n" << log;
    EXPECT_EQ(LastRound(dir + "/" + ids[i]), 8) << ids[i];
    EXPECT_EQ(log.find("rejected"), std::string::npos) << ids[i] << " log:\n" << log;
  }
}

TEST(NodeBinary, BadConfigIsRefusedWithKeyValueAndExitCode2) {
  std::string dir = ::testing::TempDir() + "/e2e_badconfig";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/bad.toml") << "id = \"x\"\nlisten = \"tcp://127.0.0.1:1\"\n"
                                      "[[peers]]\nid = \"y\"\naddress = \"tcp://127.0.0.1:2\"\n"
                                      "[data]\nshard = \"s\"\n[learning]\ntau = -3\n";
  auto child =
      ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", dir + "/bad.toml"}, dir + "/bad.log");
  ASSERT_TRUE(child.has_value());
  EXPECT_TRUE(ExitedWith(child->Wait(seconds(30)), 2));
  EXPECT_NE(ReadText(dir + "/bad.log").find("'learning.tau' = -3"), std::string::npos)
      << ReadText(dir + "/bad.log");
}

TEST(NodeBinary, ShippedLanExampleConfigsAreValid) {
  for (const char* name : {"machine-a.toml", "machine-b.toml", "machine-c.toml"}) {
    std::string path = std::string(MESHLEARN_SOURCE_DIR) + "/configs/lan/" + name;
    std::string log = ::testing::TempDir() + "/lan_check.log";
    std::filesystem::remove(log);
    auto child = ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", path, "--check"}, log);
    ASSERT_TRUE(child.has_value());
    EXPECT_TRUE(ExitedWith(child->Wait(seconds(30)), 0)) << name << ": " << ReadText(log);
  }
}

}  // namespace
}  // namespace meshlearn::e2e
