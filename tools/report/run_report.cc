#include "tools/report/run_report.h"

#include <cstdio>
#include <filesystem>
#include <optional>

#include <CLI/CLI.hpp>

#include "process/build_identity.h"
#include "tools/cli/cli_exit.h"
#include "tools/layout/kept_results.h"
#include "tools/report/bytes_to_target.h"

namespace meshlearn::launch {
namespace {

// Sets every summary's target_acc and time_to_target_s from its run (the run of its name): one
// target for the run (RunTarget), nothing for MSE.
void SetTimesToTarget(const std::vector<MethodRun>& runs, const Partition& partition,
                      std::vector<MethodSummary>& summaries) {
  if (!partition.classification) return;
  std::vector<std::vector<TimedAccuracy>> curves;
  for (const MethodRun& run : runs) curves.push_back(AccuracyOverTime(HonestNodeRounds(run)));
  const std::optional<double> target = RunTarget(curves, kRunTargetPoints);
  if (!target) return;
  for (MethodSummary& summary : summaries) {
    summary.target_acc = target;
    for (size_t r = 0; r < runs.size(); ++r) {
      if (runs[r].method.name == summary.name) {
        summary.time_to_target_s = TimeToTarget(curves[r], *target);
      }
    }
  }
}

}  // namespace

MethodSummary ReportMethod(const MethodRun& run, const Partition& partition,
                           const std::string& title) {
  Status heatmap = WriteHeatmap(run, partition, title + " — " + run.method.name);
  if (!heatmap.ok()) {
    std::fprintf(stderr, "meshlearn-launch: heatmap of '%s': %s\n", run.method.name.c_str(),
                 heatmap.ToString().c_str());
  }
  MethodSummary summary = Summarize(run, partition);
  auto emd = WriteEmdMatrix(run, partition);
  if (!emd.ok()) {
    std::fprintf(stderr, "meshlearn-launch: EMD matrix of '%s': %s\n", run.method.name.c_str(),
                 emd.status().ToString().c_str());
  } else if (*emd) {
    summary.ari = (*emd)->ari;
    summary.exchange_seconds = (*emd)->exchange_seconds;
    summary.exchange_rounds = (*emd)->exchange_rounds;
  }
  auto policy = ReadPolicyClusters(run, partition);
  if (!policy.ok()) {
    std::fprintf(stderr, "meshlearn-launch: clusters of '%s': %s\n", run.method.name.c_str(),
                 policy.status().ToString().c_str());
  } else if (*policy) {
    summary.ari = (*policy)->ari;
    summary.cluster_round = (*policy)->mean_round;
  }
  return summary;
}

void ReportRun(const std::string& out_dir, const std::string& title, const Partition& partition,
               const std::vector<MethodRun>& runs, std::vector<MethodSummary> summaries) {
  SetTimesToTarget(runs, partition, summaries);
  const std::string curves_path = PathIn(out_dir, kCurvesFile);
  const std::string summary_path = PathIn(out_dir, kSummaryFile);
  Status curves = WriteCurves(curves_path, runs, partition, title);
  if (!curves.ok())
    std::fprintf(stderr, "meshlearn-launch: curves: %s\n", curves.ToString().c_str());
  Status summary = WriteSummaryCsv(summary_path, summaries, partition.num_clusters);
  if (!summary.ok()) std::fprintf(stderr, "meshlearn-launch: %s\n", summary.ToString().c_str());

  std::printf("\n%s\n", FormatTable(summaries, partition.num_clusters).c_str());
  std::printf("summary:  %s\ncurves:   %s\n", summary_path.c_str(), curves_path.c_str());
  for (const MethodRun& run : runs) {
    std::printf("heatmap:  %s  %s  (%s)\n", PathIn(run.dir, kHeatmapCsvFile).c_str(),
                PathIn(run.dir, kHeatmapPngFile).c_str(), run.method.name.c_str());
    if (std::filesystem::exists(PathIn(run.dir, kEmdMatrixCsvFile))) {
      std::printf("emd:      %s  %s\n", PathIn(run.dir, kEmdMatrixCsvFile).c_str(),
                  PathIn(run.dir, kEmdMatrixPngFile).c_str());
    }
  }
}

std::vector<MethodSummary> WriteRunReport(const std::string& out_dir, const std::string& title,
                                          const Partition& partition,
                                          const std::vector<MethodRun>& runs) {
  std::vector<MethodSummary> summaries;
  for (const MethodRun& run : runs) summaries.push_back(ReportMethod(run, partition, title));
  ReportRun(out_dir, title, partition, runs, summaries);
  return summaries;
}

int ReportCommand(int argc, char** argv) {
  CLI::App app{
      "meshlearn-launch report: rebuild the table, heatmaps, curves and summary.csv of a "
      "run folder, or of several run folders of one scenario shown together"};
  std::vector<std::string> dirs;
  std::string out;
  app.add_option("run_dirs", dirs,
                 "the run folder (a launcher's --out, or node folders); several: runs of one "
                 "scenario, each with other methods, shown as one table")
      ->required();
  app.add_option("--out", out,
                 "where the table's summary.csv and curves.png go (default: the run folder; "
                 "required with several)");
  bool allow_dirty = false;
  tools::AddAllowDirtyFlag(app, allow_dirty);
  if (std::optional<int> exit = tools::ParseCommandLine(app, argc, argv)) return *exit;
  if (out.empty() && dirs.size() > 1) {
    std::fprintf(stderr,
                 "meshlearn-launch report: %zu run folders need --out DIR for their combined "
                 "summary.csv and curves.png\n",
                 dirs.size());
    return tools::kExitBadInput;
  }
  // The report writes into --out (by default the run folder), and each method's heatmaps into
  // its run folder.
  std::vector<std::pair<std::string, std::string>> written;
  if (!out.empty()) written.emplace_back("--out", out);
  for (const std::string& dir : dirs) written.emplace_back("RUN_DIR", dir);
  if (out.empty()) out = dirs[0];
  for (const auto& [option, path] : written) {
    Status may_write = CheckWriteIntoResults(option, path, node::ThisBuild(), allow_dirty);
    if (!may_write.ok()) {
      std::fprintf(stderr, "meshlearn-launch report: %s\n", may_write.message().c_str());
      return tools::kExitBadInput;
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  auto folder = ReadRunFolders(dirs);
  if (!folder.ok()) {
    std::fprintf(stderr, "meshlearn-launch report: %s\n", folder.status().ToString().c_str());
    return tools::kExitBadInput;
  }
  for (const std::string& note : folder->notes) std::printf("note: %s\n", note.c_str());
  auto summaries = WriteRunReport(out, folder->title, folder->partition, folder->runs);
  int failed = 0;
  for (const MethodSummary& s : summaries) failed += s.nodes_failed;
  return failed ? tools::kExitNodesFailed : tools::kExitOk;
}

}  // namespace meshlearn::launch
