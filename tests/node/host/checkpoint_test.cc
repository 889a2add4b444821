#include "node/host/checkpoint.h"
#include "node/host/outputs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace meshlearn::node {
namespace {

Checkpoint Sample() {
  Checkpoint c;
  c.round = 7;
  c.stopped = true;
  c.learner.weights = {1.5f, -2.f, 3.25f};
  c.learner.best_loss = 0.125;
  c.learner.best_round = 5;
  c.learner.best_weights = {1.f, 2.f, 3.f};
  c.learner.rounds_without_improvement = 2;
  c.learner.val_loss = 0.2;
  c.learner.test_acc = 0.9;
  c.machine.round = 7;
  c.machine.sampler.sampler = "dac";
  c.machine.sampler.round = 7;
  c.machine.sampler.peers = {{"a", 0.5, true, 0.75}, {"b", std::nullopt, false, 0.25}};
  c.machine.comm = {{"a", 4, 3}, {"b", 1, 0}};
  c.machine.peers = {{"a", "tcp://127.0.0.1:2", "KEY-of-a"}, {"b", "tcp://127.0.0.1:3", ""}};
  c.machine.rng_state = "1 2 3";
  c.machine.wall_seconds = 12.5;
  c.identity =
      CheckpointIdentity{"n7", 3, 0x1234abcd, "id = \"n7\"\n[training]\nlearning_rate = 0.1\n"};
  return c;
}

// Sample() (without identity and wall_s) as the previous format wrote it: format version 1,
// ["MLCKPT", 1, round, stopped, learner, sampler, comm, peers, rng_state], with neither identity,
// wall_s nor checksum. Written once by the format-1 encoder (node/host/checkpoint.cc at commit
// 4407cbb) and kept unchanged, as a checkpoint left by that build would be.
std::string SampleInFormat1() {
  std::ifstream in(
      std::string(MESHLEARN_SOURCE_DIR) + "/tests/node/host/testdata/checkpoint_v1.bin",
      std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  EXPECT_EQ(bytes.str().size(), 187u) << "tests/node/host/testdata/checkpoint_v1.bin is missing";
  return bytes.str();
}

NodeConfig Config() {
  NodeConfig c;
  c.id = "n7";
  c.listen = "tcp://127.0.0.1:5000";
  c.seed = 3;
  c.output_dir = "out/n7";
  c.data.shard = "/nonexistent/n7.shard";
  c.peers = {{"n8", "tcp://127.0.0.1:5001"}};
  return c;
}

TEST(Checkpoint, WriteThenReadGivesTheSameState) {
  std::string dir = ::testing::TempDir() + "/checkpoint_test";
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(WriteCheckpoint(dir + "/checkpoint.bin", Sample()).ok());
  auto read = ReadCheckpoint(dir + "/checkpoint.bin");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(EncodeCheckpoint(*read), EncodeCheckpoint(Sample()));
  EXPECT_EQ(read->machine.sampler.peers[1].score, std::nullopt);
  EXPECT_EQ(read->learner.best_weights, Sample().learner.best_weights);
  EXPECT_EQ(read->machine.peers, Sample().machine.peers);  // with their CURVE keys
}

// Top-k (node/logic/public_estimates.h): the node's public estimate with its kept updates and its
// copies of peers' estimates are kept; a checkpoint without any has the bytes it had before.
TEST(Checkpoint, TopKEstimatesAreKeptAndOnlyWrittenWhenThereAreAny) {
  Checkpoint c = Sample();
  const size_t plain = EncodeCheckpoint(c).size();
  c.machine.estimates.owner =
      EstimateOwnerState{4, 5, {1.f, 2.f, 3.f}, {1.5f, 2.f, 3.f}, {{6, {3, 1, 0, 0}, 0xdeadbeef}}};
  c.machine.estimates.peers = {{"b", {-1, 6}, {0.f, 1.f, 2.f}}, {"a", {4, 5}, {7.f, 8.f, 9.f}}};
  auto read = DecodeCheckpoint(EncodeCheckpoint(c), "ckpt");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->machine.estimates, c.machine.estimates);
  auto without = DecodeCheckpoint(EncodeCheckpoint(Sample()), "ckpt");
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->machine.estimates, EstimatesState{});
  EXPECT_GT(EncodeCheckpoint(c).size(), plain);
  c.machine.estimates = {};
  EXPECT_EQ(EncodeCheckpoint(c).size(), plain);
}

