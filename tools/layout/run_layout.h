#pragma once
// The run folder's layout: the only place that names the folders and files of a run folder (the
// launcher's --out) and of the folders the launcher's commands write. Every tool that writes or
// reads one (the launcher, meshlearn-heatmap, plot/, the dashboard) takes the names from here;
// reading a run folder back is tools/scenario/run_reader.h. Depends on base only, so that the small
// tools link it without the launcher.
//
//   <out>/manifest.toml launch.lock summary.csv curves.png clusters.csv simulation.csv
//         dashboard.csv
//   <out>/shards/client-<i>.shard
//   <out>/<method slug>/heatmap.csv heatmap.png emd_matrix.csv emd_matrix.png full_test.csv
//         keys/allowed_keys keys/node-<id>.key keys/node-<id>.pub  (security = true)
//         snapshot/snapshot.txt ...                                  (--simulate --snapshot-every)
//         (engine runs: hostfile node-template.toml rank.sh job.sh engine.log slurm_job_id)
//   <out>/<method slug>/node-<id>/node.toml node.log rounds.csv comm.csv scores.csv cluster.csv
//         emd.csv signature.csv checkpoint.bin node.lock exit_status
//
//   <bytes-to-target --out>/bytes_to_target.csv bytes_to_target_mean.csv
//
//   <fuzz --out>/manifest.toml fuzz.csv
//   <fuzz --out>/seed-<n>/scenario.toml fuzz-report.toml run.log, and the seed's run folder
//   <fuzz --out>/seed-<n>-again/ ... seed-<n>-reduced/ ...      (same files)
//
// Each file may also appear as "<name>.tmp" while it is written (base/atomic_file.h).

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "node/host/node_files.h"

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
// A simulated method's snapshots (sim/simulation.h, "Snapshots"), in its method folder; the
// simulator names the files inside (sim/snapshot.h).
inline constexpr const char kSnapshotFolder[] = "snapshot";
// Files of a method folder.
inline constexpr const char kHeatmapCsvFile[] = "heatmap.csv";
// A simulated method of a heterogeneous mesh: each node's compute factor and access link.
inline constexpr const char kNetworkFile[] = "network.csv";
inline constexpr const char kHeatmapPngFile[] = "heatmap.png";
inline constexpr const char kEmdMatrixCsvFile[] = "emd_matrix.csv";
inline constexpr const char kEmdMatrixPngFile[] = "emd_matrix.png";
// [data] test = "cluster": every node's best model on its cluster's full test set.
inline constexpr const char kFullTestFile[] = "full_test.csv";
inline constexpr const char kKeysFolder[] = "keys";
// The allowlist of a secure method's nodes, in its keys folder (beside node-<id>.key and .pub).
inline constexpr const char kAllowedKeysFile[] = "allowed_keys";
// Files of an engine run's method folder (tools/launch/engine_run.h).
inline constexpr const char kHostfileFile[] = "hostfile";
inline constexpr const char kNodeTemplateFile[] = "node-template.toml";
inline constexpr const char kRankScriptFile[] = "rank.sh";
inline constexpr const char kJobScriptFile[] = "job.sh";
inline constexpr const char kEngineLogFile[] = "engine.log";
inline constexpr const char kSlurmJobIdFile[] = "slurm_job_id";
// Files of a node folder: the launcher writes the node's config there, an engine's rank script
// its exit status; the node's own files are named by node/host/node_files.h.
inline constexpr const char kNodeConfigFile[] = "node.toml";
inline constexpr const char kExitStatusFile[] = "exit_status";  // engine runs: the rank's exit
using node::kCheckpointFile;
using node::kClusterFile;
using node::kCommFile;
using node::kEmdFile;
using node::kNodeLockFile;
using node::kNodeLogFile;
using node::kRoundsFile;
using node::kScoresFile;
using node::kSignatureFile;
// The files `meshlearn-launch bytes-to-target` writes into its --out folder
// (tools/report/bytes_to_target.h).
inline constexpr const char kBytesToTargetFile[] = "bytes_to_target.csv";
inline constexpr const char kBytesToTargetMeanFile[] = "bytes_to_target_mean.csv";
// What `meshlearn-launch fuzz` writes into its --out folder (tools/fuzz/fuzz.h): kManifestFile,
// the summary, and in each seed's folder the drawn scenario, the child's report and its log.
inline constexpr const char kFuzzSummaryFile[] = "fuzz.csv";
inline constexpr const char kFuzzScenarioFile[] = "scenario.toml";
inline constexpr const char kFuzzReportFile[] = "fuzz-report.toml";
inline constexpr const char kFuzzRunLogFile[] = "run.log";

// Which run of a fuzz seed a seed folder holds.
enum class FuzzSeedRun {
  kFirst,    // "seed-<n>": the seed's run
  kAgain,    // "seed-<n>-again": the determinism check's second run
  kReduced,  // "seed-<n>-reduced": a reduction's runs of a failed seed
};

// "<out_dir>/seed-<seed>[-again|-reduced]": the folder of `run` of fuzz seed `seed`.
std::string FuzzSeedDir(const std::string& out_dir, uint64_t seed,
                        FuzzSeedRun run = FuzzSeedRun::kFirst);

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

// A file-name-safe form of a method name ("cos_weights FedSim" -> "cos_weights-fedsim"): the
// name of its folder.
std::string Slug(const std::string& name);

}  // namespace meshlearn::launch
