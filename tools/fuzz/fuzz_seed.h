#pragma once
// One seed of the fault fuzzer (tools/fuzz/fuzz.h): its scenario run through the real simulator
// in a child process, then checked (tools/fuzz/fuzz_invariants.h).
//
// Rules:
// - The run takes the launcher's own path for --simulate: the scenario file is written to the
//   seed's folder and read back with LoadScenario, the data partitioned by PreparePartition, and
//   the method run by RunMethod with the simulated runner, in a forked child of this process.
//   Rationale: a crash, abort or failed assertion of the run kills the child only; the parent
//   reports it (no-crash) and goes on with the next seed. A fork is cheap next to a run, and the
//   parent never initialises the learners' threads, so the child starts clean.
// - The child's stdout and stderr go to "<dir>/run.log"; the child writes its FuzzRunReport to
//   "<dir>/fuzz-report.toml", with its memory growth: its peak resident set at the end (VmHWM)
//   minus its resident set when it began (what the fork gave it).
// - With the canary, the child sets MESHLEARN_FUZZ_CANARY=1, which plants an off-by-one in every
//   node host's restart (node/host/node_host.cc): a node restarted from its checkpoint drops that
//   round's rounds.csv row too. rounds-contiguous must catch it in every seed with a death.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/fuzz/fuzz_invariants.h"
#include "tools/fuzz/fuzz_scenario.h"

namespace meshlearn::launch {

// How a seed is run.
struct SeedRunOptions {
  bool canary = false;
  double timeout_s = 900;     // real seconds before the child is killed (a liveness violation)
  bool hash_outputs = false;  // compute SeedResult::output_hash (for a determinism check)
};

// What one run of a seed gave.
struct SeedResult {
  std::vector<Violation> violations;  // empty: every invariant held
  uint64_t output_hash = 0;           // HashOutputs of the run (when it ran, with hash_outputs)
  double real_seconds = 0;
  std::map<std::string, uint64_t> faults;  // the faults the run injected, by kind
  double memory_growth_mib = 0;            // FuzzRunReport::memory_growth_mib
};

// Runs `scenario` in `dir` (made afresh; an earlier folder there is deleted) and checks every
// invariant but determinism (see the rules).
SeedResult RunSeed(const FuzzScenario& scenario, const std::string& dir,
                   const SeedRunOptions& options);

}  // namespace meshlearn::launch
