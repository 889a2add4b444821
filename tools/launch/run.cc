#include "tools/launch/run.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "process/build_info.h"
#include "tools/launch/experiment.h"
#include "tools/launch/manifest.h"
#include "tools/launch/method_runner.h"
#include "tools/launch/report.h"
#include "tools/launch/run_layout.h"
#include "tools/launch/run_report.h"

namespace meshlearn::launch {
namespace {

// The manifest of a new run of `scenario` by the launch `request` in `mode`.
Manifest NewManifest(const Scenario& scenario, const RunRequest& request, const std::string& mode) {
  Manifest m;
  m.started = NowUtc();
  m.scenario_name = scenario.name;
  m.scenario_file = scenario.file;
  m.seed = scenario.seed;
  m.nodes = scenario.data.partition.num_clients;
  m.scenario_text = scenario.text;
  m.resolved = scenario.resolved;
  LaunchRecord launch;
  launch.command = request.command;
  std::error_code ec;
  launch.working_dir = std::filesystem::current_path(ec).string();
  launch.mode = mode;
  launch.version = node::BuildVersion();
  launch.libraries = node::LibraryVersions();
  launch.host = HostFacts();
  launch.started = m.started;
  m.launches.push_back(std::move(launch));
  return m;
}

// The methods of `scenario` that `only` names (all without names), in the user's order;
// kInvalidArgument for a name given twice or not a method of the scenario.
Result<std::vector<MethodSpec>> SelectMethods(const Scenario& scenario,
                                              const std::vector<std::string>& only,
                                              const std::string& scenario_path) {
  if (only.empty()) return scenario.methods;
  std::vector<MethodSpec> kept;
  for (const std::string& name : only) {
    if (std::count(only.begin(), only.end(), name) > 1) {
      return Status::InvalidArgument(
          "--methods names '" + name +
          "' more than once; a method runs once per run (its folder would be overwritten)");
    }
    auto it = std::find_if(scenario.methods.begin(), scenario.methods.end(),
                           [&](const MethodSpec& m) { return m.name == name; });
    if (it == scenario.methods.end()) {
      std::string known;
      for (const auto& m : scenario.methods) known += (known.empty() ? "" : ", ") + m.name;
      return Status::InvalidArgument("--methods: '" + name + "' is not a method of " +
                                     scenario_path + " (" + known + ")");
    }
    kept.push_back(*it);
  }
  return kept;
}

bool Names(const std::vector<MethodSpec>& methods, const std::string& name) {
  return std::any_of(methods.begin(), methods.end(),
                     [&](const MethodSpec& m) { return m.name == name; });
}

void PrintError(const Status& status) {
  std::fprintf(stderr, "meshlearn-launch: %s\n", status.ToString().c_str());
}

}  // namespace

int Run::Execute(const RunRequest& request, const std::atomic<bool>& interrupt) {
  auto scenario = LoadScenario(request.scenario_path, request.overrides);
  if (!scenario.ok()) {
    PrintError(scenario.status());
    return kExitBadInput;
  }
  auto selected = SelectMethods(*scenario, request.only_methods, request.scenario_path);
  if (!selected.ok()) {
    std::fprintf(stderr, "meshlearn-launch: %s\n", selected.status().message().c_str());
    return kExitBadInput;
  }
  auto runner = Runners().Make(request.options.runner);
  if (!runner.ok()) {
    PrintError(runner.status());
    return kExitBadInput;
  }
  RunOptions options = request.options;
  if (options.out_dir.empty()) options.out_dir = "runs/" + Slug(scenario->name);
  const std::string mode = (*runner)->Mode();

  std::vector<std::string> notes;
  auto folder = ClaimedRunFolder::Claim(
      options.out_dir, request.existing,
      NewManifest(*scenario, request, request.partition_only ? "partition-only" : mode), &notes);
  if (!folder.ok()) {
    std::fprintf(stderr, "meshlearn-launch: %s\n", folder.status().message().c_str());
    return kExitBadInput;
  }
  for (const std::string& note : notes) std::printf("meshlearn-launch: %s\n", note.c_str());
  if (scenario->has_network && (*runner)->BindsPorts()) {
    std::printf(
        "meshlearn-launch: note: the scenario's [network] model applies to --simulate "
        "only; real runs use the real network\n");
  }
  std::printf("meshlearn-launch: %s — %d nodes, %zu method(s), %s mode, %s, output in %s\n",
              scenario->name.c_str(), scenario->data.partition.num_clients, selected->size(),
              mode.c_str(),
              scenario->security ? "CURVE-encrypted (keys in <method>/keys)" : "unencrypted",
              options.out_dir.c_str());
  std::fflush(stdout);
  auto partition = PreparePartition(*scenario, options.out_dir);
  if (!partition.ok()) {
    PrintError(partition.status());
    (void)folder->Finish(kFailed);
    return kExitBadInput;
  }
  if (request.partition_only) {
    std::printf("wrote %zu shards to %s and %s\n", partition->ids.size(),
                PathIn(options.out_dir, kShardsFolder).c_str(),
                PathIn(options.out_dir, kClustersFile).c_str());
    Status finished = folder->Finish(kComplete);
    if (!finished.ok()) PrintError(finished);
    return kExitOk;
  }

  // The table covers every method of the run folder: those run now and, on --resume, those an
  // earlier launch completed (read back from their folders), in the scenario's order.
  std::vector<MethodSpec> table_methods;
  for (const MethodSpec& method : scenario->methods) {
    if (Names(*selected, method.name) || folder->manifest().Method(method.name)) {
      table_methods.push_back(method);
    }
  }
  std::unique_ptr<RunWatcher> watcher;
  if (request.watch) {
    std::vector<std::string> names;
    for (const MethodSpec& m : table_methods) names.push_back(m.name);
    auto made = request.watch(scenario->name, mode, options.out_dir, *partition, names);
    if (!made.ok()) {
      PrintError(made.status());
      return kExitBadInput;
    }
    watcher = std::move(*made);
    options.observer = watcher.get();
  }

  std::vector<MethodRun> runs;
  std::vector<MethodSummary> summaries;
  int failed_nodes = 0;
  bool any_failed = false;
  for (const MethodSpec& method : table_methods) {
    const MethodRecord* previous = folder->manifest().Method(method.name);
    const bool done_before = previous && previous->status == kComplete;
    Result<MethodRun> run = Status::NotFound("not run");
    if (done_before) {
      std::printf(
          "meshlearn-launch: method '%s' completed in an earlier launch (%s); its results "
          "are read back\n",
          method.name.c_str(), previous->ended.c_str());
      run = ReadMethodRun(MethodDir(options.out_dir, method.name), method.name, *partition);
      run->method = method;
      run->wall_seconds = previous->wall_seconds;
      run->simulated_seconds = previous->simulated_seconds;
    } else if (!Names(*selected, method.name) || interrupt) {
      continue;  // recorded by an earlier launch but not run now
    } else {
      MethodRecord record;
      record.name = method.name;
      record.started = NowUtc();
      record.nodes = static_cast<int>(partition->ids.size());
      Status recorded = folder->Record(record);
      if (!recorded.ok()) {
        PrintError(recorded);
        return kExitBadInput;
      }
      run = RunMethod(*scenario, method, *partition, options, **runner, interrupt);
    }
    if (!run.ok()) {
      std::fprintf(stderr, "meshlearn-launch: method '%s': %s\n", method.name.c_str(),
                   run.status().ToString().c_str());
      (void)folder->Finish(kFailed);
      return kExitBadInput;
    }
    summaries.push_back(ReportMethod(*run, *partition, scenario->name));
    failed_nodes += summaries.back().nodes_failed;
    any_failed = any_failed || summaries.back().status == kFailed;
    if (!done_before) {
      MethodRecord record = RecordOf(summaries.back());
      record.started = folder->manifest().Method(method.name)->started;
      record.ended = NowUtc();
      Status recorded = folder->Record(record);
      if (!recorded.ok()) PrintError(recorded);
    }
    if (watcher) watcher->MethodEnded(*run);
    runs.push_back(std::move(*run));
  }
  const char* status = interrupt ? kInterrupted : any_failed ? kFailed : kComplete;
  // The manifest's end comes last, once every output of the run is written.
  auto finish = [&] {
    Status finished = folder->Finish(status);
    if (!finished.ok()) PrintError(finished);
  };
  if (runs.empty()) {
    finish();
    return kExitInterrupted;
  }

  ReportRun(options.out_dir, scenario->name, *partition, runs, summaries);
  if (options.runner == kSimulatedRunner) {
    const std::string path = PathIn(options.out_dir, kSimulationFile);
    Status written = WriteSimulationCsv(path, runs);
    if (!written.ok()) PrintError(written);
    for (const MethodRun& run : runs) {
      if (run.simulation) std::printf("%s\n", DescribeSimulation(run).c_str());
    }
    std::printf("simulation: %s\n", path.c_str());
  }
  for (const MethodSummary& s : summaries) {
    if (s.peak_pss_mib_max > 0) {
      const bool one_process = options.runner == kInProcessRunner;
      std::printf("memory (%s): peak PSS %s %.0f MiB\n", s.name.c_str(),
                  one_process ? "of the whole process" : "per node: mean",
                  one_process ? s.peak_pss_mib_max : s.peak_pss_mib_mean);
      break;
    }
  }
  if (watcher) watcher->RunEnded(options.out_dir);
  finish();
  std::printf("manifest: %s (%s)\n", PathIn(options.out_dir, kManifestFile).c_str(), status);
  if (interrupt) {
    std::printf("interrupted: the results so far are written; continue the run with --resume\n");
    return kExitInterrupted;
  }
  return failed_nodes ? kExitNodesFailed : kExitOk;
}

}  // namespace meshlearn::launch
