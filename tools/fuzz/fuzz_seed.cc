#include "tools/fuzz/fuzz_seed.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "base/atomic_file.h"
#include "tools/launch/experiment.h"
#include "tools/launch/method_runner.h"
#include "tools/launch/node_processes.h"
#include "tools/layout/run_layout.h"
#include "tools/scenario/scenario_file.h"

namespace meshlearn::launch {
namespace {

// Keeps each node's last status, read when the nodes stopped (the refusals by code).
class LastStatuses : public RunObserver {
 public:
  void NodesStarted(const MethodRun&, StatusSource statuses) override { source_ = statuses; }
  void NodesStopped(const MethodRun&) override {
    if (source_) last_ = source_();
    source_ = nullptr;
  }
  const std::vector<std::optional<node::NodeStatus>>& last() const { return last_; }

 private:
  StatusSource source_;
  std::vector<std::optional<node::NodeStatus>> last_;
};

// The child's work: runs `s` in `dir` as --simulate does and describes how it ended.
FuzzRunReport RunInChild(const FuzzScenario& s, const std::string& dir) {
  FuzzRunReport report;
  const double start_rss_mib = ProcSizeMib("/proc/self/status", "VmRSS:");
  const std::string path = PathIn(dir, kFuzzScenarioFile);
  if (Status written = WriteFileAtomically(path, ScenarioToml(s)); !written.ok()) {
    report.error = written.ToString();
    return report;
  }
  auto scenario = LoadScenario(path, {});
  if (!scenario.ok()) {
    report.error = scenario.status().ToString();
    return report;
  }
  auto partition = PreparePartition(*scenario, dir);
  auto runner = Runners().Make(kSimulatedRunner);
  if (!partition.ok() || !runner.ok()) {
    report.error = (!partition.ok() ? partition.status() : runner.status()).ToString();
    return report;
  }
  LastStatuses statuses;
  RunOptions options;
  options.out_dir = dir;
  options.runner = kSimulatedRunner;
  options.threads = 1;
  options.known_peers = s.known_peers;
  options.observer = &statuses;
  std::atomic<bool> interrupt{false};
  auto run =
      RunMethod(*scenario, scenario->methods.front(), *partition, options, **runner, interrupt);
  if (!run.ok()) {
    report.error = run.status().ToString();
    return report;
  }
  report.simulated_seconds = run->simulated_seconds.value_or(0);
  report.interrupted = run->interrupted;
  report.memory_growth_mib = ProcSizeMib("/proc/self/status", "VmHWM:") - start_rss_mib;
  if (run->simulation) {
    report.faults = run->simulation->faults;
    report.ledger = run->simulation->ledger;
  }
  for (size_t i = 0; i < run->nodes.size(); ++i) {
    const NodeRun& n = run->nodes[i];
    FuzzNodeEnd end{n.id, n.dir, n.failure.value_or(""), {}};
    if (i < statuses.last().size() && statuses.last()[i]) {
      end.refused_by_code = statuses.last()[i]->counters.rejected_by_code;
    }
    report.nodes.push_back(std::move(end));
  }
  return report;
}

// In the child: sends stdout and stderr to `dir`/run.log, runs, writes the report, exits.
[[noreturn]] void ChildMain(const FuzzScenario& s, const std::string& dir, bool canary) {
  const std::string log = PathIn(dir, kFuzzRunLogFile);
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  }
  if (canary) ::setenv("MESHLEARN_FUZZ_CANARY", "1", 1);
  FuzzRunReport report = RunInChild(s, dir);
  Status written = WriteRunReport(PathIn(dir, kFuzzReportFile), report);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(written.ok() ? 0 : 1);
}

// Waits for child `pid` at most `timeout_s` real seconds (then kills it); "" when it exited with
// 0, else how it ended.
std::string AwaitChild(pid_t pid, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (true) {
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return std::string("waitpid failed: ") + std::strerror(errno);
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return "timeout";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFSIGNALED(status)) {
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  if (WEXITSTATUS(status) != 0) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "";
}

}  // namespace

SeedResult RunSeed(const FuzzScenario& scenario, const std::string& dir,
                   const SeedRunOptions& options) {
  SeedResult result;
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid == 0) ChildMain(scenario, dir, options.canary);
  std::string ended = pid < 0 ? std::string("fork failed: ") + std::strerror(errno)
                              : AwaitChild(pid, options.timeout_s);
  result.real_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (ended == "timeout") {
    result.violations.push_back(
        {kLiveness, "the run did not end within " + std::to_string(options.timeout_s) +
                        " real seconds (killed; see " + kFuzzRunLogFile + ")"});
    return result;
  }
  if (!ended.empty()) {
    result.violations.push_back({kNoCrash, "the run " + ended + " (see " + kFuzzRunLogFile + ")"});
    return result;
  }
  auto report = ReadRunReport(PathIn(dir, kFuzzReportFile));
  if (!report.ok()) {
    result.violations.push_back({kNoCrash, report.status().ToString()});
    return result;
  }
  result.violations = CheckRun(scenario, *report);
  result.faults = report->faults;
  result.memory_growth_mib = report->memory_growth_mib;
  if (options.hash_outputs) result.output_hash = HashOutputs(*report, !scenario.security);
  return result;
}

}  // namespace meshlearn::launch