// Issue 61: why a node's learning halted is kept, with or without top-k estimates, so that a
// restarted halted node still serves no model; a node that did not halt has the bytes it had.
TEST(Checkpoint, WhyTheNodeHaltedIsKeptAndOnlyWrittenWhenItDid) {
  const std::string plain = EncodeCheckpoint(Sample());
  Checkpoint c = Sample();
  c.machine.halted = "node n7 halted at round 7: training loss became inf; it serves no model";
  auto read = DecodeCheckpoint(EncodeCheckpoint(c), "ckpt");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->machine.halted, c.machine.halted);
  EXPECT_EQ(read->machine.estimates, EstimatesState{}) << "no estimates: written as nil";
  c.machine.estimates.peers = {{"a", {4, 5}, {7.f, 8.f, 9.f}}};
  auto both = DecodeCheckpoint(EncodeCheckpoint(c), "ckpt");
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ(both->machine.halted, c.machine.halted);
  EXPECT_EQ(both->machine.estimates, c.machine.estimates);
  c = Sample();
  EXPECT_EQ(EncodeCheckpoint(c), plain);
  auto never = DecodeCheckpoint(plain, "ckpt");
  ASSERT_TRUE(never.ok());
  EXPECT_EQ(never->machine.halted, "");
}

TEST(Checkpoint, TheIdentityAndWallTimeAreKept) {
  auto read = DecodeCheckpoint(EncodeCheckpoint(Sample()), "ckpt");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_TRUE(read->identity.has_value());
  EXPECT_EQ(*read->identity, *Sample().identity);
  EXPECT_EQ(read->machine.wall_seconds, 12.5);
}

TEST(Checkpoint, AnyFourCorruptedBytesAreFoundAndNamed) {
  std::string bytes = EncodeCheckpoint(Sample());
  for (size_t at = 0; at + 4 <= bytes.size(); ++at) {
    std::string corrupt = bytes;
    for (size_t i = at; i < at + 4; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
    auto decoded = DecodeCheckpoint(corrupt, "out/n7/checkpoint.bin");
    ASSERT_FALSE(decoded.ok()) << "bytes " << at << "-" << at + 3 << " corrupted were accepted";
    EXPECT_NE(decoded.status().message().find("out/n7/checkpoint.bin"), std::string::npos);
    EXPECT_NE(decoded.status().message().find("delete it"), std::string::npos)
        << decoded.status().message();
  }
}

TEST(Checkpoint, ACheckpointOfFormat1IsStillReadWithoutAnIdentity) {
  auto read = DecodeCheckpoint(SampleInFormat1(), "old.bin");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_FALSE(read->identity.has_value());
  EXPECT_EQ(read->round, 7);
  EXPECT_EQ(read->learner.weights, Sample().learner.weights);
  EXPECT_EQ(read->machine.peers, Sample().machine.peers);
  EXPECT_EQ(read->machine.wall_seconds, 0);
}

TEST(CheckpointIdentity, PortsPeersFoldersTimingAndRoundsAreNotPartOfTheRun) {
  NodeConfig a = Config();
  NodeConfig b = Config();
  b.listen = "tcp://127.0.0.1:6000";
  b.peers = {{"n9", "tcp://127.0.0.1:6001"}};
  b.output_dir = "elsewhere";
  b.training.rounds = 200;
  b.round.round_deadline_s = 3;
  b.log_level = spdlog::level::debug;
  EXPECT_EQ(IdentityOf(a), IdentityOf(b));
  EXPECT_EQ(DescribeIdentityDifference(IdentityOf(a), IdentityOf(b)), "");
}

TEST(CheckpointIdentity, AnotherSeedShardOrSettingIsNamed) {
  std::string dir = ::testing::TempDir() + "/checkpoint_identity";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  NodeConfig mine = Config();
  mine.data.shard = dir + "/mine.shard";
  std::ofstream(mine.data.shard) << "my data";
  NodeConfig other = mine;
  other.seed = 4;
  other.data.shard = dir + "/other.shard";
  std::ofstream(other.data.shard) << "other data";
  other.training.learning_rate = 0.5;
  std::string path = dir + "/checkpoint.bin";
  Checkpoint c = Sample();
  c.identity = IdentityOf(other);
  ASSERT_TRUE(WriteCheckpoint(path, c).ok());

  auto read = ReadCheckpointOfRun(path, IdentityOf(mine));
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), ErrorCode::kInvalidArgument);
  const std::string& message = read.status().message();
  EXPECT_NE(message.find(path + ": this checkpoint belongs to another run"), std::string::npos)
      << message;
  EXPECT_NE(message.find("seed: 4 in the checkpoint, 3 in this config"), std::string::npos)
      << message;
  EXPECT_NE(message.find("shard data: hash 0x"), std::string::npos) << message;
  EXPECT_NE(message.find("training.learning_rate: 0.5 in the checkpoint, 0.00029999"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("delete the checkpoint to start the node from round 0"), std::string::npos)
      << message;

  c.identity = IdentityOf(mine);
  ASSERT_TRUE(WriteCheckpoint(path, c).ok());
  EXPECT_TRUE(ReadCheckpointOfRun(path, IdentityOf(mine)).ok());
}

