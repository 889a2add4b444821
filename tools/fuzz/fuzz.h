#pragma once
// `meshlearn-launch fuzz`: the simulator as a fault fuzzer (issue 46; docs/development.md "The
// fault fuzzer"). Each seed draws a small scenario with swarm-style faults
// (tools/fuzz/fuzz_scenario.h), runs it through the real simulator in a child process
// (tools/fuzz/fuzz_seed.h) and checks the invariants (tools/fuzz/fuzz_invariants.h).
//
//   meshlearn-launch fuzz --seeds N [--from S] [--out DIR] [--canary] [--determinism-every K]
//                         [--no-reduce] [--seed-timeout SECONDS] [--plugins DIR] [--no-plugins]
//                         [--allow-dirty]
//   meshlearn-launch fuzz --replay S [--nodes N] [--rounds R] [--faults LIST] [--no-plugins]
//                         [--canary]
//
// Rules:
// - A passing seed's folder is deleted; a failing seed's is kept in "<out>/seed-<S>", and the
//   seed prints one command line that replays it exactly (same commit).
// - Every `determinism_every`-th seed (seed % K == 0) that passed runs a second time, and the
//   hash of both runs' outputs is compared (determinism).
// - The run keeps the fastest-failing seed per invariant, and at the end reduces each (unless
//   --no-reduce): it retries the seed with half the nodes, half the rounds, and each fault kind
//   off in turn, and its plug-ins off, keeps every change after which the same invariant still
//   fails, and prints the smallest scenario that still fails with its replay line.
// - The plug-ins a seed draws are read from --plugins (default: DefaultPlugInDir(), where this
//   build saves them), made absolute, so that the seed's scenario file replays from anywhere. A
//   seed that draws a plug-in whose file is missing stops the run before it runs, with the
//   error of CheckPlugInFiles (exit code 2).
// - At the end it prints, and writes to "<out>/fuzz.csv" (`name,value` rows), the seeds and their
//   real seconds, seeds per hour, the mean scenario size, the seeds that drew each fault kind,
//   the faults injected by kind (summed over the seeds), the seeds that drew each plug-in, the
//   invariants checked and how often,
//   the largest memory growth, and the failures by invariant.
// - "<out>/manifest.toml" (FuzzManifest, tools/scenario/manifest.h) records the run as every
//   run's manifest does: written before the first seed, and at the end with its status and the
//   seeds that failed. An --out in a checkout's results/ needs a clean build or --allow-dirty
//   (tools/layout/kept_results.h). --replay writes no manifest.
// - Exit code: 0 when every invariant held on every seed, 1 when one failed, 2 for a bad
//   command line, a missing plug-in file, or an --out that may not or cannot be written.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/fuzz/fuzz_scenario.h"
#include "tools/fuzz/fuzz_seed.h"

namespace meshlearn::launch {

// What a fuzz run does.
struct FuzzOptions {
  uint64_t from = 1;  // the first seed
  uint64_t seeds = 100;
  std::string out_dir = "runs/fuzz";
  FuzzLimits limits;                            // --nodes, --rounds, --faults, --no-plugins
  std::string plugin_dir = DefaultPlugInDir();  // --plugins
  bool canary = false;
  int64_t determinism_every = 10;  // 0: never
  bool reduce = true;
  double seed_timeout_s = 900;
};

// A failing seed: the first violation, and how long the seed took.
struct FuzzFailure {
  uint64_t seed = 0;
  Violation violation;
  double real_seconds = 0;
};

// What a fuzz run found.
struct FuzzSummary {
  uint64_t seeds = 0;
  uint64_t failed = 0;
  double real_seconds = 0;  // the run's wall time: its seeds, their checks and clean-up
  double mean_nodes = 0, mean_rounds = 0;
  uint64_t determinism_checks = 0;
  std::map<FaultKind, uint64_t> seeds_with_fault;  // seeds that injected each kind
  std::map<std::string, uint64_t> faults;          // faults injected, by kind (summed)
  uint64_t invariant_checks = 0;                   // invariants checked, over every seed
  double max_memory_growth_mib = 0;                // the largest run's memory growth
  std::map<std::string, uint64_t> failures;        // failing seeds by invariant (first violation)
  std::map<std::string, FuzzFailure> fastest;      // the fastest-failing seed per invariant
  // The seeds that ran each plug-in.
  std::map<FuzzPlugIn, uint64_t> seeds_with_plugin;
  // The run stopped before a seed whose plug-in file is missing: CheckPlugInFiles' error.
  std::string error;
};

// One row of fuzz.csv: a figure's name and its value (the rules above), the file's description
// (base/csv_table.h).
struct FuzzFigure {
  std::string name;
  std::string value;

  template <class Columns, class Self>
  static void Describe(Columns& c, Self& f) {
    c.Column("name", f.name);
    c.Column("value", f.value);
  }
};

// The rows of fuzz.csv for `summary`, of a fuzz run with `options`: from, seeds, real_s,
// seeds_per_hour, mean_nodes, mean_rounds, failed, determinism_checks, invariant_checks,
// max_memory_growth_mib, then seeds_with_<fault kind>, seeds_with_plugin_<plug-in>,
// injected_<fault>, invariant_<name> ("checked") and failed_<invariant>.
std::vector<FuzzFigure> FuzzFigures(const FuzzSummary& summary, const FuzzOptions& options);

// Runs seeds [from, from + seeds) (see the rules), printing one line per seed and a summary; a
// seed whose plug-in file is missing stops it there (FuzzSummary::error).
FuzzSummary Fuzz(const FuzzOptions& options);

// The command line that replays `seed` under `options` (its limits, plug-in folder and canary).
std::string ReplayCommand(uint64_t seed, const FuzzOptions& options);

// `meshlearn-launch fuzz ...` (argv[0] is "fuzz"); returns the exit code.
int FuzzCommand(int argc, char** argv);

}  // namespace meshlearn::launch
