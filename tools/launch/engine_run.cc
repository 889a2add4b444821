#include "tools/launch/engine_run.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/atomic_file.h"
#include "base/number_text.h"
#include "node/config/engine_identity.h"
#include "node/config/node_template.h"
#include "process/free_port.h"
#include "tools/launch/node_processes.h"
#include "tools/layout/run_layout.h"
#include "training/shard_file.h"

namespace meshlearn::launch {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How long ranks get to stop cleanly after an interrupt before the engine is killed.
constexpr double kStopGraceSeconds = 60;

// The rank script: the node's output to node-<rank>/node.log, signals passed on, and its exit
// status to node-<rank>/exit_status.
std::string RankScript(const std::string& node_binary, const std::string& template_path,
                       const std::string& dir) {
  return "#!/bin/sh\n"
         "# One rank of a meshlearn engine run (written by meshlearn-launch).\n"
         "rank=\"${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-}}\"\n"
         "if [ -z \"$rank\" ]; then\n"
         "  echo \"rank.sh: neither OMPI_COMM_WORLD_RANK nor SLURM_PROCID is set\" >&2\n"
         "  exit 2\n"
         "fi\n"
         "dir='" +
         NodeDir(dir, "") +
         "'\"$rank\"\n"
         "mkdir -p \"$dir\"\n"
         "if [ -n \"${SLURM_JOB_ID:-}\" ]; then echo \"$SLURM_JOB_ID\" >'" +
         PathIn(dir, kSlurmJobIdFile) +
         "'; fi\n"
         "'" +
         node_binary + "' --config '" + template_path + "' >>\"$dir/" + kNodeLogFile +
         "\" 2>&1 &\n"
         "node=$!\n"
         "# A wait cut short by a signal returns 128 + n; wait again for the node's own status.\n"
         "trap 'signalled=1; kill -TERM $node 2>/dev/null' TERM INT\n"
         "while :; do\n"
         "  signalled=0\n"
         "  wait $node\n"
         "  status=$?\n"
         "  [ $signalled = 1 ] || break\n"
         "done\n"
         "echo $status >\"$dir/" +
         kExitStatusFile +
         "\"\n"
         "exit $status\n";
}

Status WriteExecutable(const std::string& path, const std::string& text) {
  MESHLEARN_RETURN_IF_ERROR(WriteFileAtomically(path, text));
  if (::chmod(path.c_str(), 0755) != 0)
    return Status::IoError("cannot make " + path + " executable");
  return Status::Ok();
}

// The exit status a rank script wrote, or nullopt when there is none (yet).
std::optional<int> ExitStatus(const NodeRun& n) {
  Result<std::string> text = ReadWholeFile(PathIn(n.dir, kExitStatusFile));
  if (!text.ok()) return std::nullopt;
  return NumberFromText<int>(*text, {.padded = true});
}

std::string DescribeRankExit(int status) {
  if (status > 128) return "killed by signal " + std::to_string(status - 128);
  return "exited with code " + std::to_string(status);
}

// The Slurm job id: the one a rank wrote to <dir>/slurm_job_id, else the one sbatch --parsable
// printed ("1234" or "1234;cluster" on a line of its own); "" when neither is there yet.
std::string SlurmJobId(const std::string& dir, const std::string& engine_log) {
  std::ifstream from_rank(PathIn(dir, kSlurmJobIdFile));
  std::string id;
  if (from_rank >> id) return id;
  std::ifstream in(engine_log);
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find(';'));
    if (!line.empty() && std::all_of(line.begin(), line.end(), ::isdigit)) return line;
  }
  return "";
}

// Runs `argv` to completion with its output appended to `log` (for scancel).
void RunQuietly(const std::vector<std::string>& argv, const std::string& log) {
  auto pid = SpawnLogged(argv, log);
  if (!pid.ok()) return;
  int status = 0;
  ::waitpid(*pid, &status, 0);
}

