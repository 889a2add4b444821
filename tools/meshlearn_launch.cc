// meshlearn-launch: runs a scenario with N local nodes and prints the paper-style table.
//
//   meshlearn-launch SCENARIO.toml [--out DIR] [--resume | --force] [--allow-dirty]
//                    [--in-process | --simulate [--snapshot-every N]]
//                    [--nodes N] [--seed S] [--set key=value ...] [--methods a,b]
//                    [--known-peers K] [--log-level LEVEL] [--partition-only] [--dashboard PORT]
//                    [--engine local|slurm|mpirun [--slurm-batch] [--hostfile FILE]
//                    [--bind ADDRESS] [-- ENGINE ARGS...]]
//   meshlearn-launch report RUN_DIR [--allow-dirty]
//   meshlearn-launch --version   (the version and the build: commit, clean or dirty)
//   meshlearn-launch bytes-to-target RUN_DIR... --baseline RUN_DIR... --out DIR [--points P]
//                    (tools/report/bytes_to_target.h)
//   meshlearn-launch serve RUN_DIR --dashboard PORT   (tools/dashboard/live_dashboard.h)
//   meshlearn-launch fuzz --seeds N [--from S] [--out DIR] [--replay S] [--canary] ...
//                    (tools/fuzz/fuzz.h)
//   meshlearn-launch check-plugin FILE [--floats N] [--trials T] [--seed S]
//                    (tools/check_plugin_command.h)
//
// The command line becomes a launch::RunRequest, which launch::Run::Execute runs
// (tools/launch/run.h). The run folder (--out) is never reused silently: see
// tools/scenario/run_folder.h; a build whose tree was not clean writes into a checkout's results/
// only with --allow-dirty (tools/layout/kept_results.h). Exit codes: 0 all methods ran; 2 bad
// scenario, command line or run folder; 3 results were written but some nodes failed (they are
// listed); 130 interrupted (results so far are written).
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "node/config/logging.h"
#include "process/build_identity.h"
#include "process/process_limits.h"
#include "tools/check_plugin_command.h"
#include "tools/cli/cli_exit.h"
#include "tools/dashboard/live_dashboard.h"
#include "tools/fuzz/fuzz.h"
#include "tools/launch/method_runner.h"
#include "tools/launch/run.h"
#include "tools/report/bytes_to_target.h"
#include "tools/report/run_report.h"
#include "training/cpu_pinning.h"

namespace {

using namespace meshlearn;

std::atomic<bool> g_interrupt{false};

void OnSignal(int) { g_interrupt = true; }

// meshlearn-node next to this executable.
std::string NodeBinary() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "meshlearn-node";
  return (self.parent_path() / "meshlearn-node").string();
}

// --dashboard: the live page of the run, started once the partition is known.
launch::WatcherFactory LiveDashboardOn(std::string bind, uint16_t port) {
  return
      [bind, port](
          const std::string& scenario, const std::string& mode, const std::string& out_dir,
          const launch::Partition& partition,
          const std::vector<std::string>& methods) -> Result<std::unique_ptr<launch::RunWatcher>> {
        auto board = dashboard::LiveDashboard::Start(
            bind, port, dashboard::RunInfo{scenario, mode, out_dir, partition, methods});
        if (!board.ok()) return board.status();
        std::printf("dashboard: http://%s:%u/\n", bind.c_str(), (*board)->port());
        std::fflush(stdout);
        return std::unique_ptr<launch::RunWatcher>(std::move(*board));
      };
}

// What meshlearn-launch was asked to do: the run request, and the choices it is completed from
// once the command line is parsed (CompleteRequest).
struct LaunchCommandLine {
  launch::RunRequest request;
  bool in_process = false, simulate = false, resume = false, force = false;
  uint64_t seed = 0;
  CLI::Option* seed_option = nullptr;      // true once --seed was given
  CLI::Option* in_process_flag = nullptr;  // what --engine excludes
  std::string engine = "local";
  std::optional<uint16_t> dashboard_port;
  std::string dashboard_bind = "127.0.0.1";
};

