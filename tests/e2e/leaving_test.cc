// Issue 17, "Leaving and failing loudly": meshlearn-node processes that say Goodbye when they stop,
// and nodes that say so when they cannot reach a peer.
#include <gtest/gtest.h>

#include <signal.h>

#include "node/host/node.h"
#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

// The number of times `needle` occurs in `text`.
size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// The last non-empty line of `text`.
std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end - begin);
}

// Item 11: a node stopped with SIGTERM says Goodbye; its peers stop sampling it at once (no
// missed deadline for it) and welcome it back when it restarts and greets them.
TEST(Goodbye, AStoppedNodeSaysGoodbyeItsPeersStopSamplingItAndWelcomeItBack) {
  std::string dir = ::testing::TempDir() + "/e2e_goodbye";
  std::filesystem::remove_all(dir);
  std::vector<std::string> ids = {"n0", "n1", "leaver"};
  std::vector<std::string> configs = WriteFullMesh(dir, ids, 6, [](node::NodeConfig& c) {
    c.training.rounds = 100000;  // stopped by the test
    c.round.min_round_s = 0.1;
    c.round.round_deadline_s = 5;
    c.learning.peers_per_round = 2;  // every other node, every round
  });
  ASSERT_EQ(configs.size(), 3u);
  std::vector<std::optional<ChildProcess>> nodes;
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", configs[i]},
                                        dir + "/" + ids[i] + ".log"));
    ASSERT_TRUE(nodes.back().has_value());
  }
  const std::string n0_dir = dir + "/n0";
  ASSERT_TRUE(WaitFor([&] { return LastRound(dir + "/leaver") >= 5; }, seconds(300)))
      << "'leaver' never reached round 5";
  nodes[2]->Signal(SIGTERM);
  EXPECT_TRUE(ExitedWith(nodes[2]->Wait(seconds(60)), 0));
  auto left = [&] {
    return ReadText(dir + "/n0.log").find("peer leaver left (stopped)") != std::string::npos;
  };
  ASSERT_TRUE(WaitFor(left, seconds(60))) << "n0 never heard the Goodbye:\n"
                                          << ReadText(dir + "/n0.log");
  int64_t heard_at = LastRound(n0_dir);
  ASSERT_TRUE(WaitFor([&] { return LastRound(n0_dir) >= heard_at + 4; }, seconds(300)))
      << "n0 stalled at round " << LastRound(n0_dir) << " after the Goodbye";
  for (const node::RoundRow& row : Rounds(n0_dir)) {
    // The round under way when the Goodbye came may still have asked it; none after.
    if (row.round <= heard_at + 1) continue;
    for (const std::string& peer : row.peers) {
      EXPECT_NE(peer, "leaver") << "n0 sampled the node that left, in round " << row.round;
    }
    EXPECT_EQ(row.sampled, row.answered) << "n0 waited for a peer in round " << row.round;
  }
  EXPECT_EQ(ReadText(dir + "/n0.log").find("peer leaver failed"), std::string::npos)
      << "n0 counted failures of a node that had said goodbye:\n"
      << ReadText(dir + "/n0.log");

  // Restarted, it greets its peers, which welcome it back and sample it again.
  nodes[2] =
      ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", configs[2]}, dir + "/leaver.log2");
  ASSERT_TRUE(nodes[2].has_value());
  EXPECT_TRUE(WaitFor(
      [&] { return ReadText(dir + "/n0.log").find("peer leaver is back") != std::string::npos; },
      seconds(120)))
      << ReadText(dir + "/n0.log");
  int64_t back_at = LastRound(n0_dir);
  EXPECT_TRUE(WaitFor(
      [&] {
        for (const node::RoundRow& row : Rounds(n0_dir)) {
          if (row.round <= back_at) continue;
          for (const std::string& peer : row.peers) {
            if (peer == "leaver") return true;
          }
        }
        return false;
      },
      seconds(300)))
      << "n0 did not sample 'leaver' after it came back";
  for (int i = 0; i < 3; ++i) nodes[i]->Signal(SIGTERM);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(ExitedWith(nodes[i]->Wait(seconds(120)), 0)) << ids[i];
}

// Item 12: a peer address that does not resolve is logged once at warn with the cause, and a node
// that never reached a peer says so in its last log line.
TEST(NodeAlone, AnUnresolvablePeerIsLoggedOnceAndTheLastLineSaysNoPeerWasReached) {
  std::string dir = ::testing::TempDir() + "/e2e_alone";
  std::filesystem::remove_all(dir);
  auto shards = WriteSyntheticShards(dir + "/shards", 1, 1, 7);
  ASSERT_EQ(shards.size(), 1u);
  node::NodeConfig c =
      SyntheticNodeConfig("alone", FreeEndpoint("127.0.0.1"), shards[0], dir + "/alone");
  c.training.rounds = 3;
  c.round.linger_s = 0.2;
  c.peers = {{"ghost", "tcp://no-such-host.invalid:5555"}};
  std::string config = WriteConfig(dir + "/alone.toml", c);
  auto child = ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", config}, dir + "/alone.log");
  ASSERT_TRUE(child.has_value());
  EXPECT_TRUE(ExitedWith(child->Wait(seconds(300)), 0));
  std::string log = ReadText(dir + "/alone.log");
  EXPECT_EQ(Count(log, "peer ghost cannot be reached"), 1u) << log;
  EXPECT_NE(log.find("host 'no-such-host.invalid' does not resolve: "), std::string::npos) << log;
  EXPECT_NE(log.find("[warning] peer ghost cannot be reached"), std::string::npos) << log;
  EXPECT_NE(LastLine(log).find(node::kNeverReachedAPeer), std::string::npos) << log;
  EXPECT_EQ(LastRound(dir + "/alone"), 3);
}

// Item 12: an address that is not an address at all is a config error (exit code 2) naming the key,
// the value and why, instead of a node that trains alone.
TEST(NodeAlone, AnInvalidPeerAddressIsRefusedAtStartWithTheCause) {
  std::string dir = ::testing::TempDir() + "/e2e_bad_address";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/bad.toml") << "id = \"x\"\nlisten = \"tcp://127.0.0.1:1\"\n"
                                      "[[peers]]\nid = \"y\"\naddress = \"tcp://300.1.2.3:5555\"\n"
                                      "[data]\nshard = \"s\"\n";
  auto child = ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", dir + "/bad.toml", "--check"},
                                   dir + "/bad.log");
  ASSERT_TRUE(child.has_value());
  EXPECT_TRUE(ExitedWith(child->Wait(seconds(30)), 2)) << ReadText(dir + "/bad.log");
  std::string log = ReadText(dir + "/bad.log");
  EXPECT_NE(log.find("bad.toml:5: 'peers[0].address' = 'tcp://300.1.2.3:5555'"), std::string::npos)
      << log;
  EXPECT_NE(log.find("'300.1.2.3' is not an IPv4 address"), std::string::npos) << log;
}

}  // namespace
}  // namespace meshlearn::e2e
