// meshlearn-launch: runs a scenario with N local nodes and prints the paper-style table.
//
//   meshlearn-launch SCENARIO.toml [--out DIR] [--in-process] [--nodes N] [--seed S]
//                    [--set key=value ...] [--methods a,b] [--known-peers K] [--log-level LEVEL]
//                    [--partition-only]
//
// Exit codes: 0 all methods ran; 2 bad scenario or command line; 3 results were written but
// some nodes failed (they are listed); 130 interrupted (results so far are written).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include <CLI/CLI.hpp>

#include "node/logging.h"
#include "node/process_limits.h"
#include "tools/launch/experiment.h"
#include "tools/launch/report.h"
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

}  // namespace

int main(int argc, char** argv) {
  using namespace meshlearn;
  CLI::App app{"meshlearn-launch: run a scenario with N local meshlearn nodes"};
  std::string scenario_path;
  launch::ScenarioOverrides overrides;
  launch::RunOptions options;
  uint64_t seed = 0;
  bool partition_only = false;
  std::vector<std::string> only_methods;
  app.add_option("scenario", scenario_path, "scenario file (TOML; see configs/README.md)")
      ->required();
  app.add_option("--out", options.out_dir, "output folder (default runs/<scenario name>)");
  auto* in_process = app.add_flag(
      "--in-process", options.in_process,
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
  app.add_flag("--partition-only", partition_only,
               "write the shards (<out>/shards/client-<i>.shard) and clusters.csv, then exit");
  CLI11_PARSE(app, argc, argv);
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
  if (!only_methods.empty()) {
    std::vector<launch::MethodSpec> kept;
    for (const std::string& name : only_methods) {
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
    scenario->methods = kept;
  }
  if (options.out_dir.empty()) options.out_dir = "runs/" + launch::Slug(scenario->name);
  options.node_binary = NodeBinary();
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);

  if (scenario->has_network && !options.simulate) {
    std::printf("meshlearn-launch: note: the scenario's [network] model applies to --simulate "
                "only; real runs use the real network\n");
  }
  std::printf("meshlearn-launch: %s — %d nodes, %zu method(s), %s mode, %s, output in %s\n",
              scenario->name.c_str(), scenario->data.partition.num_clients,
              scenario->methods.size(),
              options.simulate ? "simulated" : options.in_process ? "in-process" : "process",
              scenario->security ? "CURVE-encrypted (keys in <method>/keys)" : "unencrypted",
              options.out_dir.c_str());
  std::fflush(stdout);
  auto partition = launch::PreparePartition(*scenario, options.out_dir);
  if (!partition.ok()) {
    std::fprintf(stderr, "meshlearn-launch: %s\n", partition.status().ToString().c_str());
    return 2;
  }

  if (partition_only) {
    std::printf("wrote %zu shards to %s/shards and %s/clusters.csv\n", partition->ids.size(),
                options.out_dir.c_str(), options.out_dir.c_str());
    return 0;
  }

  std::vector<launch::MethodRun> runs;
  std::vector<launch::MethodSummary> summaries;
  int failed_nodes = 0;
  for (const launch::MethodSpec& method : scenario->methods) {
    if (g_interrupt) break;
    auto run = launch::RunMethod(*scenario, method, *partition, options, g_interrupt);
    if (!run.ok()) {
      std::fprintf(stderr, "meshlearn-launch: method '%s': %s\n", method.name.c_str(),
                   run.status().ToString().c_str());
      return 2;
    }
    Status heatmap = launch::WriteHeatmap(*run, *partition, scenario->name + " — " + method.name);
    if (!heatmap.ok()) {
      std::fprintf(stderr, "meshlearn-launch: heatmap of '%s': %s\n", method.name.c_str(),
                   heatmap.ToString().c_str());
    }
    summaries.push_back(launch::Summarize(*run, *partition));
    auto exchange = launch::WriteEmdMatrix(*run, *partition);
    if (!exchange.ok()) {
      std::fprintf(stderr, "meshlearn-launch: EMD matrix of '%s': %s\n", method.name.c_str(),
                   exchange.status().ToString().c_str());
    } else if (*exchange) {
      summaries.back().ari = (*exchange)->ari;
      summaries.back().exchange_seconds = (*exchange)->seconds;
      summaries.back().exchange_rounds = (*exchange)->rounds;
    }
    auto policy = launch::ReadPolicyClusters(*run, *partition);
    if (!policy.ok()) {
      std::fprintf(stderr, "meshlearn-launch: clusters of '%s': %s\n", method.name.c_str(),
                   policy.status().ToString().c_str());
    } else if (*policy) {
      summaries.back().ari = (*policy)->ari;
      summaries.back().cluster_round = (*policy)->mean_round;
    }
    failed_nodes += summaries.back().nodes_failed;
    runs.push_back(std::move(*run));
  }
  if (runs.empty()) return 130;

  Status curves =
      launch::WriteCurves(options.out_dir + "/curves.png", runs, *partition, scenario->name);
  if (!curves.ok())
    std::fprintf(stderr, "meshlearn-launch: curves: %s\n", curves.ToString().c_str());
  Status summary =
      launch::WriteSummaryCsv(options.out_dir + "/summary.csv", summaries, partition->num_clusters);
  if (!summary.ok()) std::fprintf(stderr, "meshlearn-launch: %s\n", summary.ToString().c_str());

  std::printf("\n%s\n", launch::FormatTable(summaries, partition->num_clusters).c_str());
  std::printf("summary:  %s/summary.csv\ncurves:   %s/curves.png\n", options.out_dir.c_str(),
              options.out_dir.c_str());
  for (const launch::MethodRun& run : runs) {
    std::printf("heatmap:  %s/heatmap.csv  %s/heatmap.png  (%s)\n", run.dir.c_str(),
                run.dir.c_str(), run.method.name.c_str());
    if (std::filesystem::exists(run.dir + "/emd_matrix.csv")) {
      std::printf("emd:      %s/emd_matrix.csv  %s/emd_matrix.png\n", run.dir.c_str(),
                  run.dir.c_str());
    }
  }
  if (options.simulate) {
    Status written = launch::WriteSimulationCsv(options.out_dir + "/simulation.csv", runs);
    if (!written.ok()) std::fprintf(stderr, "meshlearn-launch: %s\n", written.ToString().c_str());
    for (const launch::MethodRun& run : runs) {
      std::printf("%s\n", launch::DescribeSimulation(run).c_str());
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
  if (g_interrupt) return 130;
  return failed_nodes ? 3 : 0;
}
