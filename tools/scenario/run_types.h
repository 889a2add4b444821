#pragma once
// The types every part of a launch shares: the partition, the options of a run, and what a run
// of one method and of one node left behind. The bottom of tools/launch/: of the launcher's
// headers it includes only the scenario's.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/host/outputs.h"
#include "node/host/status_document.h"
#include "sim/simulation.h"
#include "tools/scenario/scenario.h"

namespace meshlearn::launch {

// The partition every method of a run shares, written under "<out>/shards".
struct Partition {
  std::vector<std::string> ids;          // node ids: the client numbers "0", "1", ...
  std::vector<int> clusters;             // ground-truth cluster of each node
  std::vector<std::string> shard_paths;  // one shard file per node
  int num_clusters = 0;
  bool classification = true;  // accuracy (else MSE) is the test metric
};

struct MethodRun;

// Each node's latest status, in node order; empty where a node does not answer (yet).
using StatusSource = std::function<std::vector<std::optional<node::NodeStatus>>()>;

// Watches each method while its nodes run (the live dashboard, tools/dashboard/).
class RunObserver {
 public:
  virtual ~RunObserver() = default;
  // The nodes of `run` are starting. Until NodesStopped returns, `statuses` may be called from
  // any thread; it reads the nodes' /status (processes), their status snapshots (in-process) or
  // the simulation's latest snapshot (simulate).
  virtual void NodesStarted(const MethodRun& run, StatusSource statuses) = 0;
  // The nodes of `run` are gone; returns once `statuses` is no longer being called.
  virtual void NodesStopped(const MethodRun& run) = 0;
};

// Watches a whole run (the launcher's --dashboard): each method's nodes while they run, each
// method once it ended, and the run's end.
class RunWatcher : public RunObserver {
 public:
  // Method `run` ended, or was read back from an earlier launch: show it from its files.
  virtual void MethodEnded(const MethodRun& run) = 0;
  // The run ended: say what watching cost and write the watcher's own files into `out_dir`.
  virtual void RunEnded(const std::string& out_dir) = 0;
};

// Makes the watcher of a run of scenario `scenario` in `mode` (MethodRunner::Mode()) into
// `out_dir`, over `partition`, showing `methods` in table order.
using WatcherFactory = std::function<Result<std::unique_ptr<RunWatcher>>(
    const std::string& scenario, const std::string& mode, const std::string& out_dir,
    const Partition& partition, const std::vector<std::string>& methods)>;

// How methods are run.
struct RunOptions {
  std::string out_dir;
  // Where and how the nodes run: a name of the runner table (tools/launch/method_runner.h).
  std::string runner = "processes";
  int threads = 0;  // simulated: learner worker threads; 0 = the core count
  // simulated: take a snapshot after every this many rounds (0: never; sim/simulation.h), into
  // "<method dir>/snapshot"; an interrupted method then continues from its last one on resume.
  int64_t snapshot_every = 0;
  bool resume = false;      // the launch continues a run (--resume)
  std::string node_binary;  // the meshlearn-node executable (process mode)
  std::string log_level = "info";
  // Each node's config lists this many peers (the next ones in id order, wrapping around); the
  // rest are learned by gossip. 0: every other node (the default; sync runs are then
  // deterministic). Large in-process runs need a small value: a node greeting all others at
  // once costs about 3 descriptors per pair.
  int known_peers = 0;
  // Engine runs (runners slurm and mpirun, tools/launch/engine_run.h).
  std::vector<std::string> engine_args;  // passed to srun, sbatch or mpirun
  bool slurm_batch = false;              // slurm: submit with sbatch --wait instead of srun
  std::string hostfile;                  // mpirun: the hostfile (default: localhost slots=N)
  std::string bind = "0.0.0.0";          // the address the ranks listen on
  // Sees each method's nodes while they run; with processes, every node then also serves
  // /status on a free loopback port (its config's http_port).
  RunObserver* observer = nullptr;
};

// A node's best-validation model tested on its cluster's full test set ([data] test =
// "cluster"; tools/launch/full_test.h).
struct FullTest {
  int64_t round = -1;   // the round whose model was tested: the node's best validation loss
  int64_t images = 0;   // the size of its cluster's test set
  double loss = 0;      // mean loss over the set (MSE for regression)
  double accuracy = 0;  // in [0, 1]; NaN for regression
};

// What one node left behind.
struct NodeRun {
  std::string id;
  int cluster = 0;
  bool attacker = false;  // it served poisoned models ([attack]); not summarized
  std::string dir;        // its output folder, "<method dir>/node-<id>"
  // Why it died, with its last log lines. Cleared when its process died but it was restarted by
  // hand and finished every round.
  std::optional<std::string> failure;
  std::vector<node::RoundRow> rounds;  // rounds.csv as far as it got
  double peak_pss_mib = 0;             // process mode: peak proportional set size
  uint16_t http_port = 0;              // where it serves /status and its page; 0: nowhere
  // How it sent its model ([compression] of its node.toml); nullopt when that file is missing or
  // does not parse (a run read back from its folder) or was not read (a run under way).
  std::optional<node::CompressionSection> compression;
  // [data] test = "cluster": its best model on its cluster's full test set; nullopt otherwise,
  // or when it left no checkpoint.
  std::optional<FullTest> full_test;
};

// What one method produced.
struct MethodRun {
  MethodSpec method;
  std::string dir;          // "<out>/<method slug>"
  int64_t rounds = 0;       // the nodes' last round (config `rounds`)
  double wall_seconds = 0;  // real seconds the method took, in every mode
  // simulate: the simulated seconds the method took (the virtual clock); nullopt otherwise.
  std::optional<double> simulated_seconds;
  bool interrupted = false;  // Ctrl-C stopped it early
  std::vector<NodeRun> nodes;
  double process_peak_pss_mib = 0;  // in-process mode: the launcher's own peak PSS
  // simulate: the simulation's own figures.
  std::optional<sim::SimulationReport> simulation;
  double simulation_peak_rss_mib = 0;  // the launcher's peak resident memory
};

}  // namespace meshlearn::launch
