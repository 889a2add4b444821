// meshlearn-node processes started only from config files, under faults: a node killed with
// SIGKILL and resumed from its checkpoint, and a slow node (label `reliability`).
#include <gtest/gtest.h>
#include <signal.h>

#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

// True when some row of `node_dir`'s rounds.csv after round `after` sampled `peer`.
bool SampledAfter(const std::string& node_dir, int64_t after, const std::string& peer) {
  for (const node::RoundRow& row : Rounds(node_dir)) {
    if (row.round <= after) continue;
    for (const std::string& p : row.peers) {
      if (p == peer) return true;
    }
  }
  return false;
}

// Every step waits for the event it checks (generous deadlines, since the machine may be
// loaded): the nodes run until the test has seen everything and then stop them with SIGTERM.
TEST(NodeBinary, KilledNodeIsSkippedByOthersAndResumesFromItsCheckpoint) {
  std::string dir = ::testing::TempDir() + "/e2e_kill";
  std::filesystem::remove_all(dir);
  std::vector<std::string> ids = {"n0", "n1", "n2"};
  std::vector<std::string> configs = WriteFullMesh(dir, ids, 4, [](node::NodeConfig& c) {
    c.training.rounds = 100000;  // stopped by the test
    c.round.min_round_s = 0.1;
    c.learning.peers_per_round = 2;
    c.round.dead_after_failures = 2;
  });
  ASSERT_EQ(configs.size(), 3u);
  std::vector<std::optional<ChildProcess>> nodes;
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", configs[i]},
                                        dir + "/" + ids[i] + ".log"));
    ASSERT_TRUE(nodes.back().has_value());
  }
  std::string victim = dir + "/n2";
  ASSERT_TRUE(WaitFor([&] { return LastRound(victim) >= 8; }, seconds(300)))
      << "n2 never reached round 8; it reached " << LastRound(victim);
  nodes[2]->Signal(SIGKILL);
  nodes[2]->Wait(seconds(10));
  int64_t killed_at = LastRound(victim);

  // The others keep going while it is dead: several rounds, each bounded by the deadline...
  int64_t before = LastRound(dir + "/n0");
  EXPECT_TRUE(WaitFor([&] { return LastRound(dir + "/n0") >= before + 4; }, seconds(300)))
      << "n0 stalled at round " << LastRound(dir + "/n0") << " after n2 died";
  // ...and mark it dead after dead_after_failures (2) misses, so it is not sampled for a while.
  EXPECT_TRUE(WaitFor(
      [&] {
        return ReadText(dir + "/n0.log").find("peer n2 failed 2 times in a row: marked dead") !=
               std::string::npos;
      },
      seconds(300)))
      << "n0 never marked n2 dead:\n"
      << ReadText(dir + "/n0.log");

  nodes[2] = ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", configs[2]}, victim + ".log2");
  ASSERT_TRUE(nodes[2].has_value());
  // rounds.csv is appended before the checkpoint is written, so a kill between the two resumes
  // one round earlier (and drops that row, so nothing repeats).
  auto resumed = [&](int64_t round) {
    return ReadText(victim + ".log2").find("resuming after round " + std::to_string(round)) !=
           std::string::npos;
  };
  EXPECT_TRUE(WaitFor([&] { return resumed(killed_at) || resumed(killed_at - 1); }, seconds(300)))
      << "n2 did not resume after round " << killed_at << " (or one earlier):\n"
      << ReadText(victim + ".log2");
  // After its restart the victim is sampled again by the others, and it trains on.
  int64_t back_at = std::max(LastRound(dir + "/n0"), LastRound(dir + "/n1"));
  EXPECT_TRUE(WaitFor(
      [&] {
        return SampledAfter(dir + "/n0", back_at, "n2") || SampledAfter(dir + "/n1", back_at, "n2");
      },
      seconds(300)))
      << "neither n0 nor n1 sampled n2 after round " << back_at << " (its restart)";
  EXPECT_TRUE(WaitFor([&] { return LastRound(victim) > killed_at + 2; }, seconds(300)))
      << "n2 did not train on after its restart; last round " << LastRound(victim);

  // SIGTERM: each finishes its step and exits cleanly; rounds.csv holds rounds 0..N once each.
  for (int i = 0; i < 3; ++i) nodes[i]->Signal(SIGTERM);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(ExitedWith(nodes[i]->Wait(seconds(120)), 0)) << ids[i];
    EXPECT_GT(ExpectConsecutiveRounds(dir + "/" + ids[i]), static_cast<size_t>(killed_at))
        << ids[i];
  }
}

