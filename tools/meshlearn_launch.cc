// meshlearn-launch: runs a scenario with N local nodes and prints the paper-style table.
//
//   meshlearn-launch SCENARIO.toml [--out DIR] [--resume | --force] [--in-process] [--nodes N]
//                    [--seed S] [--set key=value ...] [--methods a,b] [--known-peers K]
//                    [--log-level LEVEL] [--partition-only] [--dashboard PORT]
//                    [--engine local|slurm|mpirun [--slurm-batch] [--hostfile FILE]
//                    [--bind ADDRESS] [-- ENGINE ARGS...]]
//   meshlearn-launch report RUN_DIR
//   meshlearn-launch serve RUN_DIR --dashboard PORT   (tools/dashboard/live_dashboard.h)
//
// The run folder (--out) is never reused silently: see tools/launch/run_folder.h.
// Exit codes: 0 all methods ran; 2 bad scenario, command line or run folder; 3 results were
// written but some nodes failed (they are listed); 130 interrupted (results so far are written).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "node/build_info.h"
#include "node/logging.h"
#include "node/process_limits.h"
#include "tools/cli_exit.h"
#include "tools/dashboard/live_dashboard.h"
#include "tools/launch/experiment.h"
#include "tools/launch/manifest.h"
#include "tools/launch/report.h"
#include "tools/launch/run_folder.h"
#include "tools/launch/run_layout.h"
#include "tools/launch/run_report.h"
#include "tools/launch/scenario.h"

namespace {

std::atomic<bool> g_interrupt{false};

void OnSignal(int) { g_interrupt = true; }

// meshlearn-node next to this executable.
std::string NodeBinary() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "meshlearn-node";
  return (self.parent_path() / "meshlearn-node").string();
}

// The manifest of a new run of `scenario` by this launch.
meshlearn::launch::Manifest NewManifest(const meshlearn::launch::Scenario& scenario, int argc,
                                        char** argv, const std::string& mode) {
  using namespace meshlearn;
  launch::Manifest m;
  m.started = launch::NowUtc();
  m.scenario_name = scenario.name;
  m.scenario_file = scenario.file;
  m.seed = scenario.seed;
  m.nodes = scenario.data.partition.num_clients;
  m.scenario_text = scenario.text;
  m.resolved = scenario.resolved;
  launch::LaunchRecord launch;
  launch.command.assign(argv, argv + argc);
  std::error_code ec;
  launch.working_dir = std::filesystem::current_path(ec).string();
  launch.mode = mode;
  launch.version = node::BuildVersion();
  launch.libraries = node::LibraryVersions();
  launch.host = launch::HostFacts();
  launch.started = m.started;
  m.launches.push_back(std::move(launch));
  return m;
}

