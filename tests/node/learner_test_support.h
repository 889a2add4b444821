#pragma once
// A node config over one synthetic shard, for tests that run a real learner.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "node/config/config.h"
#include "node/learner/learner_factory.h"
#include "node/logic/learner.h"
#include "training/partition.h"
#include "training/shard_file.h"

namespace meshlearn::node {

// A linear model trained by SGD (lr 0.003, batch 8, 20 rounds) on one synthetic shard of
// `train` training samples (50 validation, 50 test), written under a temporary folder `name`.
inline NodeConfig SyntheticLearnerConfig(const std::string& name, size_t train) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  training::PartitionConfig partition;
  partition.shift = training::ShiftKind::kSynthetic;
  partition.num_clients = 1;
  partition.train_per_client = train;
  partition.validation_per_client = 50;
  partition.test_per_client = 50;
  partition.seed = 4;
  auto shards = training::BuildClientShards({}, partition);
  EXPECT_TRUE(shards.ok()) << shards.status().ToString();
  NodeConfig c;
  c.id = "node-0";
  c.data.shard = training::ShardPath(dir, 0);
  EXPECT_TRUE(training::WriteShard(c.data.shard, (*shards)[0]).ok());
  c.model.architecture = training::Architecture::kLinear;
  c.training.optimizer = training::OptimizerKind::kSgd;
  c.training.learning_rate = 0.003;
  c.training.batch_size = 8;
  c.training.rounds = 20;
  return c;
}

// The learner `config` describes; null (with a test failure) when it cannot be made.
inline std::unique_ptr<Learner> MakeLearner(const NodeConfig& config) {
  auto learner = CreateLearner(config);
  EXPECT_TRUE(learner.ok()) << learner.status().ToString();
  return learner.ok() ? std::move(*learner) : nullptr;
}

}  // namespace meshlearn::node