// A node that stops answering for a while (SIGSTOP, while the others complete at least two
// rounds: each waits its 2 s deadline for it) is skipped: nobody's round waits for it, and once it
// continues (SIGCONT) it is sampled again. Every step waits for the event it checks.
TEST(NodeBinary, SlowNodeIsSkippedWithoutStallingAnyone) {
  std::string dir = ::testing::TempDir() + "/e2e_slow";
  std::filesystem::remove_all(dir);
  auto shards = WriteSyntheticShards(dir + "/shards", 4, 1, 5);
  ASSERT_EQ(shards.size(), 4u);
  std::vector<std::string> ids = {"n0", "n1", "n2", "slow"};
  std::vector<std::string> endpoints;
  for (int i = 0; i < 4; ++i) endpoints.push_back(FreeEndpoint("127.0.0.1"));
  std::vector<std::optional<ChildProcess>> nodes;
  for (int i = 0; i < 4; ++i) {
    node::NodeConfig c = SyntheticNodeConfig(ids[i], endpoints[i], shards[i], dir + "/" + ids[i]);
    c.training.rounds = 100000;  // stopped by the test
    c.round.min_round_s = 0.2;
    c.round.round_deadline_s = 2;
    c.learning.peers_per_round = 3;  // every other node, the slow one included, every round
    for (int j = 0; j < 4; ++j) {
      if (j != i) c.peers.push_back({ids[j], endpoints[j]});
    }
    std::string config = WriteConfig(dir + "/" + ids[i] + ".toml", c);
    nodes.push_back(
        ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", config}, dir + "/" + ids[i] + ".log"));
    ASSERT_TRUE(nodes.back().has_value());
  }
  ASSERT_TRUE(WaitFor([&] { return LastRound(dir + "/slow") >= 5; }, seconds(300)))
      << "'slow' never reached round 5";
  nodes[3]->Signal(SIGSTOP);
  int64_t slow_at = LastRound(dir + "/slow");
  std::vector<int64_t> stopped_at;
  for (int i = 0; i < 3; ++i) stopped_at.push_back(LastRound(dir + "/" + ids[i]));
  // The others keep going while it is stopped, each round skipping it at its deadline.
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(
        WaitFor([&] { return LastRound(dir + "/" + ids[i]) >= stopped_at[i] + 2; }, seconds(300)))
        << ids[i] << " stalled at round " << LastRound(dir + "/" + ids[i])
        << " while 'slow' was stopped";
  }
  EXPECT_EQ(LastRound(dir + "/slow"), slow_at) << "'slow' was not stopped";
  for (int i = 0; i < 3; ++i) {
    int missed = 0;
    for (const node::RoundRow& row : Rounds(dir + "/" + ids[i])) {
      if (row.round > stopped_at[i]) missed += row.sampled - row.answered;
    }
    EXPECT_GT(missed, 0) << ids[i] << " never missed the stopped node";
  }
  nodes[3]->Signal(SIGCONT);
  int64_t continued_at = 0;
  for (int i = 0; i < 3; ++i) continued_at = std::max(continued_at, LastRound(dir + "/" + ids[i]));
  EXPECT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < 3; ++i) {
          if (SampledAfter(dir + "/" + ids[i], continued_at, "slow")) return true;
        }
        return false;
      },
      seconds(300)))
      << "nobody sampled 'slow' after it continued (round " << continued_at << ")";
  for (int i = 0; i < 4; ++i) nodes[i]->Signal(SIGTERM);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(ExitedWith(nodes[i]->Wait(seconds(120)), 0)) << ids[i];
    ExpectConsecutiveRounds(dir + "/" + ids[i]);
  }
}

}  // namespace
}  // namespace meshlearn::e2e