// meshlearn-launch report RUN_DIR: the table, heatmaps, curves and summary of any run folder.
int Report(int argc, char** argv) {
  using namespace meshlearn;
  CLI::App app{
      "meshlearn-launch report: rebuild the table, heatmaps, curves and summary.csv of a "
      "run folder"};
  std::string dir;
  app.add_option("run_dir", dir, "the run folder (a launcher's --out, or node folders)")
      ->required();
  if (std::optional<int> exit = tools::ParseCommandLine(app, argc, argv)) return *exit;
  auto folder = launch::ReadRunFolder(dir);
  if (!folder.ok()) {
    std::fprintf(stderr, "meshlearn-launch report: %s\n", folder.status().ToString().c_str());
    return 2;
  }
  for (const std::string& note : folder->notes) std::printf("note: %s\n", note.c_str());
  auto summaries = launch::WriteRunReport(dir, folder->title, folder->partition, folder->runs);
  int failed = 0;
  for (const launch::MethodSummary& s : summaries) failed += s.nodes_failed;
  return failed ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace meshlearn;
  if (argc >= 2 && std::string(argv[1]) == "report") return Report(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "serve") {
    return dashboard::ServeCommand(argc - 1, argv + 1);
  }
  CLI::App app{"meshlearn-launch: run a scenario with N local meshlearn nodes"};
  std::string scenario_path;
  launch::ScenarioOverrides overrides;
  launch::RunOptions options;
  uint64_t seed = 0;
  bool partition_only = false;
  bool resume = false, force = false;
  std::vector<std::string> only_methods;
  app.add_option("scenario", scenario_path, "scenario file (TOML; see configs/README.md)")
      ->required();
  app.add_option("--out", options.out_dir, "output folder (default runs/<scenario name>)");
  auto* resume_flag = app.add_flag(
      "--resume", resume,
      "continue the run in --out (same scenario and seed, checked against its manifest.toml)");
  app.add_flag("--force", force,
               "replace the run in --out: delete the files meshlearn wrote there, keep the others")
      ->excludes(resume_flag);
  auto* in_process =
      app.add_flag("--in-process", options.in_process,
                   "run the nodes as threads of this process (same transport, loopback TCP)");
  app.add_flag("--simulate", options.simulate,
               "simulate the mesh in this process: the nodes' real logic on a virtual clock and "
               "the scenario's [network] model; deterministic")
      ->excludes(in_process);
  app.add_option("--threads", options.threads,
                 "--simulate: learner worker threads (default: the core count)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--nodes", overrides.nodes, "number of nodes (cluster sizes scale)")
      ->check(CLI::Range(2, 100000));
  auto* seed_option = app.add_option("--seed", seed, "seed of the partition and the models");
  app.add_option("--set", overrides.set, "override a scenario key: key.path=value (repeatable)");
  app.add_option("--log-level", options.log_level, "node log level (default info)");
  app.add_option("--known-peers", options.known_peers,
                 "each node starts knowing only K peers and learns the rest by gossip "
                 "(default: all; use e.g. 10 for 100 nodes --in-process)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--methods", only_methods, "run only these methods (names, comma-separated)")
      ->delimiter(',');
  std::optional<uint16_t> dashboard_port;
  std::string dashboard_bind = "127.0.0.1";
  app.add_option("--dashboard", dashboard_port,
                 "serve a live page of the run on this port (0: any free port)");
  app.add_option("--dashboard-bind", dashboard_bind,
                 "address of the page (default 127.0.0.1; see the README on SSH)");
  app.add_flag("--partition-only", partition_only,
               "write the shards (<out>/shards/client-<i>.shard) and clusters.csv, then exit");
  std::map<std::string, launch::Engine> engines;
  for (const auto& e : launch::EngineNames()) engines[std::string(e.name)] = e.value;
  auto* engine = app.add_option("--engine", options.engine,
                                "where the nodes run: local (default), slurm (srun) or mpirun")
                     ->transform(CLI::CheckedTransformer(engines, CLI::ignore_case))
                     ->excludes(in_process);
  app.add_flag("--slurm-batch", options.slurm_batch,
               "--engine slurm: submit each method with sbatch --wait instead of running srun")
      ->needs(engine);
  app.add_option("--hostfile", options.hostfile,
                 "--engine mpirun: the hostfile (default: localhost with one slot per node)")
      ->needs(engine);
  app.add_option("--bind", options.bind,
                 "--engine: the address the nodes listen on (default 0.0.0.0: every interface)")
      ->needs(engine);
  app.add_option("engine_args", options.engine_args,
                 "after --: options passed to srun, sbatch or mpirun (e.g. -- -N 3 --overcommit)");
  if (std::optional<int> exit = tools::ParseCommandLine(app, argc, argv)) return *exit;
  if (options.engine != launch::Engine::kLocal && options.simulate) {
    std::fprintf(stderr, "meshlearn-launch: --engine %s and --simulate exclude each other\n",
                 std::string(NameOf(launch::EngineNames(), options.engine)).c_str());
    return 2;
  }
  if (options.engine != launch::Engine::kLocal && dashboard_port) {
    std::fprintf(stderr,
                 "meshlearn-launch: --dashboard shows local runs only; for an engine run, "
                 "watch the run folder with 'meshlearn-launch serve RUN_DIR --dashboard PORT' "
                 "when it is done\n");
    return 2;
  }
  if (options.engine == launch::Engine::kLocal && !options.engine_args.empty()) {
    std::fprintf(stderr,
                 "meshlearn-launch: options after -- go to the engine; they need --engine slurm "
                 "or mpirun\n");
    return 2;
  }
  if (*seed_option) overrides.seed = seed;
  if (auto level = ParseLogLevel(options.log_level); !level.ok()) {
    std::fprintf(stderr, "meshlearn-launch: --log-level: %s\n", level.status().message().c_str());
    return 2;
  }

  if (auto files = meshlearn::node::RaiseOpenFileLimit(); !files.ok()) {
    std::fprintf(stderr, "warning: %s\n", files.status().ToString().c_str());
  }
  auto scenario = launch::LoadScenario(scenario_path, overrides);
  if (!scenario.ok()) {
    std::fprintf(stderr, "meshlearn-launch: %s\n", scenario.status().ToString().c_str());
    return 2;
  }
  std::vector<launch::MethodSpec> kept_methods = scenario->methods;  // the methods to run now
  if (!only_methods.empty()) {
    std::vector<launch::MethodSpec> kept;
    for (const std::string& name : only_methods) {
      if (std::count(only_methods.begin(), only_methods.end(), name) > 1) {
        std::fprintf(stderr,
                     "meshlearn-launch: --methods names '%s' more than once; a method runs once "
                     "per run (its folder would be overwritten)\n",
                     name.c_str());
        return 2;
      }
      auto it = std::find_if(scenario->methods.begin(), scenario->methods.end(),
                             [&](const launch::MethodSpec& m) { return m.name == name; });
      if (it == scenario->methods.end()) {
        std::string known;
        for (const auto& m : scenario->methods) known += (known.empty() ? "" : ", ") + m.name;
        std::fprintf(stderr, "meshlearn-launch: --methods: '%s' is not a method of %s (%s)\n",
                     name.c_str(), scenario_path.c_str(), known.c_str());
        return 2;
      }
      kept.push_back(*it);
    }
    kept_methods = kept;
  }
  if (options.out_dir.empty()) options.out_dir = "runs/" + launch::Slug(scenario->name);
  options.node_binary = NodeBinary();
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);

  std::string mode = options.engine != launch::Engine::kLocal
                         ? std::string(NameOf(launch::EngineNames(), options.engine)) + " engine"
                     : options.simulate   ? "simulated"
                     : options.in_process ? "in-process"
                                          : "process";
  std::vector<std::string> notes;
  auto folder = launch::ClaimedRunFolder::Claim(
      options.out_dir,
      resume  ? launch::ExistingRun::kResume
      : force ? launch::ExistingRun::kReplace
              : launch::ExistingRun::kRefuse,
      NewManifest(*scenario, argc, argv, partition_only ? "partition-only" : mode), &notes);
  if (!folder.ok()) {
    std::fprintf(stderr, "meshlearn-launch: %s\n", folder.status().message().c_str());
    return 2;
  }
  for (const std::string& note : notes) std::printf("meshlearn-launch: %s\n", note.c_str());

  if (scenario->has_network && !options.simulate) {
    std::printf(
        "meshlearn-launch: note: the scenario's [network] model applies to --simulate "
        "only; real runs use the real network\n");
  }
  std::printf("meshlearn-launch: %s — %d nodes, %zu method(s), %s mode, %s, output in %s\n",
              scenario->name.c_str(), scenario->data.partition.num_clients, kept_methods.size(),
              mode.c_str(),
              scenario->security ? "CURVE-encrypted (keys in <method>/keys)" : "unencrypted",
              options.out_dir.c_str());
  std::fflush(stdout);
  auto partition = launch::PreparePartition(*scenario, options.out_dir);
  if (!partition.ok()) {
    std::fprintf(stderr, "meshlearn-launch: %s\n", partition.status().ToString().c_str());
    (void)folder->Finish(launch::kFailed);
    return 2;
  }

  if (partition_only) {
    std::printf("wrote %zu shards to %s/shards and %s/clusters.csv\n", partition->ids.size(),
                options.out_dir.c_str(), options.out_dir.c_str());
    Status finished = folder->Finish(launch::kComplete);
    if (!finished.ok()) std::fprintf(stderr, "meshlearn-launch: %s\n", finished.ToString().c_str());
    return 0;
  }

  // The table covers every method of the run folder: those run now and, on --resume, those an
  // earlier launch completed (read back from their folders), in the scenario's order.
  std::vector<launch::MethodSpec> table_methods;
  for (const launch::MethodSpec& method : scenario->methods) {
    bool selected = std::any_of(kept_methods.begin(), kept_methods.end(),
                                [&](const launch::MethodSpec& m) { return m.name == method.name; });
    if (selected || folder->manifest().Method(method.name)) table_methods.push_back(method);
  }

  std::unique_ptr<dashboard::LiveDashboard> board;
  if (dashboard_port) {
    dashboard::RunInfo info{scenario->name,
                            options.simulate     ? "simulated"
                            : options.in_process ? "in-process"
                                                 : "process",
                            options.out_dir,
                            *partition,
                            {}};
    for (const launch::MethodSpec& m : table_methods) info.methods.push_back(m.name);
    auto started = dashboard::LiveDashboard::Start(dashboard_bind, *dashboard_port, info);
    if (!started.ok()) {
      std::fprintf(stderr, "meshlearn-launch: %s\n", started.status().ToString().c_str());
      return 2;
    }
    board = std::move(*started);
    options.observer = board.get();
    std::printf("dashboard: http://%s:%u/\n", dashboard_bind.c_str(), board->port());
    std::fflush(stdout);
  }

  std::vector<launch::MethodRun> runs;
  std::vector<launch::MethodSummary> summaries;
  int failed_nodes = 0;
  bool any_failed = false;
  for (const launch::MethodSpec& method : table_methods) {
    const launch::MethodRecord* previous = folder->manifest().Method(method.name);
    bool selected = std::any_of(kept_methods.begin(), kept_methods.end(),
                                [&](const launch::MethodSpec& m) { return m.name == method.name; });
    Result<launch::MethodRun> run = Status::NotFound("not run");
    if (previous && previous->status == launch::kComplete) {
      std::printf(
          "meshlearn-launch: method '%s' completed in an earlier launch (%s); its results "
          "are read back\n",
          method.name.c_str(), previous->ended.c_str());
      run = launch::ReadMethodRun(launch::MethodDir(options.out_dir, method.name), method.name,
                                  *partition);
      run->method = method;
      run->wall_seconds = previous->wall_seconds;
      run->simulated_seconds = previous->simulated_seconds;
    } else if (!selected || g_interrupt) {
      continue;  // recorded by an earlier launch but not run now
    } else {
      launch::MethodRecord record;
      record.name = method.name;
      record.started = launch::NowUtc();
      record.nodes = static_cast<int>(partition->ids.size());
      Status recorded = folder->Record(record);
      if (!recorded.ok()) {
        std::fprintf(stderr, "meshlearn-launch: %s\n", recorded.ToString().c_str());
        return 2;
      }
      run = launch::RunMethod(*scenario, method, *partition, options, g_interrupt);
    }
    if (!run.ok()) {
      std::fprintf(stderr, "meshlearn-launch: method '%s': %s\n", method.name.c_str(),
                   run.status().ToString().c_str());
      (void)folder->Finish(launch::kFailed);
      return 2;
    }
    summaries.push_back(launch::ReportMethod(*run, *partition, scenario->name));
    failed_nodes += summaries.back().nodes_failed;
    any_failed = any_failed || summaries.back().status == launch::kFailed;
    if (!previous || previous->status != launch::kComplete) {
      launch::MethodRecord record = launch::RecordOf(summaries.back());
      record.started = folder->manifest().Method(method.name)->started;
      record.ended = launch::NowUtc();
      Status recorded = folder->Record(record);
      if (!recorded.ok())
        std::fprintf(stderr, "meshlearn-launch: %s\n", recorded.ToString().c_str());
    }
    if (board) {
      Status shown = board->model().ShowFinished(*run);
      if (!shown.ok())
        std::fprintf(stderr, "meshlearn-launch: dashboard: %s\n", shown.ToString().c_str());
    }
    runs.push_back(std::move(*run));
  }
  const char* status = g_interrupt  ? launch::kInterrupted
                       : any_failed ? launch::kFailed
                                    : launch::kComplete;
  // The manifest's end comes last, once every output of the run is written.
  auto finish = [&] {
    Status finished = folder->Finish(status);
    if (!finished.ok()) std::fprintf(stderr, "meshlearn-launch: %s\n", finished.ToString().c_str());
  };
  if (runs.empty()) {
    finish();
    return 130;
  }

  launch::ReportRun(options.out_dir, scenario->name, *partition, runs, summaries);
  if (options.simulate) {
    Status written =
        launch::WriteSimulationCsv(launch::PathIn(options.out_dir, launch::kSimulationFile), runs);
    if (!written.ok()) std::fprintf(stderr, "meshlearn-launch: %s\n", written.ToString().c_str());
    for (const launch::MethodRun& run : runs) {
      if (run.simulation) std::printf("%s\n", launch::DescribeSimulation(run).c_str());
    }
    std::printf("simulation: %s/simulation.csv\n", options.out_dir.c_str());
  }
  for (const launch::MethodSummary& s : summaries) {
    if (s.peak_pss_mib_max > 0) {
      std::printf("memory (%s): peak PSS %s %.0f MiB\n", s.name.c_str(),
                  options.in_process ? "of the whole process" : "per node: mean",
                  options.in_process ? s.peak_pss_mib_max : s.peak_pss_mib_mean);
      break;
    }
  }
  if (board) {
    std::printf("%s", dashboard::DescribeCosts(board->Costs()).c_str());
    Status written = dashboard::WriteCostsCsv(
        launch::PathIn(options.out_dir, launch::kDashboardCostsFile), board->Costs());
    if (!written.ok()) std::fprintf(stderr, "meshlearn-launch: %s\n", written.ToString().c_str());
  }
  finish();
  std::printf("manifest: %s/manifest.toml (%s)\n", options.out_dir.c_str(), status);
  if (g_interrupt) {
    std::printf("interrupted: the results so far are written; continue the run with --resume\n");
    return 130;
  }
  return failed_nodes ? 3 : 0;
}
