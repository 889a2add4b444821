// A meshlearn-node process and its output folder: checkpoints of another run or corrupted are
// refused with exit 2, a resume counts wall_s on, and a folder deleted mid-run is recreated.
#include <gtest/gtest.h>

#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

// Node n0 on synthetic data, writing to "<dir>/n0", whose only peer never answers: it trains
// alone, each round waiting out a short deadline.
node::NodeConfig LoneNode(const std::string& dir, const std::string& shard, int64_t rounds) {
  node::NodeConfig c = SyntheticNodeConfig("n0", FreeEndpoint("127.0.0.1"), shard, dir + "/n0");
  c.peers = {{"n1", FreeEndpoint("127.0.0.1")}};
  c.training.rounds = rounds;
  c.round.round_deadline_s = 0.2;
  c.round.linger_s = 0;
  return c;
}

// Runs meshlearn-node on `config` (written to "<dir>/<name>.toml") to its end.
Finished RunNode(const std::string& dir, const std::string& name, const node::NodeConfig& config) {
  std::string path = WriteConfig(dir + "/" + name + ".toml", config);
  return RunToEnd({MESHLEARN_NODE_BIN, "--config", path}, dir + "/" + name + ".log");
}

TEST(NodeOutputs, ACheckpointOfAnotherRunOrCorruptedStopsTheNodeWithExit2AndTheFix) {
  std::string dir = ::testing::TempDir() + "/e2e_checkpoint_identity";
  std::filesystem::remove_all(dir);
  auto shards = WriteSyntheticShards(dir + "/shards", 2, 2, 4);
  ASSERT_EQ(shards.size(), 2u);
  const std::string node_dir = dir + "/n0";
  const std::string checkpoint = node_dir + "/checkpoint.bin";

  Finished first = RunNode(dir, "first", LoneNode(dir, shards[0], 2));
  ASSERT_TRUE(ExitedWith(first.status, 0)) << first.log;
  ASSERT_EQ(Rounds(node_dir).size(), 3u);

  // The same run with more rounds resumes, and wall_s counts on from the checkpointed round.
  Finished resumed = RunNode(dir, "resumed", LoneNode(dir, shards[0], 4));
  ASSERT_TRUE(ExitedWith(resumed.status, 0)) << resumed.log;
  EXPECT_NE(resumed.log.find("resuming after round 2"), std::string::npos) << resumed.log;
  EXPECT_EQ(ExpectConsecutiveRounds(node_dir), 5u);
  std::string rows_before = ReadText(node_dir + "/rounds.csv");

  // Another seed: refused, and nothing in the folder changes.
  node::NodeConfig other_seed = LoneNode(dir, shards[0], 6);
  other_seed.seed = 5;
  Finished seed = RunNode(dir, "seed", other_seed);
  EXPECT_TRUE(ExitedWith(seed.status, 2)) << seed.log;
  EXPECT_NE(seed.log.find(checkpoint + ": this checkpoint belongs to another run"),
            std::string::npos)
      << seed.log;
  EXPECT_NE(seed.log.find("seed: 1 in the checkpoint, 5 in this config"), std::string::npos)
      << seed.log;
  EXPECT_NE(seed.log.find("delete the checkpoint to start the node from round 0"),
            std::string::npos)
      << seed.log;
  EXPECT_EQ(ReadText(node_dir + "/rounds.csv"), rows_before);

  // Another client's shard: refused.
  Finished shard = RunNode(dir, "shard", LoneNode(dir, shards[1], 6));
  EXPECT_TRUE(ExitedWith(shard.status, 2)) << shard.log;
  EXPECT_NE(shard.log.find("shard data: hash 0x"), std::string::npos) << shard.log;

  // Four corrupted bytes in the middle (the weights): refused.
  std::string bytes = ReadText(checkpoint);
  ASSERT_GT(bytes.size(), 100u);
  for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 4; ++i) bytes[i] ^= 0x20;
  std::ofstream(checkpoint, std::ios::binary | std::ios::trunc) << bytes;
  Finished corrupt = RunNode(dir, "corrupt", LoneNode(dir, shards[0], 6));
  EXPECT_TRUE(ExitedWith(corrupt.status, 2)) << corrupt.log;
  EXPECT_NE(corrupt.log.find(checkpoint + ": corrupt checkpoint (its checksum does not match"),
            std::string::npos)
      << corrupt.log;
  EXPECT_EQ(ReadText(node_dir + "/rounds.csv"), rows_before);

  // The fix the messages offer: without the checkpoint the node starts from round 0.
  std::filesystem::remove(checkpoint);
  Finished fresh = RunNode(dir, "fresh", LoneNode(dir, shards[0], 3));
  EXPECT_TRUE(ExitedWith(fresh.status, 0)) << fresh.log;
  EXPECT_EQ(ExpectConsecutiveRounds(node_dir), 4u);
}

