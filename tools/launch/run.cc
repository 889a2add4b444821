#include "tools/launch/run.h"

#include <algorithm>
#include <cstdio>
#include <memory>

#include "tools/cli/cli_exit.h"
#include "tools/launch/experiment.h"
#include "tools/launch/method_runner.h"
#include "tools/layout/kept_results.h"
#include "tools/layout/run_layout.h"
#include "tools/report/report.h"
#include "tools/report/run_report.h"
#include "tools/scenario/manifest.h"
#include "tools/scenario/run_reader.h"

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
  LaunchRecord launch = ThisLaunch(request.command, mode);
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

// The methods the run's table covers: those `selected` to run now and, on --resume, those an
// earlier launch recorded in `manifest`, in the scenario's order.
std::vector<MethodSpec> TableMethods(const Scenario& scenario,
                                     const std::vector<MethodSpec>& selected,
                                     const Manifest& manifest) {
  std::vector<MethodSpec> methods;
  for (const MethodSpec& method : scenario.methods) {
    if (Names(selected, method.name) || manifest.Method(method.name)) methods.push_back(method);
  }
  return methods;
}

// One launch under way: what Run::Execute set up (the sequence in run.h), step by step.
class Launch {
 public:
  Launch(const RunRequest& request, const std::atomic<bool>& interrupt)
      : request_(request), interrupt_(interrupt), options_(request.options) {}

  // Steps 1 to 3; nullopt when the methods are to run, else the launch's exit code.
  std::optional<int> Prepare();
  // Step 4 for every method of the table; nullopt when the run's report is to be written, else
  // the launch's exit code.
  std::optional<int> RunMethods();
  // Step 5; the launch's exit code.
  int Finish();

 private:
  // Claims the run folder and prints what the launch will do; false (after printing why) when the
  // folder cannot be claimed.
  bool ClaimFolder();
  // Makes the watcher, when the request asks for one; false (after printing why) on failure.
  bool StartWatcher();
  // `method` as an earlier launch completed it (`previous`), read back from its folder.
  MethodRun ReadBack(const MethodSpec& method, const MethodRecord& previous) const;
  // Summarizes `run` of `method`, records how it ended unless an earlier launch did
  // (`done_before`), shows it to the watcher and keeps it for the run's report.
  void Conclude(const MethodSpec& method, bool done_before, MethodRun run);
  // Prints how much memory the first method that measured it used.
  void PrintMemory() const;

  const RunRequest& request_;
  const std::atomic<bool>& interrupt_;
  RunOptions options_;
  std::optional<Scenario> scenario_;
  std::vector<MethodSpec> selected_;
  std::unique_ptr<MethodRunner> runner_;
  std::string mode_;
  std::optional<ClaimedRunFolder> folder_;
  std::optional<Partition> partition_;
  std::unique_ptr<RunWatcher> watcher_;
  std::vector<MethodRun> runs_;
  std::vector<MethodSummary> summaries_;
  int failed_nodes_ = 0;
  bool any_failed_ = false;
};