// Declares the scenario, the run folder and how the nodes run on `app`, bound to `line` (which
// must outlive the parse).
void DeclareRunOptions(CLI::App& app, LaunchCommandLine& line) {
  launch::RunOptions& options = line.request.options;
  app.add_option("scenario", line.request.scenario_path,
                 "scenario file (TOML; see configs/README.md)")
      ->required();
  app.add_option("--out", options.out_dir, "output folder (default runs/<scenario name>)");
  auto* resume_flag = app.add_flag(
      "--resume", line.resume,
      "continue the run in --out (same scenario and seed, checked against its manifest.toml)");
  app.add_flag("--force", line.force,
               "replace the run in --out: delete the files meshlearn wrote there, keep the others")
      ->excludes(resume_flag);
  tools::AddAllowDirtyFlag(app, line.request.allow_dirty);
  line.in_process_flag =
      app.add_flag("--in-process", line.in_process,
                   "run the nodes as threads of this process (same transport, loopback TCP)");
  app.add_flag("--simulate", line.simulate,
               "simulate the mesh in this process: the nodes' real logic on a virtual clock and "
               "the scenario's [network] model; deterministic")
      ->excludes(line.in_process_flag);
  app.add_option("--threads", options.threads,
                 "--simulate: learner worker threads (default: the core count)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--snapshot-every", options.snapshot_every,
                 "--simulate: snapshot every N rounds, so that an interrupted run (Ctrl-C, "
                 "SIGTERM) stops at its next snapshot and --resume continues from it (default 0: "
                 "never; a run with snapshots restarts its nodes at each, see docs/experiments.md)")
      ->check(CLI::Range(0, 1000000));
}

// Declares what changes the scenario and what the run shows or writes on `app`, bound to `line`.
void DeclareScenarioOptions(CLI::App& app, LaunchCommandLine& line) {
  launch::RunRequest& request = line.request;
  app.add_option("--nodes", request.overrides.nodes, "number of nodes (cluster sizes scale)")
      ->check(CLI::Range(2, 100000));
  line.seed_option = app.add_option("--seed", line.seed, "seed of the partition and the models");
  app.add_option("--set", request.overrides.set,
                 "override a scenario key: key.path=value (repeatable)");
  app.add_option("--log-level", request.options.log_level, "node log level (default info)");
  app.add_option("--known-peers", request.options.known_peers,
                 "each node starts knowing only K peers and learns the rest by gossip "
                 "(default: all; use e.g. 10 for 100 nodes --in-process)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--methods", request.only_methods,
                 "run only these methods (names, comma-separated)")
      ->delimiter(',');
  app.add_option("--dashboard", line.dashboard_port,
                 "serve a live page of the run on this port (0: any free port)");
  app.add_option("--dashboard-bind", line.dashboard_bind,
                 "address of the page (default 127.0.0.1; see docs/dashboard.md on SSH)");
  app.add_flag("--partition-only", request.partition_only,
               "write the shards (<out>/shards/client-<i>.shard) and clusters.csv, then exit");
}

// Declares where the nodes run (--engine and its options) on `app`, bound to `line`; after
// DeclareRunOptions.
void DeclareEngineOptions(CLI::App& app, LaunchCommandLine& line) {
  launch::RunOptions& options = line.request.options;
  std::vector<std::string> engines = launch::Runners().Names();
  engines.insert(engines.begin(), "local");
  auto* engine_option =
      app.add_option("--engine", line.engine,
                     "where the nodes run: local (default), slurm (srun) or mpirun; any runner "
                     "name of tools/launch/method_runner.h")
          ->check(CLI::IsMember(engines, CLI::ignore_case))
          ->excludes(line.in_process_flag);
  app.add_flag("--slurm-batch", options.slurm_batch,
               "--engine slurm: submit each method with sbatch --wait instead of running srun")
      ->needs(engine_option);
  app.add_option("--hostfile", options.hostfile,
                 "--engine mpirun: the hostfile (default: localhost with one slot per node)")
      ->needs(engine_option);
  app.add_option("--bind", options.bind,
                 "--engine: the address the nodes listen on (default 0.0.0.0: every interface)")
      ->needs(engine_option);
  app.add_option("engine_args", options.engine_args,
                 "after --: options passed to srun, sbatch or mpirun (e.g. -- -N 3 --overcommit)");
}

