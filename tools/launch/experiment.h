#pragma once
// Running a scenario's methods: partition the data once, then run every method over that
// partition with one node per client through a MethodRunner, and collect the outputs.

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tools/launch/method_runner.h"
#include "tools/scenario/run_types.h"
#include "tools/scenario/scenario.h"
#include "training/dataset.h"

namespace meshlearn::launch {

// Loads the scenario's dataset from its package location or files, partitions it, and writes the
// shards and "<out_dir>/clusters.csv" (node,cluster). Errors name the file or key at fault.
Result<Partition> PreparePartition(const Scenario& scenario, const std::string& out_dir);

// The full test set of each of the scenario's clusters, in cluster order
// (training::BuildClusterTestSets over the scenario's datasets). Errors name the file or key at
// fault.
Result<std::vector<training::Dataset>> ClusterTestSets(const Scenario& scenario);

// The endpoint that names simulated node `index`: tcp://127.0.0.1:20000 and on, 40,000 ports per
// loopback host, then 127.0.0.2 and on, so that every node of a mesh has its own (the ports of
// one host end at 65535). The same for a node in every run: endpoints travel in messages, whose
// sizes the byte counters report.
std::string SimulatedEndpoint(size_t index);

// Runs `method` with one node per partition entry through `runner` (method_runner.h): makes the
// node configs (with scenario.security their keys), the method folder and one folder per node,
// has the runner run them until every node finished, died, or `interrupt` became true (then
// every node is stopped cleanly), and reads what they wrote. The run's wall_seconds are real
// seconds; simulated_seconds come from a simulation's report. Progress goes to stdout: one
// updating line on a terminal, a plain line every few seconds otherwise. A dead node is reported
// with its last log lines; the others go on. Nodes whose folder holds a checkpoint of the run
// (a resumed run) continue after its round. With [data] test = "cluster", a method that was not
// interrupted then has every node's best model tested on its cluster's full test set
// (tools/launch/full_test.h).
Result<MethodRun> RunMethod(const Scenario& scenario, const MethodSpec& method,
                            const Partition& partition, const RunOptions& options,
                            MethodRunner& runner, const std::atomic<bool>& interrupt);

}  // namespace meshlearn::launch
