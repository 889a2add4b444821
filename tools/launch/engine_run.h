#pragma once
// Running one method's nodes through an engine (Slurm or Open MPI) instead of as local
// processes: one config template for every rank (node/config/node_template.h), a small rank script,
// and the engine's own launcher (srun, sbatch or mpirun), watched through the run folder.
//
// Specification.
// - The method folder gets:
//   - node-template.toml: the method's node config with id "{rank}", listen
//     "tcp://<bind>:{port}", output folder "<method dir>/node-{rank}", shard
//     "<out>/shards/client-{rank}.shard", no [[peers]], and an [engine] section (kind, the first
//     of N free ports on the bind address, the hostfile for mpirun);
//   - rank.sh: runs meshlearn-node on the template with its output in node-<rank>/node.log, passes
//     SIGTERM and SIGINT on to it, and writes its exit status to node-<rank>/exit_status (128 + n
//     for a node killed by signal n); under Slurm also the job id to slurm_job_id;
//   - engine.log: what srun, sbatch or mpirun printed; for sbatch also job.sh, the batch script.
//   Rationale: every file a rank needs is in the run folder, which a multi-host run keeps on a
//   shared filesystem; the template and the script can be rerun by hand.
// - Commands (the user's engine arguments go before the script):
//   - slurm: srun --ntasks=N --kill-on-bad-exit=0 ARGS rank.sh;
//   - slurm with batch: sbatch --wait --parsable --ntasks=N --output=engine.log ARGS job.sh, where
//     job.sh runs srun --kill-on-bad-exit=0 rank.sh;
//   - mpirun: mpirun -np N --hostfile H --mca odls_base_sigkill_timeout 10 [--allow-run-as-root
//     when root] ARGS rank.sh; without a
//     hostfile given, H = <method dir>/hostfile with "localhost slots=N".
// - Progress is read from the nodes' rounds.csv; a rank whose exit_status is not 0 is reported
//   at once with its last log lines, and the others go on (as in local mode).
// - Interrupt: a Slurm job gets scancel --signal=TERM (srun itself would kill the step on
//   SIGTERM), mpirun gets SIGTERM (it passes it on); the ranks stop cleanly. What is still
//   running a minute later is killed (scancel, SIGKILL to the engine's process group).
// - When the engine ends, a rank with no exit_status never ran or was killed with its script; it
//   is reported with the engine's last lines. An engine that ran no rank at all (a bad option, no
//   such partition) is an error carrying its output.
// - Scenarios with [security] or [attack] are refused: their node configs differ per node (keys,
//   attackers), which one template cannot express yet.

#include <atomic>
#include <string>
#include <string_view>

#include "base/status.h"
#include "node/config/config.h"
#include "tools/scenario/run_types.h"
#include "tools/scenario/scenario.h"

namespace meshlearn::launch {

// The engines that start the ranks (runner_engine.cc makes the runners "slurm" and "mpirun").
enum class Engine {
  kSlurm,   // srun (or sbatch) starts the ranks
  kMpirun,  // Open MPI's mpirun starts the ranks
};

// "slurm" or "mpirun": the engine's runner name, for messages.
std::string_view EngineName(Engine engine);

// Runs `run`'s nodes through `engine` (see the specification). `config` is the method's node
// config for the first node; its id, ports, paths and peers are replaced by the template's.
// `run.dir` and `run.nodes` (with their folders) are set up by the caller.
Status RunOnEngine(Engine engine, const Scenario& scenario, const node::NodeConfig& config,
                   const RunOptions& options, const std::atomic<bool>& interrupt, MethodRun& run);

}  // namespace meshlearn::launch
