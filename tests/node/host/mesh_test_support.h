#pragma once
// Helpers for the tests of real nodes in one test process over loopback TCP (mesh_test.cc,
// mesh_hostile_test.cc): a mesh of nodes on the synthetic problem, run as threads, and a bare
// ZeroMQ DEALER that sends what another implementation would.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "node/config/logging.h"
#include "node/host/node.h"
#include "node/host/outputs.h"
#include "process/free_port.h"
#include "training/partition.h"
#include "training/shard_file.h"

namespace meshlearn::node::testing {

// Polls `condition` until it holds, for at most 5 minutes (generous: the machine may be loaded);
// returns whether it held.
inline bool WaitUntil(const std::function<bool()>& condition) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

inline std::vector<RoundRow> ReadRounds(const std::string& path) {
  auto rows = ReadRoundsCsv(path);
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  return rows.ok() ? *rows : std::vector<RoundRow>{};
}

// A mesh of `clusters` x `per_cluster` nodes on the synthetic problem; every node knows all.
class SyntheticMesh {
 public:
  SyntheticMesh(const std::string& name, int clusters, int per_cluster, uint64_t seed) {
    dir_ = ::testing::TempDir() + "/mesh_" + name;
    std::filesystem::remove_all(dir_);
    training::PartitionConfig partition;
    partition.shift = training::ShiftKind::kSynthetic;
    partition.num_clients = clusters * per_cluster;
    partition.num_clusters = clusters;
    partition.train_per_client = 100;
    partition.validation_per_client = 50;
    partition.test_per_client = 100;
    partition.seed = seed;
    auto shards = training::BuildClientShards({}, partition);
    EXPECT_TRUE(shards.ok()) << shards.status().ToString();
    shards_ = *shards;
    for (const auto& shard : *shards) {
      std::string id = "node-" + std::to_string(shard.client_id);
      std::string path = training::ShardPath(dir_ + "/shards", shard.client_id);
      EXPECT_TRUE(training::WriteShard(path, shard).ok());
      cluster_of_[id] = shard.cluster_id;
      NodeConfig c;
      c.id = id;
      auto port = FindFreeTcpPort("127.0.0.1");
      EXPECT_TRUE(port.ok());
      c.listen = "tcp://127.0.0.1:" + std::to_string(*port);
      c.seed = seed;
      c.output_dir = dir_ + "/" + id;
      c.data.shard = path;
      c.model.architecture = training::Architecture::kLinear;
      c.training.optimizer = training::OptimizerKind::kSgd;
      c.training.learning_rate = 0.003;
      c.training.batch_size = 8;
      c.learning.metric = similarity::MetricKind::kCosWeights;
      c.learning.tau = 140;  // file 004 Table 8, synthetic, cos weight
      c.learning.peers_per_round = 2;
      c.round.round_deadline_s = 20;
      c.round.linger_s = 1;
      configs_.push_back(c);
    }
    for (NodeConfig& c : configs_) {
      for (const NodeConfig& other : configs_) {
        if (other.id != c.id) c.peers.push_back({other.id, other.listen});
      }
    }
  }

  // Sends every node's log lines (warn and above) to `sink` too, from the next Run() on.
  void CaptureLogs(spdlog::sink_ptr sink) { log_sink_ = std::move(sink); }

  // Runs every node for `rounds` rounds as threads of this process; returns when all finished.
  // `during` (optional) is called with node 0 while the nodes run.
  // `observer` (optional) sees every message every node receives, from several threads.
  // `transport` (optional) starts the nodes' transports; default ZeroMQ over loopback TCP.
  void Run(int64_t rounds, const std::function<void(Node&)>& during = nullptr,
           const MessageObserver& observer = nullptr, const TransportFactory& transport = nullptr) {
    std::vector<std::unique_ptr<Node>> nodes;
    for (NodeConfig c : configs_) {
      c.training.rounds = rounds;
      NodeOptions options;
      options.logger = MakeNodeLogger(c.id, spdlog::level::warn, log_sink_);
      options.observer = observer;
      options.transport = transport;
      auto node = Node::Create(c, std::move(options));
      ASSERT_TRUE(node.ok()) << node.status().ToString();
      nodes.push_back(std::move(*node));
    }
    std::vector<std::thread> threads;
    std::vector<Status> results(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      threads.emplace_back([&, i] { results[i] = nodes[i]->Run(); });
    }
    if (during) during(*nodes[0]);
    for (auto& t : threads) t.join();
    for (const Status& s : results) EXPECT_TRUE(s.ok()) << s.ToString();
  }

  std::vector<RoundRow> Rounds(const NodeConfig& c) const {
    return ReadRounds(c.output_dir + "/rounds.csv");
  }
  std::vector<NodeConfig>& configs() { return configs_; }
  int ClusterOf(const std::string& id) const { return cluster_of_.at(id); }
  const std::vector<training::ClientShard>& shards() const { return shards_; }

 private:
  std::vector<training::ClientShard> shards_;
  std::string dir_;
  std::vector<NodeConfig> configs_;
  std::map<std::string, int> cluster_of_;
  spdlog::sink_ptr log_sink_;
};

// Sends `frames` as one multipart message through a bare ZeroMQ DEALER to `endpoint`, as another
// implementation would, and returns the reply's frames (nullopt when none came within 10 s).
inline std::optional<std::vector<Frame>> AskRaw(const std::string& endpoint,
                                                const std::vector<Frame>& frames) {
  zmq::context_t context;
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::rcvtimeo, 10000);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint);
  for (size_t f = 0; f < frames.size(); ++f) {
    dealer.send(zmq::buffer(frames[f].data(), frames[f].size()),
                f + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  std::vector<zmq::message_t> parts;
  if (!zmq::recv_multipart(dealer, std::back_inserter(parts)).has_value()) return std::nullopt;
  std::vector<Frame> reply;
  for (const zmq::message_t& part : parts) {
    reply.emplace_back(
        std::vector<uint8_t>(part.data<uint8_t>(), part.data<uint8_t>() + part.size()));
  }
  return reply;
}

}  // namespace meshlearn::node::testing
