#include "tools/launch/node_processes.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>

#include "base/number_text.h"
#include "tools/layout/run_layout.h"
#include "tools/report/report.h"

extern char** environ;

namespace meshlearn::launch {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Result<pid_t> SpawnLogged(const std::vector<std::string>& argv, const std::string& log_path,
                          bool own_group) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, STDIN_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (own_group) {
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
  }
  std::vector<std::string> args = argv;
  std::vector<char*> pointers;
  for (std::string& a : args) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  pid_t pid = 0;
  int error = posix_spawnp(&pid, args[0].c_str(), &actions, &attributes, pointers.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    return Status::Unavailable("cannot start " + argv[0] + ": " + std::strerror(error));
  }
  return pid;
}

double ProcSizeMib(const std::string& path, std::string_view key) {
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(key)) continue;
    const std::string_view size = std::string_view(line).substr(key.size());
    const std::optional<double> kib =
        NumberFromText<double>(size.substr(0, size.rfind(" kB")), {.padded = true});
    return kib ? *kib / 1024.0 : 0;
  }
  return 0;
}

double PssMib(pid_t pid) {
  return ProcSizeMib("/proc/" + std::to_string(pid) + "/smaps_rollup", "Pss:");
}

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

std::string Tail(const std::string& path, size_t n) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > n) lines.pop_front();
  }
  std::string out;
  for (const std::string& l : lines) out += "\n    " + l;
  return out.empty() ? "\n    (no log output)" : out;
}

double MeanLatestValLoss(const std::vector<node::NodeProgress>& progress) {
  double sum = 0;
  int n = 0;
  for (const auto& p : progress) {
    if (p.completed_round >= 0 && std::isfinite(p.last_val_loss)) {
      sum += p.last_val_loss;
      ++n;
    }
  }
  return n ? sum / n : NAN;
}

ProgressLine::ProgressLine(std::string method, int64_t rounds)
    : method_(std::move(method)), rounds_(rounds), tty_(::isatty(STDOUT_FILENO)) {}

void ProgressLine::Show(const std::vector<int64_t>& reached, double mean_val_loss, int dead,
                        double elapsed, const char* extra) {
  if (!tty_ && elapsed - last_plain_ < 5) return;
  last_plain_ = elapsed;
  int64_t lo = rounds_, hi = -1;
  for (int64_t r : reached) {
    lo = std::min(lo, r);
    hi = std::max(hi, r);
  }
  double eta = EstimateSecondsLeft(reached, rounds_, elapsed).value_or(NAN);
  char text[256];
  std::snprintf(text, sizeof(text),
                "[%s] round %lld/%lld (nodes %lld..%lld)  mean val loss %.4g  %s elapsed %.0fs"
                "  eta %s",
                method_.c_str(), static_cast<long long>(std::max<int64_t>(lo, 0)),
                static_cast<long long>(rounds_), static_cast<long long>(std::max<int64_t>(lo, 0)),
                static_cast<long long>(std::max<int64_t>(hi, 0)), mean_val_loss,
                dead ? (std::to_string(dead) + " dead ").c_str() : "", elapsed,
                std::isfinite(eta) ? (std::to_string(static_cast<int>(eta)) + "s").c_str() : "?");
  std::string line = text;
  if (extra) line += std::string("  ") + extra;
  if (tty_) {
    std::printf("\r\033[K%s", line.c_str());
  } else {
    std::printf("%s\n", line.c_str());
  }
  std::fflush(stdout);
}

void ProgressLine::Finish() {
  if (tty_) std::printf("\n");
}

void ShowProgressFromFiles(ProgressLine& progress, const std::vector<NodeRun>& nodes, int dead,
                           double elapsed) {
  std::vector<node::NodeProgress> states(nodes.size());
  std::vector<int64_t> reached;
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto rows = node::ReadRoundsCsv(PathIn(nodes[i].dir, kRoundsFile));
    if (rows.ok() && !rows->empty()) {
      states[i].completed_round = rows->back().round;
      states[i].last_val_loss = rows->back().val_loss;
    }
    reached.push_back(states[i].completed_round);
  }
  progress.Show(reached, MeanLatestValLoss(states), dead, elapsed);
}

}  // namespace meshlearn::launch
