#include "node/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>

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

}  // namespace
}  // namespace meshlearn::node
