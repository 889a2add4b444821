#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "base/atomic_file.h"
#include "process/http_server.h"
#include "tools/launch/method_runner.h"
#include "tools/launch/node_processes.h"
#include "tools/layout/run_layout.h"

namespace meshlearn::launch {
namespace {

// True when the node of `n` wrote every round of the run.
bool FinishedEveryRound(const NodeRun& n, int64_t rounds) {
  auto rows = node::ReadRoundsCsv(PathIn(n.dir, kRoundsFile));
  return rows.ok() && !rows->empty() && rows->back().round >= rounds;
}

// Writes each node's config into its folder and starts a meshlearn-node on it; on a failure to
// start one, kills those started.
Result<std::vector<pid_t>> StartNodes(const std::vector<node::NodeConfig>& configs,
                                      const RunOptions& options, MethodRun& run) {
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
  return pids;
}

// Tells `observer` the nodes started, with a way to ask each for its /status over HTTP.
void ObserveOverHttp(RunObserver& observer, const std::vector<node::NodeConfig>& configs,
                     MethodRun& run) {
  std::vector<uint16_t> ports;
  for (const node::NodeConfig& c : configs) ports.push_back(c.http_port.value_or(0));
  observer.NodesStarted(run, [ports] {
    std::vector<std::optional<node::NodeStatus>> statuses(ports.size());
    for (size_t i = 0; i < ports.size(); ++i) {
      auto json = node::HttpGet("127.0.0.1", ports[i], "/status", 1000);
      auto status = json.ok() ? node::ParseStatusJson(*json) : json.status();
      if (status.ok()) statuses[i] = std::move(*status);
    }
    return statuses;
  });
}

// One meshlearn-node process per node, each with its node.toml and node.log in its folder. A
// node whose process died and which someone restarted by hand (its folder is locked again,
// node/host/outputs.h) is waited for, and it is not a failure if it then finishes every round.
class ProcessesRunner : public MethodRunner {
 public:
  std::string Mode() const override { return "process"; }
  bool ServesStatusOverHttp() const override { return true; }
  Status Run(const MethodJob& job, MethodRun& run) override {
    const std::vector<node::NodeConfig>& configs = job.configs;
    const RunOptions& options = job.options;
    const std::atomic<bool>& interrupt = job.interrupt;
    const int64_t rounds = run.rounds;
    auto started = StartNodes(configs, options, run);
    if (!started.ok()) return started.status();
    std::vector<pid_t> pids = std::move(*started);
    if (options.observer) ObserveOverHttp(*options.observer, configs, run);
    ProgressLine progress(run.method.name, rounds);
    auto start = std::chrono::steady_clock::now();
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
      if (running > 0 || any_restarted())
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
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
};

}  // namespace

std::unique_ptr<MethodRunner> MakeProcessesRunner() { return std::make_unique<ProcessesRunner>(); }

}  // namespace meshlearn::launch
