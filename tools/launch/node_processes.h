#pragma once
// What the launcher needs to run and watch processes: spawning with a log file, describing how a
// process ended, the tail of a log, and the progress line. Shared by the local run of node
// processes (runner_processes.cc) and the engine runs (engine_run.cc).

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "node/host/node.h"
#include "tools/scenario/run_types.h"

namespace meshlearn::launch {

// Seconds from `start` until now.
double SecondsSince(std::chrono::steady_clock::time_point start);

// Starts `argv` (argv[0] is looked up on PATH when it has no '/') with stdin closed and stdout
// and stderr appended to `log_path`. With `own_group` the process leads a new process group, so
// that a Ctrl-C at the terminal reaches the launcher only. kUnavailable when it cannot start.
Result<pid_t> SpawnLogged(const std::vector<std::string>& argv, const std::string& log_path,
                          bool own_group = false);

// The size on line "<key> <n> kB" of the /proc file `path` (status, smaps_rollup) in MiB; 0 when
// the file or the line is missing or the size is not a number.
double ProcSizeMib(const std::string& path, std::string_view key);

// Proportional set size of process `pid` in MiB (0 when unavailable).
double PssMib(pid_t pid);

// "killed by signal N" or "exited with code N" for a waitpid() status.
std::string DescribeExit(int status);

// The last `n` lines of the file at `path`, each on its own indented line, for death reports
// ("(no log output)" when there are none).
std::string Tail(const std::string& path, size_t n);

// Mean validation loss over the latest rows of the nodes that have one (NaN when none has).
double MeanLatestValLoss(const std::vector<node::NodeProgress>& progress);

// Progress of one method: an updating line on a terminal, a plain line every 5 s otherwise.
class ProgressLine {
 public:
  // The progress of method `method`, whose nodes run `rounds` rounds.
  ProgressLine(std::string method, int64_t rounds);

  // Shows the rounds reached by every node (-1: not started) and their mean validation loss,
  // `dead` nodes when > 0, and `extra` when given.
  void Show(const std::vector<int64_t>& reached, double mean_val_loss, int dead, double elapsed,
            const char* extra = nullptr);

  // Ends the updating line.
  void Finish();

 private:
  std::string method_;
  int64_t rounds_;
  bool tty_;
  double last_plain_ = -1e9;
};

// Shows on `progress` how far the nodes of `nodes` got, read from their rounds.csv, with `dead`
// nodes dead after `elapsed` seconds.
void ShowProgressFromFiles(ProgressLine& progress, const std::vector<NodeRun>& nodes, int dead,
                           double elapsed);

}  // namespace meshlearn::launch
