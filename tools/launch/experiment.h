#pragma once
// Running a scenario: partition the data once, then run every method over that partition with
// N real nodes (processes, or threads of this process), show progress, collect the outputs.

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"
#include "tools/launch/run_types.h"
#include "tools/launch/scenario.h"

namespace meshlearn::launch {

// Loads the scenario's dataset from its package location or files, partitions it, and writes the
// shards and "<out_dir>/clusters.csv" (node,cluster). Errors name the file or key at fault.
Result<Partition> PreparePartition(const Scenario& scenario, const std::string& out_dir);

// The names of the engines (--engine), in documentation order.
NameTable<Engine> EngineNames();

// Runs `method` with one node per partition entry until every node finished, died, or
// `interrupt` became true (then every node is stopped cleanly). Progress goes to stdout: one
// updating line on a terminal, a plain line every few seconds otherwise. A dead node is reported
// with its last log lines; the others go on. Nodes whose folder holds a checkpoint of the run
// (a resumed run) continue after its round. Process mode: a node whose process died and which
// someone restarted by hand (its folder is locked again, node/outputs.h) is waited for, and it
// is not a failure if it then finishes every round.
Result<MethodRun> RunMethod(const Scenario& scenario, const MethodSpec& method,
                            const Partition& partition, const RunOptions& options,
                            const std::atomic<bool>& interrupt);

// An estimate of the seconds a method still needs, from each node's last completed round
// (`reached`, -1 for none) out of `rounds` after `elapsed` seconds; nullopt before 2% is done.
std::optional<double> EstimateSecondsLeft(const std::vector<int64_t>& reached, int64_t rounds,
                                          double elapsed);

}  // namespace meshlearn::launch