// Completes line.request from the parsed command line `argv`: the runner, the seed, what to do
// with an existing run, the dashboard. Returns nullopt to go on, else the exit code after
// printing why the options do not go together (tools::kExitBadInput).
std::optional<int> CompleteRequest(LaunchCommandLine& line, int argc, char** argv) {
  launch::RunRequest& request = line.request;
  launch::RunOptions& options = request.options;
  options.runner = line.engine != "local" ? line.engine
                   : line.simulate        ? launch::kSimulatedRunner
                   : line.in_process      ? launch::kInProcessRunner
                                          : launch::kProcessesRunner;
  if (line.engine != "local" && line.simulate) {
    std::fprintf(stderr, "meshlearn-launch: --engine %s and --simulate exclude each other\n",
                 line.engine.c_str());
    return tools::kExitBadInput;
  }
  auto runner = launch::Runners().Make(options.runner);
  if (runner.ok() && !(*runner)->OnThisMachine() && line.dashboard_port) {
    std::fprintf(stderr,
                 "meshlearn-launch: --dashboard shows local runs only; for an engine run, "
                 "watch the run folder with 'meshlearn-launch serve RUN_DIR --dashboard PORT' "
                 "when it is done\n");
    return tools::kExitBadInput;
  }
  if (line.engine == "local" && !options.engine_args.empty()) {
    std::fprintf(stderr,
                 "meshlearn-launch: options after -- go to the engine; they need --engine slurm "
                 "or mpirun\n");
    return tools::kExitBadInput;
  }
  if (options.snapshot_every > 0 && !line.simulate) {
    std::fprintf(stderr, "meshlearn-launch: --snapshot-every needs --simulate\n");
    return tools::kExitBadInput;
  }
  options.resume = line.resume;
  if (*line.seed_option) request.overrides.seed = line.seed;
  if (auto level = ParseLogLevel(options.log_level); !level.ok()) {
    std::fprintf(stderr, "meshlearn-launch: --log-level: %s\n", level.status().message().c_str());
    return tools::kExitBadInput;
  }
  request.existing = line.resume  ? launch::ExistingRun::kResume
                     : line.force ? launch::ExistingRun::kReplace
                                  : launch::ExistingRun::kRefuse;
  request.command.assign(argv, argv + argc);
  if (line.dashboard_port)
    request.watch = LiveDashboardOn(line.dashboard_bind, *line.dashboard_port);
  options.node_binary = NodeBinary();
  return std::nullopt;
}

// Runs `request` until it is done or SIGINT or SIGTERM interrupts it; returns the exit code.
int RunScenario(const launch::RunRequest& request) {
  if (auto files = node::RaiseOpenFileLimit(); !files.ok()) {
    std::fprintf(stderr, "warning: %s\n", files.status().ToString().c_str());
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  return launch::Run::Execute(request, g_interrupt);
}

}  // namespace

int main(int argc, char** argv) {
  if (!training::PinCpuKernelsOrExplain("meshlearn-launch")) return tools::kExitBadInput;
  if (argc >= 2 && std::string(argv[1]) == "report")
    return launch::ReportCommand(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "bytes-to-target")
    return launch::BytesToTargetCommand(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "fuzz") return launch::FuzzCommand(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "check-plugin") {
    return tools::CheckPluginCommand(argc - 1, argv + 1);
  }
  if (argc >= 2 && std::string(argv[1]) == "serve") {
    return dashboard::ServeCommand(argc - 1, argv + 1);
  }
  CLI::App app{"meshlearn-launch: run a scenario with N local meshlearn nodes"};
  app.set_version_flag("--version", node::VersionText("meshlearn-launch"));
  LaunchCommandLine line;
  DeclareRunOptions(app, line);
  DeclareScenarioOptions(app, line);
  DeclareEngineOptions(app, line);
  if (std::optional<int> exit = tools::ParseCommandLine(app, argc, argv)) return *exit;
  if (std::optional<int> exit = CompleteRequest(line, argc, argv)) return *exit;
  return RunScenario(line.request);
}