std::optional<int> Launch::Prepare() {
  auto scenario = LoadScenario(request_.scenario_path, request_.overrides);
  if (!scenario.ok()) {
    PrintError(scenario.status());
    return tools::kExitBadInput;
  }
  scenario_ = std::move(*scenario);
  for (const std::string& note : scenario_->procedure_notes) {
    std::printf("meshlearn-launch: %s\n", note.c_str());
  }
  auto selected = SelectMethods(*scenario_, request_.only_methods, request_.scenario_path);
  if (!selected.ok()) {
    std::fprintf(stderr, "meshlearn-launch: %s\n", selected.status().message().c_str());
    return tools::kExitBadInput;
  }
  selected_ = std::move(*selected);
  auto runner = Runners().Make(options_.runner);
  if (!runner.ok()) {
    PrintError(runner.status());
    return tools::kExitBadInput;
  }
  runner_ = std::move(*runner);
  if (options_.out_dir.empty()) options_.out_dir = "runs/" + Slug(scenario_->name);
  mode_ = runner_->Mode();
  if (scenario_->schedule != sim::ExchangeSchedule::kSynchronous &&
      runner_->World() != NodeWorld::kSimulated && !request_.partition_only) {
    PrintError(Status::InvalidArgument(
        scenario_->file + ": [network] schedule = \"" +
        std::string(NameOf(sim::ExchangeScheduleNames(), scenario_->schedule)) +
        "\" needs --simulate: only the simulator lets the nodes exchange in turns, and this "
        "launch runs them in " +
        mode_ + " mode (allowed here: schedule = \"synchronous\", " + "the default)"));
    return tools::kExitBadInput;
  }
  if (Status may_write =
          CheckWriteIntoResults("--out", options_.out_dir, node::ThisBuild(), request_.allow_dirty);
      !may_write.ok()) {
    std::fprintf(stderr, "meshlearn-launch: %s\n", may_write.message().c_str());
    return tools::kExitBadInput;
  }
  if (!ClaimFolder()) return tools::kExitBadInput;
  auto partition = PreparePartition(*scenario_, options_.out_dir);
  if (!partition.ok()) {
    PrintError(partition.status());
    (void)folder_->Finish(kFailed);
    return tools::kExitBadInput;
  }
  partition_ = std::move(*partition);
  if (request_.partition_only) {
    std::printf("wrote %zu shards to %s and %s\n", partition_->ids.size(),
                PathIn(options_.out_dir, kShardsFolder).c_str(),
                PathIn(options_.out_dir, kClustersFile).c_str());
    Status finished = folder_->Finish(kComplete);
    if (!finished.ok()) PrintError(finished);
    return tools::kExitOk;
  }
  return std::nullopt;
}

bool Launch::ClaimFolder() {
  std::vector<std::string> notes;
  auto folder = ClaimedRunFolder::Claim(
      options_.out_dir, request_.existing,
      NewManifest(*scenario_, request_, request_.partition_only ? "partition-only" : mode_),
      &notes);
  if (!folder.ok()) {
    std::fprintf(stderr, "meshlearn-launch: %s\n", folder.status().message().c_str());
    return false;
  }
  folder_ = std::move(*folder);
  for (const std::string& note : notes) std::printf("meshlearn-launch: %s\n", note.c_str());
  if (scenario_->has_network && runner_->World() != NodeWorld::kSimulated) {
    std::printf(
        "meshlearn-launch: note: the scenario's [network] model applies to --simulate "
        "only; real runs use the real network\n");
  }
  std::printf("meshlearn-launch: %s — %d nodes, %zu method(s), %s mode, %s, output in %s\n",
              scenario_->name.c_str(), scenario_->data.partition.num_clients, selected_.size(),
              mode_.c_str(),
              scenario_->security ? "CURVE-encrypted (keys in <method>/keys)" : "unencrypted",
              options_.out_dir.c_str());
  std::fflush(stdout);
  return true;
}

bool Launch::StartWatcher() {
  if (!request_.watch) return true;
  std::vector<std::string> names;
  for (const MethodSpec& m : TableMethods(*scenario_, selected_, folder_->manifest())) {
    names.push_back(m.name);
  }
  auto made = request_.watch(scenario_->name, mode_, options_.out_dir, *partition_, names);
  if (!made.ok()) {
    PrintError(made.status());
    return false;
  }
  watcher_ = std::move(*made);
  options_.observer = watcher_.get();
  return true;
}

MethodRun Launch::ReadBack(const MethodSpec& method, const MethodRecord& previous) const {
  std::printf(
      "meshlearn-launch: method '%s' completed in an earlier launch (%s); its results "
      "are read back\n",
      method.name.c_str(), previous.ended.c_str());
  MethodRun run = ReadMethodRun(MethodDir(options_.out_dir, method.name), method.name, *partition_);
  run.method = method;
  run.wall_seconds = previous.wall_seconds;
  run.simulated_seconds = previous.simulated_seconds;
  return run;
}

