#include "tools/scenario/run_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "base/number_text.h"
#include "node/config/config.h"
#include "tools/layout/run_layout.h"
#include "tools/plot/matrix_csv.h"
#include "tools/scenario/full_test_csv.h"
#include "tools/scenario/manifest.h"
#include "tools/scenario/scenario.h"
#include "tools/scenario/summary_csv.h"

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;

// The ids of the node-<id> folders directly under `dir`.
std::vector<std::string> NodeFolderIds(const fs::path& dir) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::optional<std::string> id = NodeIdOfFolder(entry.path().filename().string());
    if (entry.is_directory() && id) ids.push_back(*id);
  }
  return ids;
}

// The method names of summary.csv's rows, in order; none without the file.
Result<std::vector<std::string>> SummaryMethodNames(const std::string& path) {
  std::vector<std::string> names;
  auto summary = ReadSummaryCsv(path);
  if (summary.status().code() == ErrorCode::kNotFound) return names;
  if (!summary.ok()) return summary.status();
  for (const MethodSummary& s : summary->rows) names.push_back(s.name);
  return names;
}

// The manifest of the run in `dir`, when it has one that parses.
std::optional<Manifest> ReadManifestOf(const fs::path& dir) {
  const std::string path = PathIn(dir.string(), kManifestFile);
  auto text = ReadWholeFile(path);
  if (!text.ok()) return std::nullopt;
  auto parsed = ParseManifest(*text, path);
  if (!parsed.ok()) return std::nullopt;
  return std::move(*parsed);
}

// Reads the nodes and clusters of the run folder `root` into `folder.partition`: from its
// clusters.csv (or, when `root` is itself the run's one method folder, `only_method`, from the
// one above it), else every node of `seen_ids` in cluster 0, with a note in `folder` saying so.
Status ReadPartition(const fs::path& root, bool only_method, const std::set<std::string>& seen_ids,
                     RunFolder& folder) {
  fs::path clusters = root / kClustersFile;
  if (!fs::exists(clusters) && only_method) clusters = root.parent_path() / kClustersFile;
  Partition& p = folder.partition;
  if (fs::exists(clusters)) {
    auto read = plot::ReadClusterCsv(clusters.string());
    if (!read.ok()) return read.status();
    for (const auto& [id, cluster] : *read) p.ids.push_back(id);
    std::sort(p.ids.begin(), p.ids.end(), plot::NaturalLess);
    for (const std::string& id : p.ids) {
      p.clusters.push_back(read->at(id));
      p.num_clusters = std::max(p.num_clusters, read->at(id) + 1);
    }
  } else {
    folder.notes.push_back(std::string("no ") + kClustersFile +
                           ": every node is counted in cluster 0");
    p.ids.assign(seen_ids.begin(), seen_ids.end());
    std::sort(p.ids.begin(), p.ids.end(), plot::NaturalLess);
    p.clusters.assign(p.ids.size(), 0);
    p.num_clusters = 1;
  }
  return Status::Ok();
}

// The method folders of the run folder `root`: `root` itself when it holds node folders, else its
// sub-folders that do.
std::vector<fs::path> MethodFolders(const fs::path& root) {
  std::vector<fs::path> methods;
  std::error_code ec;
  if (!NodeFolderIds(root).empty()) {
    methods.push_back(root);
  } else {
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      if (entry.is_directory() && !NodeFolderIds(entry.path()).empty())
        methods.push_back(entry.path());
    }
  }
  return methods;
}

// Whether any node of `runs` reported a test accuracy (a classification run).
bool AnyTestAccuracy(const std::vector<MethodRun>& runs) {
  for (const MethodRun& run : runs) {
    for (const NodeRun& n : run.nodes) {
      for (const node::RoundRow& r : n.rounds) {
        if (std::isfinite(r.test_acc)) return true;
      }
    }
  }
  return false;
}

}  // namespace

MethodRun ReadMethodRun(const std::string& dir, const std::string& name,
                        const Partition& partition) {
  MethodRun run;
  run.method.name = name;
  run.dir = dir;
  for (size_t i = 0; i < partition.ids.size(); ++i) {
    NodeRun n;
    n.id = partition.ids[i];
    n.cluster = partition.clusters[i];
    n.dir = NodeDir(run.dir, n.id);
    const std::string config_path = PathIn(n.dir, kNodeConfigFile);
    auto text = ReadWholeFile(config_path);
    auto config = text.ok() ? node::ParseNodeConfig(*text, config_path)
                            : Result<node::NodeConfig>(text.status());
    n.attacker = config.ok() && config->attack.kind != node::AttackKind::kNone;
    if (config.ok()) {
      run.rounds = std::max(run.rounds, config->training.rounds);
      n.compression = config->compression;
    }
    auto rows = node::ReadRoundsCsv(PathIn(n.dir, kRoundsFile));
    if (rows.ok()) n.rounds = std::move(*rows);
    auto exit_text = ReadWholeFile(PathIn(n.dir, kExitStatusFile));
    const std::optional<int> status =
        exit_text.ok() ? NumberFromText<int>(*exit_text, {.padded = true}) : std::nullopt;
    if (status && *status != 0) {
      n.failure = *status > 128 ? "killed by signal " + std::to_string(*status - 128)
                                : "exited with code " + std::to_string(*status);
    } else if (!rows.ok()) {
      n.failure = std::string("no ") + kRoundsFile;
    }
    if (!n.rounds.empty()) run.wall_seconds = std::max(run.wall_seconds, n.rounds.back().wall_s);
    run.nodes.push_back(std::move(n));
  }
  if (Status full_test = ReadFullTestCsv(run); !full_test.ok()) {
    std::fprintf(stderr, "meshlearn-launch: %s; the method's full-test figures are left out\n",
                 full_test.ToString().c_str());
  }
  return run;
}

