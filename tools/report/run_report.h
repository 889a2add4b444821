#pragma once
// The report of a run folder, written at the end of a launch and rebuilt from any run folder by
// `meshlearn-launch report RUN_DIR` (read by run_reader.h's ReadRunFolder): per method
// heatmap.csv/.png, the EMD matrix and the clustering policies' ARI where the nodes wrote them;
// for the run curves.png, summary.csv and the table.

#include <string>
#include <vector>

#include "base/status.h"
#include "tools/layout/run_layout.h"
#include "tools/report/report.h"
#include "tools/scenario/run_reader.h"
#include "tools/scenario/run_types.h"

namespace meshlearn::launch {

// Writes the files of one method's report into `run.dir` (heatmap.csv and .png; emd_matrix.csv
// and .png when its nodes ran the EMD exchange) and returns its summary, with the ARI of the EMD
// exchange or of a clustering policy when there is one. Titles start with `title`. A file that
// cannot be written is reported on stderr.
MethodSummary ReportMethod(const MethodRun& run, const Partition& partition,
                           const std::string& title);

// Writes the run's files into `out_dir` (curves.png, summary.csv) from `runs` and their
// `summaries`, with each method's time to the run's target (tools/report/bytes_to_target.h), and
// prints the table and the paths of what was written.
void ReportRun(const std::string& out_dir, const std::string& title, const Partition& partition,
               const std::vector<MethodRun>& runs, std::vector<MethodSummary> summaries);

// ReportMethod for every run, then ReportRun; returns the summaries.
std::vector<MethodSummary> WriteRunReport(const std::string& out_dir, const std::string& title,
                                          const Partition& partition,
                                          const std::vector<MethodRun>& runs);

// `meshlearn-launch report RUN_DIR... [--out DIR] [--allow-dirty]`: reads the run folders as one
// (ReadRunFolders), prints their notes and writes the report (WriteRunReport) into --out, by
// default the one run folder. Returns the exit code: kExitOk, kExitNodesFailed when some nodes
// failed, kExitBadInput for a bad command line, folders that cannot be read or combined, or a
// folder in a checkout's results/ and a build that may not write there (kept_results.h).
int ReportCommand(int argc, char** argv);

}  // namespace meshlearn::launch
