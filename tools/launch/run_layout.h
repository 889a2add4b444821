#pragma once
// The run folder's layout: the only place that names the folders and files of a run folder (the
// launcher's --out), and the only reader of a run folder (`report`, `serve`, the dashboard and
// --resume all read through ReadRunFolder / ReadMethodRun).
//
//   <out>/manifest.toml launch.lock summary.csv curves.png clusters.csv simulation.csv
//         dashboard.csv
//   <out>/shards/client-<i>.shard
//   <out>/<method slug>/heatmap.csv heatmap.png emd_matrix.csv emd_matrix.png keys/
//         (engine runs: hostfile node-template.toml rank.sh job.sh engine.log slurm_job_id)
//   <out>/<method slug>/node-<id>/node.toml node.log rounds.csv comm.csv scores.csv cluster.csv
//         emd.csv signature.csv checkpoint.bin node.lock exit_status
//
// Each file may also appear as "<name>.tmp" while it is written (base/atomic_file.h).

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "tools/launch/run_types.h"

namespace meshlearn::launch {

// Files at the top of a run folder.
inline constexpr const char kManifestFile[] = "manifest.toml";
inline constexpr const char kLaunchLockFile[] = "launch.lock";
inline constexpr const char kSummaryFile[] = "summary.csv";
inline constexpr const char kCurvesFile[] = "curves.png";
inline constexpr const char kClustersFile[] = "clusters.csv";
inline constexpr const char kSimulationFile[] = "simulation.csv";
inline constexpr const char kDashboardCostsFile[] = "dashboard.csv";
inline constexpr const char kShardsFolder[] = "shards";
// A simulated method's snapshots (sim/simulation.h, "Snapshots"), in its method folder.
inline constexpr const char kSnapshotFolder[] = "snapshot";
// Files of a method folder.
inline constexpr const char kHeatmapCsvFile[] = "heatmap.csv";
inline constexpr const char kHeatmapPngFile[] = "heatmap.png";
inline constexpr const char kEmdMatrixCsvFile[] = "emd_matrix.csv";
inline constexpr const char kEmdMatrixPngFile[] = "emd_matrix.png";
inline constexpr const char kKeysFolder[] = "keys";
// Files of an engine run's method folder (tools/launch/engine_run.h).
inline constexpr const char kHostfileFile[] = "hostfile";
inline constexpr const char kNodeTemplateFile[] = "node-template.toml";
inline constexpr const char kRankScriptFile[] = "rank.sh";
inline constexpr const char kJobScriptFile[] = "job.sh";
inline constexpr const char kEngineLogFile[] = "engine.log";
inline constexpr const char kSlurmJobIdFile[] = "slurm_job_id";
// Files of a node folder (the node writes them; node/host/outputs.h).
inline constexpr const char kNodeConfigFile[] = "node.toml";
inline constexpr const char kNodeLogFile[] = "node.log";
inline constexpr const char kRoundsFile[] = "rounds.csv";
inline constexpr const char kEmdFile[] = "emd.csv";
inline constexpr const char kClusterFile[] = "cluster.csv";
inline constexpr const char kScoresFile[] = "scores.csv";
inline constexpr const char kCommFile[] = "comm.csv";
inline constexpr const char kSignatureFile[] = "signature.csv";
inline constexpr const char kCheckpointFile[] = "checkpoint.bin";
inline constexpr const char kExitStatusFile[] = "exit_status";  // engine runs: the rank's exit
inline constexpr const char kNodeLockFile[] = "node.lock";      // held by the running node

// "<folder>/<name>": a file or folder inside `folder`.
std::string PathIn(const std::string& folder, const char* name);

// "<out_dir>/<Slug(method)>": the folder of method `method` in run folder `out_dir`.
std::string MethodDir(const std::string& out_dir, const std::string& method);

// "node-<id>": the name of node `id`'s folder; "<method_dir>/node-<id>" for NodeDir.
std::string NodeFolderName(const std::string& id);
std::string NodeDir(const std::string& method_dir, const std::string& id);

// The id of a node folder named `name` ("node-<id>", id not empty); nullopt for other names.
std::optional<std::string> NodeIdOfFolder(const std::string& name);
// True when `name` is a node folder the launcher makes: "node-<client number>".
bool IsLauncherNodeFolder(const std::string& name);

// True when `relative` (a path inside a run folder, '/'-separated) names a file meshlearn
// writes there: a top file, a shard, or in one of `method_folders` a method, key or node file
// (the list above, ".tmp" included). Used by --force, which deletes only those.
bool WrittenByMeshlearn(const std::string& relative, const std::set<std::string>& method_folders);

// The folders of `relative` that meshlearn makes: shards, the method folders, their keys and
// node folders.
bool FolderOfMeshlearn(const std::string& relative, const std::set<std::string>& method_folders);

// The method `name` whose folder is `dir`, read back from disk: every node of `partition` with its
// rounds.csv, whether it attacked, its compression and the run's last round (node.toml), and a
// failure when its exit_status (engine runs) is not 0 or it left no rounds.csv. The wall time is
// the slowest node's last wall_s; peak memory is not known (0).
MethodRun ReadMethodRun(const std::string& dir, const std::string& name,
                        const Partition& partition);

// A run folder read back from disk.
struct RunFolder {
  std::string title;               // the scenario's name (manifest.toml), else the folder's
  Partition partition;             // ids and clusters (shard paths are not read)
  std::vector<MethodRun> runs;     // one per method folder, nodes' rounds read
  std::vector<std::string> notes;  // what could not be known and what was assumed instead
  std::optional<uint64_t> seed;    // the run's seed (manifest.toml); nullopt without a manifest
};

// Reads the run folder `dir`, whoever made it: a launch (local or engine) or nodes started by
// hand.
// - Methods are the subfolders holding node-<id>/ folders, or `dir` itself when it holds them.
//   Their names and order come from summary.csv when there is one (a method's folder is its
//   name's Slug()), else from manifest.toml's methods, else the folder names in natural order.
// - Nodes and clusters come from clusters.csv (node,cluster; ids in natural order); without it,
//   every node found is in cluster 0 (a note says so).
// - A node is failed when its exit_status (engine runs) is not 0, or it left no rounds.csv; an
//   attacker when its node.toml has an [attack] kind; its compression is its node.toml's. Peak
//   memory is not known (0).
// - A method's real and simulated seconds are those its manifest.toml records for it once it
//   ended; without that record, its real seconds are its slowest node's last wall_s. A method
//   the manifest records as interrupted is read as interrupted.
// kNotFound when `dir` does not exist or holds no node folder; kMalformed naming the file, line
// and column for a clusters.csv or summary.csv that does not parse.
Result<RunFolder> ReadRunFolder(const std::string& dir);

// Reads the run folders `dirs` (ReadRunFolder) as one: the methods of each, in order. They must
// be runs of one scenario, each method run once: kInvalidArgument naming both folders when two
// hold different nodes or clusters, or the same method. The title is the first folder's; a note
// names any folder whose scenario name differs.
Result<RunFolder> ReadRunFolders(const std::vector<std::string>& dirs);

}  // namespace meshlearn::launch