// A checkpoint written before a config key existed (its settings lack the key) belongs to the
// run whose config holds that key's default, and to no run that sets it otherwise.
TEST(CheckpointIdentity, AKeyTheCheckpointDoesNotWriteHoldsItsDefault) {
  NodeConfig config = Config();
  config.compression.codec = CompressionCodec::kTopK;
  CheckpointIdentity older = IdentityOf(config);
  const std::string line = "peer_estimates = 64\n";
  const size_t at = older.settings.find(line);
  ASSERT_NE(at, std::string::npos) << older.settings;
  older.settings.erase(at, line.size());

  EXPECT_EQ(DescribeIdentityDifference(older, IdentityOf(config)), "");
  config.compression.peer_estimates = 8;
  EXPECT_EQ(DescribeIdentityDifference(older, IdentityOf(config)),
            "compression.peer_estimates: 64 in the checkpoint, 8 in this config");
}

TEST(Checkpoint, MissingIsNotFoundAndCorruptIsMalformedWithAHint) {
  EXPECT_EQ(ReadCheckpoint("/nonexistent/checkpoint.bin").status().code(), ErrorCode::kNotFound);
  std::string bytes = EncodeCheckpoint(Sample());
  for (size_t cut : {size_t{0}, size_t{5}, bytes.size() / 2, bytes.size() - 1}) {
    auto decoded = DecodeCheckpoint(bytes.substr(0, cut), "ckpt");
    ASSERT_FALSE(decoded.ok()) << cut;
    EXPECT_EQ(decoded.status().code(), ErrorCode::kMalformed);
    EXPECT_NE(decoded.status().message().find("delete it"), std::string::npos);
  }
}

// A run folder written before rounds.csv had its epsilon column still reads, and a node resuming
// in it keeps its rows, each with an empty epsilon cell under the current header.
TEST(RoundsCsv, AFolderWrittenBeforeTheEpsilonColumnReadsAndResumes) {
  std::string dir = ::testing::TempDir() + "/rounds_without_epsilon";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/rounds.csv") << "round,wall_s,train_loss,val_loss,val_acc,test_loss,"
                                        "test_acc,sampled,answered,bytes_in,bytes_out,stopped,"
                                        "train_s,eval_s,temperature,peers\n"
                                     << "0,0.5,2,3,,4,,0,0,10,20,0,0.1,0.2,,\n"
                                     << "1,1.5,1,2,,3,,2,2,30,40,0,0.1,0.2,,\"a,b;c\"\n"
                                     << "2,2.5,1,2,,3,,2,2,50,60,0,0.1,0.2,,d\n";
  auto rows = ReadRoundsCsv(dir + "/rounds.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ((*rows)[1].peers, (std::vector<std::string>{"a,b", "c"}));
  EXPECT_TRUE(std::isnan((*rows)[1].epsilon));
  EXPECT_EQ((*rows)[2].bytes_out, 60u);

  auto outputs = NodeOutputs::Open(dir, /*resume_round=*/1);
  ASSERT_TRUE(outputs.ok()) << outputs.status().ToString();
  std::ifstream in(dir + "/rounds.csv");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), RoundsCsvHeader() +
                            "\n0,0.5,2,3,,4,,0,0,10,20,0,0.1,0.2,,,\n"
                            "1,1.5,1,2,,3,,2,2,30,40,0,0.1,0.2,,,\"a,b;c\"\n");
  rows = ReadRoundsCsv(dir + "/rounds.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[1].peers, (std::vector<std::string>{"a,b", "c"}));
}