void Launch::Conclude(const MethodSpec& method, bool done_before, MethodRun run) {
  summaries_.push_back(ReportMethod(run, *partition_, scenario_->name));
  failed_nodes_ += summaries_.back().nodes_failed;
  any_failed_ = any_failed_ || summaries_.back().status == kFailed;
  if (!done_before) {
    MethodRecord record = RecordOf(summaries_.back());
    record.started = folder_->manifest().Method(method.name)->started;
    record.ended = NowUtc();
    Status recorded = folder_->Record(record);
    if (!recorded.ok()) PrintError(recorded);
  }
  if (watcher_) watcher_->MethodEnded(run);
  runs_.push_back(std::move(run));
}

std::optional<int> Launch::RunMethods() {
  if (!StartWatcher()) return tools::kExitBadInput;
  for (const MethodSpec& method : TableMethods(*scenario_, selected_, folder_->manifest())) {
    const MethodRecord* previous = folder_->manifest().Method(method.name);
    const bool done_before = previous && previous->status == kComplete;
    Result<MethodRun> run = Status::NotFound("not run");
    if (done_before) {
      run = ReadBack(method, *previous);
    } else if (!Names(selected_, method.name) || interrupt_) {
      continue;  // recorded by an earlier launch but not run now
    } else {
      MethodRecord record;
      record.name = method.name;
      record.started = NowUtc();
      record.nodes = static_cast<int>(partition_->ids.size());
      Status recorded = folder_->Record(record);
      if (!recorded.ok()) {
        PrintError(recorded);
        return tools::kExitBadInput;
      }
      run = RunMethod(*scenario_, method, *partition_, options_, *runner_, interrupt_);
    }
    if (!run.ok()) {
      std::fprintf(stderr, "meshlearn-launch: method '%s': %s\n", method.name.c_str(),
                   run.status().ToString().c_str());
      (void)folder_->Finish(kFailed);
      return tools::kExitBadInput;
    }
    Conclude(method, done_before, std::move(*run));
  }
  return std::nullopt;
}

void Launch::PrintMemory() const {
  for (const MethodSummary& s : summaries_) {
    if (s.peak_pss_mib_max > 0) {
      const bool one_process = runner_->NodesShareOneProcess();
      std::printf("memory (%s): peak PSS %s %.0f MiB\n", s.name.c_str(),
                  one_process ? "of the whole process" : "per node: mean",
                  one_process ? s.peak_pss_mib_max : s.peak_pss_mib_mean);
      break;
    }
  }
}

int Launch::Finish() {
  const char* status = interrupt_ ? kInterrupted : any_failed_ ? kFailed : kComplete;
  // The manifest's end comes last, once every output of the run is written.
  auto finish = [&] {
    Status finished = folder_->Finish(status);
    if (!finished.ok()) PrintError(finished);
  };
  if (runs_.empty()) {
    finish();
    return tools::kExitInterrupted;
  }
  ReportRun(options_.out_dir, scenario_->name, *partition_, runs_, summaries_);
  runner_->ReportRun(options_.out_dir, runs_);
  PrintMemory();
  if (watcher_) watcher_->RunEnded(options_.out_dir);
  finish();
  std::printf("manifest: %s (%s)\n", PathIn(options_.out_dir, kManifestFile).c_str(), status);
  if (interrupt_) {
    std::printf("interrupted: the results so far are written; continue the run with --resume\n");
    return tools::kExitInterrupted;
  }
  return failed_nodes_ ? tools::kExitNodesFailed : tools::kExitOk;
}

}  // namespace

int Run::Execute(const RunRequest& request, const std::atomic<bool>& interrupt) {
  Launch launch(request, interrupt);
  if (std::optional<int> ended = launch.Prepare()) return *ended;
  if (std::optional<int> ended = launch.RunMethods()) return *ended;
  return launch.Finish();
}

}  // namespace meshlearn::launch
