#pragma once
// Helpers for end-to-end tests that run the real meshlearn binaries as processes.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "node/config/config.h"
#include "node/host/outputs.h"
#include "node/transport/curve_keys.h"
#include "process/free_port.h"
#include "training/partition.h"
#include "training/shard_file.h"

extern char** environ;

namespace meshlearn::e2e {

// A child process with its output in a log file.
class ChildProcess {
 public:
  // Starts `args` (args[0] is the binary) with stdout and stderr appended to `log_path`.
  static std::optional<ChildProcess> Start(std::vector<std::string> args,
                                           const std::string& log_path) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    int error = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (error != 0) return std::nullopt;
    ChildProcess child;
    child.pid_ = pid;
    return child;
  }

  ChildProcess(ChildProcess&& other) noexcept : pid_(other.pid_) { other.pid_ = -1; }
  ChildProcess& operator=(ChildProcess&& other) noexcept {
    std::swap(pid_, other.pid_);
    return *this;
  }
  ~ChildProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // Sends `signal`.
  void Signal(int signal) const {
    if (pid_ > 0) ::kill(pid_, signal);
  }

  // Waits up to `timeout` for the exit; returns the wait status, or nullopt on timeout.
  std::optional<int> Wait(std::chrono::seconds timeout) {
    auto until = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      if (std::chrono::steady_clock::now() > until) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return std::nullopt;
  }

  pid_t pid() const { return pid_; }

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
};

// True when `status` from Wait() is a normal exit with code `code`.
inline bool ExitedWith(const std::optional<int>& status, int code) {
  return status && WIFEXITED(*status) && WEXITSTATUS(*status) == code;
}

// The whole text of a file ("" when missing).
inline std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// What a process run to its end left: its wait status (nullopt when it did not start or did not
// end in time; it is then killed) and its output.
struct Finished {
  std::optional<int> status;
  std::string log;
};

// Runs `args` (args[0] is the program) to its end, with its output in `log_path` (replaced).
inline Finished RunToEnd(const std::vector<std::string>& args, const std::string& log_path,
                         std::chrono::seconds timeout = std::chrono::seconds(300)) {
  std::filesystem::remove(log_path);
  auto child = ChildProcess::Start(args, log_path);
  EXPECT_TRUE(child.has_value()) << args[0];
  Finished finished;
  if (child) finished.status = child->Wait(timeout);
  finished.log = ReadText(log_path);
  return finished;
}

// rounds.csv of a node folder (empty when missing or unreadable).
inline std::vector<node::RoundRow> Rounds(const std::string& node_dir) {
  auto rows = node::ReadRoundsCsv(node_dir + "/rounds.csv");
  return rows.ok() ? *rows : std::vector<node::RoundRow>{};
}

// The last completed round of a node folder (-1 before round 0).
inline int64_t LastRound(const std::string& node_dir) {
  auto rows = Rounds(node_dir);
  return rows.empty() ? -1 : rows.back().round;
}

// Every row of `node_dir`'s rounds.csv, rounds 0, 1, 2... with no gap and no repeat, and wall_s
// never decreasing (a resumed node counts on); the number of rows.
inline size_t ExpectConsecutiveRounds(const std::string& node_dir) {
  auto rows = Rounds(node_dir);
  for (size_t r = 0; r < rows.size(); ++r) {
    EXPECT_EQ(rows[r].round, static_cast<int64_t>(r)) << node_dir << " row " << r;
    if (r > 0) {
      EXPECT_GE(rows[r].wall_s, rows[r - 1].wall_s)
          << node_dir << ": wall_s went back at row " << r;
    }
  }
  return rows.size();
}