Result<RunFolder> ReadRunFolder(const std::string& dir) {
  fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return Status::NotFound("run folder '" + dir + "' does not exist");
  RunFolder folder;
  folder.title = fs::absolute(root).lexically_normal().filename().string();
  if (folder.title.empty())
    folder.title = fs::absolute(root).lexically_normal().parent_path().filename().string();

  // Method folders and the node ids they hold.
  std::vector<fs::path> methods = MethodFolders(root);
  std::set<std::string> seen_ids;
  if (methods.empty()) {
    return Status::NotFound(
        "run folder '" + dir +
        "' holds no node-<id>/ folder, neither directly nor in a method folder");
  }
  for (const fs::path& m : methods) {
    for (const std::string& id : NodeFolderIds(m)) seen_ids.insert(id);
  }

  // Names and order: summary.csv's, else the manifest's, else natural order of the folders.
  std::optional<Manifest> manifest = ReadManifestOf(root);
  if (manifest && !manifest->scenario_name.empty()) folder.title = manifest->scenario_name;
  if (manifest) folder.seed = manifest->seed;
  auto named = SummaryMethodNames(PathIn(dir, kSummaryFile));
  if (!named.ok()) return named.status();
  if (named->empty() && manifest) {
    for (const MethodRecord& m : manifest->methods) named->push_back(m.name);
  }
  std::vector<std::pair<std::string, fs::path>> ordered;
  for (const std::string& name : *named) {
    auto it = std::find_if(methods.begin(), methods.end(),
                           [&](const fs::path& m) { return m.filename() == Slug(name); });
    if (it != methods.end()) {
      ordered.emplace_back(name, *it);
      methods.erase(it);
    }
  }
  std::sort(methods.begin(), methods.end(), [](const fs::path& a, const fs::path& b) {
    return plot::NaturalLess(a.string(), b.string());
  });
  for (const fs::path& m : methods) {
    std::string name = m == root ? folder.title : m.filename().string();
    ordered.emplace_back(name, m);
  }

  MESHLEARN_RETURN_IF_ERROR(
      ReadPartition(root, ordered.size() == 1 && ordered[0].second == root, seen_ids, folder));
  Partition& p = folder.partition;
  // The launcher's own times and status, when its manifest recorded the method's end.
  for (const auto& [name, path] : ordered) {
    folder.runs.push_back(ReadMethodRun(path.string(), name, p));
    const MethodRecord* record = manifest ? manifest->Method(name) : nullptr;
    if (record && !record->ended.empty()) {
      MethodRun& run = folder.runs.back();
      run.wall_seconds = record->wall_seconds;
      run.simulated_seconds = record->simulated_seconds;
      run.interrupted = record->status == kInterrupted;
    }
  }
  p.classification = AnyTestAccuracy(folder.runs);
  return folder;
}

Result<RunFolder> ReadRunFolders(const std::vector<std::string>& dirs) {
  if (dirs.empty()) return Status::InvalidArgument("no run folder given");
  auto combined = ReadRunFolder(dirs[0]);
  if (!combined.ok()) return combined.status();
  std::map<std::string, std::string> folder_of;  // method name -> the folder that holds it
  for (const MethodRun& run : combined->runs) folder_of[run.method.name] = dirs[0];
  for (size_t i = 1; i < dirs.size(); ++i) {
    auto folder = ReadRunFolder(dirs[i]);
    if (!folder.ok()) return folder.status();
    const Partition& a = combined->partition;
    const Partition& b = folder->partition;
    if (a.ids != b.ids || a.clusters != b.clusters) {
      return Status::InvalidArgument("run folders '" + dirs[0] + "' and '" + dirs[i] +
                                     "' hold different nodes or clusters (clusters.csv): not "
                                     "runs of one scenario");
    }
    if (folder->title != combined->title) {
      combined->notes.push_back("'" + dirs[i] + "' is a run of scenario '" + folder->title +
                                "', shown under '" + combined->title + "'");
    }
    for (MethodRun& run : folder->runs) {
      auto [it, fresh] = folder_of.emplace(run.method.name, dirs[i]);
      if (!fresh) {
        return Status::InvalidArgument("method '" + run.method.name + "' is in both '" +
                                       it->second + "' and '" + dirs[i] +
                                       "'; give each method once");
      }
      combined->runs.push_back(std::move(run));
    }
    for (std::string& note : folder->notes) combined->notes.push_back(std::move(note));
    combined->partition.classification = a.classification || b.classification;
  }
  return combined;
}

}  // namespace meshlearn::launch