// Writes the rank template of `config` (every rank's node config, node/config/node_template.h)
// to `template_path`, and the rank script that runs a node with it to `script`.
Status WriteRankFiles(Engine engine, const node::NodeConfig& config, const RunOptions& options,
                      const std::string& dir, const std::string& shards, uint16_t port,
                      const std::string& hostfile, const std::string& template_path,
                      const std::string& script) {
  node::NodeConfig t = config;
  t.id = "{rank}";
  t.listen = "tcp://" + options.bind + ":{port}";
  t.output_dir = NodeDir(dir, "{rank}");
  t.data.shard = training::ShardPath(shards, "{rank}");
  t.peers.clear();
  t.advertise.clear();
  t.mesh_size = 0;
  node::EngineSettings settings;
  settings.kind = engine == Engine::kSlurm ? node::EngineKind::kSlurm : node::EngineKind::kMpi;
  settings.port = port;
  if (engine == Engine::kMpirun) settings.hostfile = hostfile;
  MESHLEARN_RETURN_IF_ERROR(
      WriteFileAtomically(template_path, node::RenderNodeTemplate(t, settings)));
  return WriteExecutable(script, RankScript(options.node_binary, template_path, dir));
}

// The command that starts `n` ranks of `script` on `engine` (with a batch job script in `dir` for
// sbatch), its output going to `engine_log`.
Result<std::vector<std::string>> EngineArgv(Engine engine, const RunOptions& options, int n,
                                            const std::string& hostfile, const std::string& dir,
                                            const std::string& script,
                                            const std::string& engine_log,
                                            const std::string& method) {
  std::vector<std::string> argv;
  const std::string ntasks = "--ntasks=" + std::to_string(n);
  if (engine == Engine::kSlurm && options.slurm_batch) {
    MESHLEARN_RETURN_IF_ERROR(
        WriteExecutable(PathIn(dir, kJobScriptFile),
                        "#!/bin/sh\n# The batch job of a meshlearn method (meshlearn-launch).\n"
                        "exec srun --kill-on-bad-exit=0 '" +
                            script + "'\n"));
    argv = {"sbatch",
            "--wait",
            "--parsable",
            ntasks,
            "--output=" + engine_log,
            "--open-mode=append",
            "--job-name=meshlearn-" + Slug(method)};
  } else if (engine == Engine::kSlurm) {
    argv = {"srun", ntasks, "--kill-on-bad-exit=0", "--job-name=meshlearn-" + Slug(method)};
  } else {
    // Rationale: mpirun follows its SIGTERM with SIGKILL after 1 s by default; the ranks need
    // longer to stop cleanly and record their exit status.
    argv = {"mpirun", "-np",   std::to_string(n),           "--hostfile",
            hostfile, "--mca", "odls_base_sigkill_timeout", "30"};
    if (::geteuid() == 0) argv.push_back("--allow-run-as-root");
  }
  argv.insert(argv.end(), options.engine_args.begin(), options.engine_args.end());
  argv.push_back(options.slurm_batch && engine == Engine::kSlurm ? PathIn(dir, kJobScriptFile)
                                                                 : script);
  return argv;
}