// rounds.csv's numbers read back as exactly the doubles that were written (base/number_text.h),
// NaN as an empty cell and inf as "inf"; a cell that is not its column's number is an error
// naming the line, the column and what is allowed.
TEST(RoundsCsv, NumbersReadBackExactlyAndABadCellIsNamed) {
  std::string dir = ::testing::TempDir() + "/rounds_exact";
  std::filesystem::remove_all(dir);
  auto outputs = NodeOutputs::Open(dir, /*resume_round=*/-1);
  ASSERT_TRUE(outputs.ok()) << outputs.status().ToString();
  RoundRecord record;
  record.round = 3;
  record.wall_seconds = 0.1 + 0.2;
  record.outcome.train_loss = 1.0 / 3.0;
  record.outcome.val_loss = std::numeric_limits<double>::infinity();
  record.outcome.val_acc = static_cast<double>(0.7f);
  record.outcome.test_loss = 123456.78901234567;
  record.outcome.test_acc = 1e-300;
  record.outcome.train_seconds = 2.5;
  record.sampled = 2;
  record.answered = 1;
  record.sampled_peers = {"a,b", "c"};
  ASSERT_TRUE(outputs->AppendRound(record, 10, 18446744073709551615u).ok());
  auto rows = ReadRoundsCsv(dir + "/rounds.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  ASSERT_EQ(rows->size(), 1u);
  const RoundRow& row = rows->front();
  EXPECT_EQ(row.round, 3);
  EXPECT_EQ(row.wall_s, 0.1 + 0.2);
  EXPECT_EQ(row.train_loss, 1.0 / 3.0);
  EXPECT_EQ(row.val_loss, std::numeric_limits<double>::infinity());
  EXPECT_EQ(row.val_acc, static_cast<double>(0.7f));
  EXPECT_EQ(row.test_loss, 123456.78901234567);
  EXPECT_EQ(row.test_acc, 1e-300);
  EXPECT_TRUE(std::isnan(row.temperature));
  EXPECT_TRUE(std::isnan(row.epsilon));
  EXPECT_EQ(row.bytes_out, 18446744073709551615u);
  EXPECT_EQ(row.peers, (std::vector<std::string>{"a,b", "c"}));

  std::ofstream(dir + "/bad.csv") << RoundsCsvHeader() << "\n"
                                  << "0,0.5,2,3,,4,,0,0,10,20,0,0.1,0.2,,,\n"
                                  << "1,1.5,1,2x,,3,,2,2,30,40,0,0.1,0.2,,,d\n";
  auto bad = ReadRoundsCsv(dir + "/bad.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kMalformed);
  EXPECT_NE(
      bad.status().message().find("bad.csv line 3, column 4 (val_loss): '2x' is not a number"),
      std::string::npos)
      << bad.status().message();
}

// Resuming keeps the rows up to the checkpointed round; a row whose round is not a whole number
// stops the resume with its place, instead of being read as round 0 and kept.
TEST(RoundsCsv, ResumingRefusesARowWhoseRoundIsNotANumber) {
  std::string dir = ::testing::TempDir() + "/rounds_bad_round";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/rounds.csv") << RoundsCsvHeader() << "\n"
                                     << "0,0.5,2,3,,4,,0,0,10,20,0,0.1,0.2,,,\n"
                                     << "x1,1.5,1,2,,3,,2,2,30,40,0,0.1,0.2,,,d\n";
  auto outputs = NodeOutputs::Open(dir, /*resume_round=*/1);
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), ErrorCode::kMalformed);
  EXPECT_NE(outputs.status().message().find("line 3, column 1 (round): 'x1'"), std::string::npos)
      << outputs.status().message();
}

}  // namespace
}  // namespace meshlearn::node
