#pragma once
// MethodRunner: where and how the nodes of one method run. One implementation per file:
//   "processes"   runner_processes.cc   one meshlearn-node process per node (the default)
//   "in-process"  runner_in_process.cc  the nodes as threads of this process, same sockets
//   "simulated"   runner_simulated.cc   the nodes' logic on a virtual clock (sim/simulation.h)
//   "slurm"       runner_engine.cc      srun or sbatch starts the ranks (engine_run.h)
//   "mpirun"      runner_engine.cc      Open MPI's mpirun starts the ranks
// Runners() maps these names to factories; it is the only place runner names meet runner types,
// and both --engine and the mode flags (--in-process, --simulate) pick from it. What differs
// between runners past that choice is asked of the runner (Mode(), World(), ReportRun(), ...),
// never read from its name.
//
// Rules:
// - RunMethod (experiment.h) does what every runner needs: the node configs, the method folder
//   and one folder per node, then the timing and reading rounds.csv afterwards. A runner only runs
//   the nodes and records how they ended: NodeRun::failure, MethodRun::interrupted, peak memory,
//   and for a simulation its report. Rationale: a new backend (PBS, Ray) adds one runner and one
//   table entry, and touches neither main, the run, the report nor the folder rules.
// - A runner returns once every node ended or `interrupt` became true and every node stopped;
//   an error means the method could not run at all (a node failing is not an error).

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "node/config/config.h"
#include "tools/scenario/run_types.h"
#include "tools/scenario/scenario.h"

namespace meshlearn::launch {

enum class Engine;  // engine_run.h

// The world a runner's nodes run in (node/host/world.h).
enum class NodeWorld {
  kReal,       // processes or threads of this or other machines, on real sockets and ports
  kSimulated,  // the simulator (sim/simulation.h): a virtual clock and the scenario's [network]
               // model; nothing is bound, and the endpoints only name the nodes
};

// What a runner is asked to run: one method's nodes.
struct MethodJob {
  const Scenario& scenario;
  const std::vector<node::NodeConfig>& configs;  // one per node, in partition order
  const RunOptions& options;
  const std::atomic<bool>& interrupt;
};

// Runs the nodes of one method (see the rules above).
class MethodRunner {
 public:
  virtual ~MethodRunner() = default;
  // The mode as the launch's first line and the manifest name it ("process", "simulated",
  // "slurm engine", ...).
  virtual std::string Mode() const = 0;
  // True when the nodes run on this machine, where the live dashboard can watch them.
  virtual bool OnThisMachine() const { return true; }
  // The world the nodes run in: what decides whether the scenario's [network] model and its
  // exchange schedule apply, and whether the nodes get free ports or fixed endpoints (a
  // simulation's must not change between runs: they travel in messages, whose sizes count).
  virtual NodeWorld World() const { return NodeWorld::kReal; }
  // True when the dashboard reads each node's /status on its own HTTP port.
  virtual bool ServesStatusOverHttp() const { return false; }
  // True when the nodes are threads of this one process, whose peak memory a method reports
  // (MethodRun::process_peak_pss_mib) rather than each node's.
  virtual bool NodesShareOneProcess() const { return false; }
  // Writes what this runner adds to the run's outputs in `out_dir` once every method of the run
  // ended (`runs`, those read back from an earlier launch included), and prints where; nothing by
  // default. Errors are printed: the run's other outputs stand.
  virtual void ReportRun(const std::string& /*out_dir*/,
                         const std::vector<MethodRun>& /*runs*/) const {}
  // Runs `job`'s nodes; `run.dir` and `run.nodes` (their folders made) are set by the caller.
  virtual Status Run(const MethodJob& job, MethodRun& run) = 0;
};

// Makes a runner.
using RunnerFactory = std::function<std::unique_ptr<MethodRunner>()>;

// Runner names and their factories, in documentation order.
class RunnerTable {
 public:
  // Adds runner `name`, or replaces the factory of the runner of that name.
  void Add(const std::string& name, RunnerFactory factory);
  // A new runner `name`; kInvalidArgument naming the runners there are otherwise.
  Result<std::unique_ptr<MethodRunner>> Make(const std::string& name) const;
  // True when runner `name` is in the table.
  bool Has(const std::string& name) const;
  // The names, in the order they were added.
  std::vector<std::string> Names() const;

 private:
  std::vector<std::pair<std::string, RunnerFactory>> entries_;
};

// The table of every runner: the built-in ones above; a test may Add its own.
RunnerTable& Runners();

// The name of the default runner, "processes".
inline constexpr const char kProcessesRunner[] = "processes";
inline constexpr const char kInProcessRunner[] = "in-process";
inline constexpr const char kSimulatedRunner[] = "simulated";

// The built-in runners' factories (one per file; see the list above).
std::unique_ptr<MethodRunner> MakeProcessesRunner();
std::unique_ptr<MethodRunner> MakeInProcessRunner();
std::unique_ptr<MethodRunner> MakeSimulatedRunner();
std::unique_ptr<MethodRunner> MakeEngineRunner(Engine engine);

}  // namespace meshlearn::launch
