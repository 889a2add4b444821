#pragma once
// A launch of a scenario, start to end. Run::Execute owns the whole sequence:
//   1. load the scenario and pick the methods (--methods) and the runner (method_runner.h);
//   2. check that this build may write into the run folder (kept_results.h: a dirty build writes
//      into results/ only with --allow-dirty), claim it (run_folder.h: refuse, --resume or
//      --force) and write the manifest;
//   3. partition the data once (experiment.h), or stop there with --partition-only;
//   4. for each method of the table: read back what an earlier launch completed, or record it
//      as started, run it with the runner, record how it ended, and report it (run_report.h);
//   5. write the run's report (table, summary.csv, curves), the simulation's figures, the
//      watcher's own files, and finish the manifest last.

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "tools/scenario/run_folder.h"
#include "tools/scenario/run_types.h"
#include "tools/scenario/scenario_file.h"

namespace meshlearn::launch {

// What a launch is asked to do: its command line, read.
struct RunRequest {
  std::string scenario_path;
  ScenarioOverrides overrides;
  RunOptions options;  // options.runner names the runner; out_dir empty: runs/<scenario slug>
  std::vector<std::string> only_methods;  // --methods, in the user's order; empty: every method
  ExistingRun existing = ExistingRun::kRefuse;
  bool partition_only = false;
  // --allow-dirty: a build whose tree was not clean may write into a checkout's results/
  // (tools/layout/kept_results.h).
  bool allow_dirty = false;
  std::vector<std::string> command;  // the whole command line, for the manifest
  // Makes the run's watcher (the live dashboard) once the partition is known; empty: none.
  WatcherFactory watch;
};

// One launch (see the sequence above).
class Run {
 public:
  // Runs `request` start to end, printing progress and results on stdout and errors on stderr.
  // `interrupt` becoming true (Ctrl-C) stops the running method cleanly; the results so far are
  // written. Returns the exit code (tools/cli/cli_exit.h).
  static int Execute(const RunRequest& request, const std::atomic<bool>& interrupt);
};

}  // namespace meshlearn::launch