TEST(NodeOutputs, AnOutputFolderDeletedMidRunIsRecreatedWithEveryRow) {
  std::string dir = ::testing::TempDir() + "/e2e_folder_deleted";
  std::filesystem::remove_all(dir);
  auto shards = WriteSyntheticShards(dir + "/shards", 2, 1, 4);
  ASSERT_EQ(shards.size(), 2u);
  std::vector<std::string> endpoints = {FreeEndpoint("127.0.0.1"), FreeEndpoint("127.0.0.1")};
  std::vector<std::optional<ChildProcess>> nodes;
  for (int i = 0; i < 2; ++i) {
    std::string id = "n" + std::to_string(i);
    node::NodeConfig c = SyntheticNodeConfig(id, endpoints[i], shards[i], dir + "/" + id);
    c.peers = {{i == 0 ? "n1" : "n0", endpoints[1 - i]}};
    c.training.rounds = 12;
    c.round.min_round_s = 0.3;
    c.round.linger_s = 0.5;
    nodes.push_back(ChildProcess::Start(
        {MESHLEARN_NODE_BIN, "--config", WriteConfig(dir + "/" + id + ".toml", c)},
        dir + "/" + id + ".log"));
    ASSERT_TRUE(nodes.back().has_value());
  }
  const std::string victim = dir + "/n0";
  ASSERT_TRUE(WaitFor([&] { return LastRound(victim) >= 3; }, seconds(300)))
      << "n0 never reached round 3:\n"
      << ReadText(dir + "/n0.log");
  // One `rm -rf` takes the whole folder: n0 is paused (SIGSTOP) meanwhile, so that a file it
  // creates during the deletion cannot make it fail ("Directory not empty"). A write the pause
  // cut in two fails once, when n0 goes on, as it would after a real `rm -rf`.
  nodes[0]->Signal(SIGSTOP);
  int64_t deleted_after = LastRound(victim);
  std::error_code ec;
  std::filesystem::remove_all(victim, ec);
  nodes[0]->Signal(SIGCONT);
  ASSERT_FALSE(ec) << "could not delete " << victim << ": " << ec.message();
  ASSERT_LT(deleted_after, 12) << "n0 ended its rounds before its folder could be deleted";

  for (auto& n : nodes) EXPECT_TRUE(ExitedWith(n->Wait(seconds(300)), 0));
  std::string log = ReadText(dir + "/n0.log");
  EXPECT_NE(log.find("rounds.csv is gone (deleted while the node ran?): recreating"),
            std::string::npos)
      << log;
  // Every round is in the recreated rounds.csv (header included: Rounds() reads it), the rows
  // written before the deletion too, and the checkpoint is back.
  EXPECT_EQ(ExpectConsecutiveRounds(victim), 13u) << "deleted after round " << deleted_after;
  EXPECT_TRUE(std::filesystem::exists(victim + "/checkpoint.bin"));
  EXPECT_TRUE(std::filesystem::exists(victim + "/comm.csv"));
}

TEST(NodeOutputs, ASecondNodeOnTheSameFolderIsRefused) {
  std::string dir = ::testing::TempDir() + "/e2e_folder_locked";
  std::filesystem::remove_all(dir);
  auto shards = WriteSyntheticShards(dir + "/shards", 1, 1, 4);
  ASSERT_EQ(shards.size(), 1u);
  node::NodeConfig first = LoneNode(dir, shards[0], 100000);  // stopped by the test
  auto running =
      ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", WriteConfig(dir + "/first.toml", first)},
                          dir + "/first.log");
  ASSERT_TRUE(running.has_value());
  ASSERT_TRUE(WaitFor([&] { return LastRound(dir + "/n0") >= 0; }, seconds(300)))
      << ReadText(dir + "/first.log");
  Finished second = RunNode(dir, "second", LoneNode(dir, shards[0], 100000));
  EXPECT_TRUE(ExitedWith(second.status, 2)) << second.log;
  EXPECT_NE(
      second.log.find(dir + "/n0/node.lock is locked by process " + std::to_string(running->pid())),
      std::string::npos)
      << second.log;
  running->Signal(SIGTERM);
  EXPECT_TRUE(ExitedWith(running->Wait(seconds(120)), 0));
}

}  // namespace
}  // namespace meshlearn::e2e