// Polls `condition` every 50 ms up to `timeout`; returns whether it became true.
template <typename Condition>
bool WaitFor(Condition condition, std::chrono::seconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

// Writes `clients` synthetic concept-shift shards (linear regression, `clusters` clusters) into
// `dir` and returns their paths.
inline std::vector<std::string> WriteSyntheticShards(const std::string& dir, int clients,
                                                     int clusters, uint64_t seed) {
  training::PartitionConfig p;
  p.shift = training::ShiftKind::kSynthetic;
  p.num_clients = clients;
  p.num_clusters = clusters;
  p.train_per_client = 100;
  p.validation_per_client = 50;
  p.test_per_client = 50;
  p.seed = seed;
  auto shards = training::BuildClientShards({}, p);
  std::vector<std::string> paths;
  if (!shards.ok()) return paths;
  for (const auto& shard : *shards) {
    paths.push_back(training::ShardPath(dir, shard.client_id));
    if (!training::WriteShard(paths.back(), shard).ok()) return {};
  }
  return paths;
}

// A node config for the synthetic problem with test-friendly timing. The round deadline is short
// enough for a test to see a dead peer skipped within seconds, and long enough that a loaded
// machine does not make live peers miss it.
inline node::NodeConfig SyntheticNodeConfig(const std::string& id, const std::string& listen,
                                            const std::string& shard, const std::string& out) {
  node::NodeConfig c;
  c.id = id;
  c.listen = listen;
  c.data.shard = shard;
  c.output_dir = out;
  c.model.architecture = training::Architecture::kLinear;
  c.training.optimizer = training::OptimizerKind::kSgd;
  c.training.learning_rate = 0.003;
  c.learning.metric = similarity::MetricKind::kCosWeights;
  c.learning.tau = 140;
  c.learning.peers_per_round = 1;
  c.round.round_deadline_s = 4;
  c.round.linger_s = 2;
  return c;
}

// "tcp://<ip>:<port>" with a port that is free on loopback address `ip` (fails the test if none).
inline std::string FreeEndpoint(const std::string& ip) {
  auto port = node::FindFreeTcpPort(ip);
  EXPECT_TRUE(port.ok()) << port.status().ToString();
  return "tcp://" + ip + ":" + std::to_string(port.ok() ? *port : 0);
}

// comm.csv of a node folder: peer -> (times_sampled, answered).
inline std::map<std::string, std::pair<int, int>> Comm(const std::string& node_dir) {
  std::map<std::string, std::pair<int, int>> rows;
  std::istringstream lines(ReadText(node_dir + "/comm.csv"));
  std::string line;
  std::getline(lines, line);  // header: peer,times_sampled,answered
  while (std::getline(lines, line)) {
    std::istringstream cells(line);
    std::string peer, sampled, answered;
    std::getline(cells, peer, ',');
    std::getline(cells, sampled, ',');
    std::getline(cells, answered, ',');
    rows[peer] = {std::stoi(sampled), std::stoi(answered)};
  }
  return rows;
}

// The key files of one node, written as meshlearn-keygen writes them.
struct NodeKeyFiles {
  std::string secret_key_file;
  std::string public_key;
};

inline NodeKeyFiles MakeKeys(const std::string& dir, const std::string& name) {
  std::filesystem::create_directories(dir);
  auto pair = node::GenerateCurveKeyPair();
  EXPECT_TRUE(pair.ok()) << pair.status().ToString();
  if (!pair.ok()) return {};
  Status written = node::WriteKeyPairFiles(dir, name, *pair, /*overwrite=*/true, name);
  EXPECT_TRUE(written.ok()) << written.ToString();
  return {node::SecretKeyPath(dir, name), pair->public_key};
}

// The peers listed in scores.csv of a node folder.
inline std::set<std::string> ScoredPeers(const std::string& node_dir) {
  std::set<std::string> peers;
  std::istringstream lines(ReadText(node_dir + "/scores.csv"));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) peers.insert(line.substr(0, line.find(',')));
  return peers;
}

// Writes `config` as TOML to `path` and returns the path.
inline std::string WriteConfig(const std::string& path, const node::NodeConfig& config) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << node::RenderNodeConfig(config);
  return path;
}

// Writes the configs of a mesh of synthetic nodes `ids` (their shards drawn with `seed`) under
// `dir`, each on a free port of 127.0.0.1 and knowing every other, changed by `tweak`; returns
// the config files' paths ("<dir>/<id>.toml"; outputs in "<dir>/<id>").
inline std::vector<std::string> WriteFullMesh(const std::string& dir,
                                              const std::vector<std::string>& ids, uint64_t seed,
                                              const std::function<void(node::NodeConfig&)>& tweak) {
  auto shards = WriteSyntheticShards(dir + "/shards", static_cast<int>(ids.size()), 1, seed);
  EXPECT_EQ(shards.size(), ids.size());
  if (shards.size() != ids.size()) return {};
  std::vector<std::string> endpoints;
  for (size_t i = 0; i < ids.size(); ++i) endpoints.push_back(FreeEndpoint("127.0.0.1"));
  std::vector<std::string> configs;
  for (size_t i = 0; i < ids.size(); ++i) {
    node::NodeConfig c = SyntheticNodeConfig(ids[i], endpoints[i], shards[i], dir + "/" + ids[i]);
    for (size_t j = 0; j < ids.size(); ++j) {
      if (j != i) c.peers.push_back({ids[j], endpoints[j]});
    }
    tweak(c);
    configs.push_back(WriteConfig(dir + "/" + ids[i] + ".toml", c));
  }
  return configs;
}

// The number in column `column` of a CSV `row` under `header` (plain cells, no quoted commas),
// or nullopt when the column is missing or the cell empty.
inline std::optional<double> SummaryCell(const std::string& header, const std::string& row,
                                         const std::string& column) {
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::istringstream in(line);
    for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    return cells;
  };
  std::vector<std::string> names = split(header), cells = split(row);
  for (size_t i = 0; i < names.size() && i < cells.size(); ++i) {
    if (names[i] == column && !cells[i].empty()) return std::stod(cells[i]);
  }
  return std::nullopt;
}

}  // namespace meshlearn::e2e
