#pragma once
// The report of a run folder, written at the end of a launch and rebuilt from any run folder by
// `meshlearn-launch report RUN_DIR`: per method heatmap.csv/.png, the EMD matrix and the
// clustering policies' ARI where the nodes wrote them; for the run curves.png, summary.csv and
// the table.

#include <string>
#include <vector>

#include "base/status.h"
#include "tools/launch/experiment.h"
#include "tools/launch/report.h"

namespace meshlearn::launch {

// Writes the files of one method's report into `run.dir` (heatmap.csv and .png; emd_matrix.csv
// and .png when its nodes ran the EMD exchange) and returns its summary, with the ARI of the EMD
// exchange or of a clustering policy when there is one. Titles start with `title`. A file that
// cannot be written is reported on stderr.
MethodSummary ReportMethod(const MethodRun& run, const Partition& partition,
                           const std::string& title);

// Writes the run's files into `out_dir` (curves.png, summary.csv) from `runs` and their
// `summaries`, and prints the table and the paths of what was written.
void ReportRun(const std::string& out_dir, const std::string& title, const Partition& partition,
               const std::vector<MethodRun>& runs, const std::vector<MethodSummary>& summaries);

// ReportMethod for every run, then ReportRun; returns the summaries.
std::vector<MethodSummary> WriteRunReport(const std::string& out_dir, const std::string& title,
                                          const Partition& partition,
                                          const std::vector<MethodRun>& runs);

// A run folder read back from disk.
struct RunFolder {
  std::string title;               // the folder's name
  Partition partition;             // ids and clusters (shard paths are not read)
  std::vector<MethodRun> runs;     // one per method folder, nodes' rounds read
  std::vector<std::string> notes;  // what could not be known and what was assumed instead
};

// Reads the run folder `dir`, whoever made it: a launch (local or engine) or nodes started by
// hand.
// - Methods are the subfolders holding node-<id>/ folders, or `dir` itself when it holds them.
//   Their names and order come from summary.csv when there is one (a method's folder is its
//   name's Slug()), else the folder names in alphabetical order.
// - Nodes and clusters come from clusters.csv (node,cluster); without it, every node found is in
//   cluster 0 (a note says so).
// - A node is failed when its exit_status (engine runs) is not 0, or it left no rounds.csv; an
//   attacker when its node.toml has an [attack] kind. Peak memory is not known (0).
// - A method's wall time is its slowest node's last wall_s.
// kNotFound when `dir` does not exist or holds no node folder; kMalformed naming the file and
// line for a clusters.csv line that does not parse.
Result<RunFolder> ReadRunFolder(const std::string& dir);

}  // namespace meshlearn::launch