// Watches the engine process `pid` and the ranks of `run` until the engine exits, reporting each
// rank that dies and stopping the ranks cleanly (then by force) on `interrupt`. Returns the
// engine's wait status.
int WatchRanks(Engine engine, pid_t pid, const std::string& dir, const std::string& engine_log,
               int64_t rounds, const std::atomic<bool>& interrupt, MethodRun& run) {
  ProgressLine progress(run.method.name, rounds);
  auto start = SteadyClock::now();
  double stop_requested_at = -1;
  std::vector<bool> reported(run.nodes.size(), false);
  int engine_status = 0;
  while (true) {
    double elapsed = SecondsSince(start);
    if (interrupt && stop_requested_at < 0) {
      stop_requested_at = elapsed;
      run.interrupted = true;
      // Rationale: srun answers SIGTERM by killing the step; scancel --signal=TERM lets the
      // ranks stop cleanly. mpirun passes SIGTERM on to the ranks.
      std::string job = engine == Engine::kSlurm ? SlurmJobId(dir, engine_log) : std::string();
      if (!job.empty()) {
        RunQuietly({"scancel", "--signal=TERM", job}, engine_log);
      } else {
        ::kill(pid, SIGTERM);
      }
    }
    if (stop_requested_at >= 0 && elapsed - stop_requested_at > kStopGraceSeconds) {
      std::string job = engine == Engine::kSlurm ? SlurmJobId(dir, engine_log) : std::string();
      if (!job.empty()) RunQuietly({"scancel", job}, engine_log);
      ::kill(-pid, SIGKILL);
    }
    int dead = 0;
    for (size_t i = 0; i < run.nodes.size(); ++i) {
      NodeRun& node = run.nodes[i];
      std::optional<int> status = ExitStatus(node);
      if (status && *status != 0 && !reported[i] && !(run.interrupted && *status < 128)) {
        reported[i] = true;
        node.failure = DescribeRankExit(*status) +
                       "; last log lines:" + Tail(PathIn(node.dir, kNodeLogFile), 8);
        progress.Finish();
        std::printf("node %s died: %s\n", node.id.c_str(), node.failure->c_str());
      }
      dead += node.failure.has_value();
    }
    ShowProgressFromFiles(progress, run.nodes, dead, elapsed);
    if (::waitpid(pid, &engine_status, WNOHANG) == pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  progress.Finish();
  return engine_status;
}

}  // namespace

std::string_view EngineName(Engine engine) { return engine == Engine::kSlurm ? "slurm" : "mpirun"; }

Status RunOnEngine(Engine engine, const Scenario& scenario, const node::NodeConfig& config,
                   const RunOptions& options, const std::atomic<bool>& interrupt, MethodRun& run) {
  const int n = static_cast<int>(run.nodes.size());
  if (scenario.security) {
    return Status::InvalidArgument(
        "--engine " + std::string(EngineName(engine)) +
        ": scenarios with security = true run in local mode only (each node needs its own key "
        "files and its peers' keys, which one template does not express yet)");
  }
  if (std::any_of(run.nodes.begin(), run.nodes.end(),
                  [](const NodeRun& r) { return r.attacker; })) {
    return Status::InvalidArgument("--engine " + std::string(EngineName(engine)) +
                                   ": methods with [attack] run in local mode only (attackers and "
                                   "honest nodes need different configs)");
  }
  const std::string dir = std::filesystem::absolute(run.dir).lexically_normal().string();
  const std::string shards =
      std::filesystem::absolute(PathIn(options.out_dir, kShardsFolder)).lexically_normal().string();
  auto port = node::FindFreeTcpPortRange(options.bind, n);
  if (!port.ok()) return port.status().WithContext("--bind " + options.bind);

  std::string hostfile = options.hostfile;
  if (engine == Engine::kMpirun && hostfile.empty()) {
    hostfile = PathIn(dir, kHostfileFile);
    MESHLEARN_RETURN_IF_ERROR(
        WriteFileAtomically(hostfile, "localhost slots=" + std::to_string(n) + "\n"));
  }
  if (!hostfile.empty()) hostfile = std::filesystem::absolute(hostfile).string();

  const std::string template_path = PathIn(dir, kNodeTemplateFile);
  const std::string script = PathIn(dir, kRankScriptFile);
  const std::string engine_log = PathIn(dir, kEngineLogFile);
  MESHLEARN_RETURN_IF_ERROR(
      WriteRankFiles(engine, config, options, dir, shards, *port, hostfile, template_path, script));
  auto command = EngineArgv(engine, options, n, hostfile, dir, script, engine_log, run.method.name);
  if (!command.ok()) return command.status();
  const std::vector<std::string>& argv = *command;
  {
    std::ofstream log(engine_log, std::ios::app);
    log << "# meshlearn-launch:";
    for (const std::string& a : argv) log << ' ' << a;
    log << '\n';
  }
  std::printf("meshlearn-launch: %s: starting %d ranks:", run.method.name.c_str(), n);
  for (const std::string& a : argv) std::printf(" %s", a.c_str());
  std::printf("\n");
  std::fflush(stdout);
  auto pid = SpawnLogged(argv, engine_log, /*own_group=*/true);
  if (!pid.ok()) return pid.status();

  const int engine_status =
      WatchRanks(engine, *pid, dir, engine_log, config.training.rounds, interrupt, run);

  int ran = 0;
  for (NodeRun& node : run.nodes) {
    std::optional<int> status = ExitStatus(node);
    ran += status.has_value() || std::filesystem::exists(PathIn(node.dir, kNodeLogFile));
    if (status || node.failure) continue;
    node.failure = "no exit status: the engine never started this rank or killed it (" +
                   std::string(argv[0]) + " " + DescribeExit(engine_status) + "); last lines of " +
                   engine_log + ":" + Tail(engine_log, 8);
    if (!run.interrupted)
      std::printf("node %s failed: %s\n", node.id.c_str(), node.failure->c_str());
  }
  if (ran == 0 && !run.interrupted) {
    return Status::Unavailable(argv[0] + " ran no rank (" + DescribeExit(engine_status) +
                               "); last lines of " + engine_log + ":" + Tail(engine_log, 12));
  }
  return Status::Ok();
}

}  // namespace meshlearn::launch
