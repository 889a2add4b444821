#include "tools/launch/run_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "base/atomic_file.h"
#include "node/config/config.h"

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;

// The ids of the node-<id> folders directly under `dir`.
std::vector<std::string> NodeFolderIds(const fs::path& dir) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.rfind("node-", 0) == 0 && name.size() > 5) {
      ids.push_back(name.substr(5));
    }
  }
  return ids;
}

// Numeric ids in numeric order, then the others in text order.
void SortIds(std::vector<std::string>& ids) {
  auto numeric = [](const std::string& s) {
    return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), ::isdigit);
  };
  std::sort(ids.begin(), ids.end(), [&](const std::string& a, const std::string& b) {
    if (numeric(a) != numeric(b)) return numeric(a);
    if (numeric(a)) return std::stol(a) < std::stol(b);
    return a < b;
  });
}

// The method names of summary.csv's rows (first column, quotes removed), in order.
std::vector<std::string> SummaryMethodNames(const fs::path& path) {
  std::vector<std::string> names;
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '"') {
      size_t close = line.find('"', 1);
      if (close != std::string::npos) names.push_back(line.substr(1, close - 1));
    } else {
      names.push_back(line.substr(0, line.find(',')));
    }
  }
  return names;
}

// Reads clusters.csv ("node,cluster") into `partition`.
Status ReadClusters(const fs::path& path, Partition& partition) {
  auto text = ReadWholeFile(path.string());
  if (!text.ok()) return text.status();
  std::istringstream lines(*text);
  std::string line;
  std::getline(lines, line);  // node,cluster
  for (int number = 2; std::getline(lines, line); ++number) {
    if (line.empty()) continue;
    size_t comma = line.find(',');
    char* end = nullptr;
    long cluster =
        comma == std::string::npos ? -1 : std::strtol(line.c_str() + comma + 1, &end, 10);
    if (comma == std::string::npos || comma == 0 || cluster < 0 || (end && *end != '\0')) {
      return Status::Malformed(path.string() + ":" + std::to_string(number) +
                               ": expected node,cluster with a cluster number >= 0");
    }
    partition.ids.push_back(line.substr(0, comma));
    partition.clusters.push_back(static_cast<int>(cluster));
    partition.num_clusters = std::max(partition.num_clusters, static_cast<int>(cluster) + 1);
  }
  return Status::Ok();
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
    n.dir = run.dir + "/node-" + n.id;
    auto text = ReadWholeFile(n.dir + "/node.toml");
    auto config = text.ok() ? node::ParseNodeConfig(*text, n.dir + "/node.toml")
                            : Result<node::NodeConfig>(text.status());
    n.attacker = config.ok() && config->attack != node::AttackKind::kNone;
    if (config.ok()) run.rounds = std::max(run.rounds, config->rounds);
    auto rows = node::ReadRoundsCsv(n.dir + "/rounds.csv");
    if (rows.ok()) n.rounds = std::move(*rows);
    std::ifstream exit_file(n.dir + "/exit_status");
    int status = 0;
    if (exit_file >> status && status != 0) {
      n.failure = status > 128 ? "killed by signal " + std::to_string(status - 128)
                               : "exited with code " + std::to_string(status);
    } else if (!rows.ok()) {
      n.failure = "no rounds.csv";
    }
    if (!n.rounds.empty()) run.wall_seconds = std::max(run.wall_seconds, n.rounds.back().wall_s);
    run.nodes.push_back(std::move(n));
  }
  return run;
}

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
               const std::vector<MethodRun>& runs, const std::vector<MethodSummary>& summaries) {
  Status curves = WriteCurves(out_dir + "/curves.png", runs, partition, title);
  if (!curves.ok())
    std::fprintf(stderr, "meshlearn-launch: curves: %s\n", curves.ToString().c_str());
  Status summary = WriteSummaryCsv(out_dir + "/summary.csv", summaries, partition.num_clusters);
  if (!summary.ok()) std::fprintf(stderr, "meshlearn-launch: %s\n", summary.ToString().c_str());

  std::printf("\n%s\n", FormatTable(summaries, partition.num_clusters).c_str());
  std::printf("summary:  %s/summary.csv\ncurves:   %s/curves.png\n", out_dir.c_str(),
              out_dir.c_str());
  for (const MethodRun& run : runs) {
    std::printf("heatmap:  %s/heatmap.csv  %s/heatmap.png  (%s)\n", run.dir.c_str(),
                run.dir.c_str(), run.method.name.c_str());
    if (fs::exists(run.dir + "/emd_matrix.csv")) {
      std::printf("emd:      %s/emd_matrix.csv  %s/emd_matrix.png\n", run.dir.c_str(),
                  run.dir.c_str());
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
  std::vector<fs::path> methods;
  std::set<std::string> seen_ids;
  if (!NodeFolderIds(root).empty()) {
    methods.push_back(root);
  } else {
    for (const auto& entry : fs::directory_iterator(root, ec)) {
      if (entry.is_directory() && !NodeFolderIds(entry.path()).empty())
        methods.push_back(entry.path());
    }
  }
  if (methods.empty()) {
    return Status::NotFound(
        "run folder '" + dir +
        "' holds no node-<id>/ folder, neither directly nor in a method folder");
  }
  for (const fs::path& m : methods) {
    for (const std::string& id : NodeFolderIds(m)) seen_ids.insert(id);
  }

  // Names and order: summary.csv's, else alphabetical.
  std::vector<std::string> named = SummaryMethodNames(root / "summary.csv");
  std::vector<std::pair<std::string, fs::path>> ordered;
  for (const std::string& name : named) {
    auto it = std::find_if(methods.begin(), methods.end(),
                           [&](const fs::path& m) { return m.filename() == Slug(name); });
    if (it != methods.end()) {
      ordered.emplace_back(name, *it);
      methods.erase(it);
    }
  }
  std::sort(methods.begin(), methods.end());
  for (const fs::path& m : methods) {
    std::string name = m == root ? folder.title : m.filename().string();
    ordered.emplace_back(name, m);
  }

  fs::path clusters = root / "clusters.csv";
  if (!fs::exists(clusters) && ordered.size() == 1 && ordered[0].second == root) {
    clusters = root.parent_path() / "clusters.csv";
  }
  if (fs::exists(clusters)) {
    MESHLEARN_RETURN_IF_ERROR(ReadClusters(clusters, folder.partition));
  } else {
    folder.notes.push_back("no clusters.csv: every node is counted in cluster 0");
    folder.partition.ids.assign(seen_ids.begin(), seen_ids.end());
    SortIds(folder.partition.ids);
    folder.partition.clusters.assign(folder.partition.ids.size(), 0);
    folder.partition.num_clusters = 1;
  }
  for (const auto& [name, path] : ordered) {
    folder.runs.push_back(ReadMethodRun(path.string(), name, folder.partition));
  }
  // Classification when any node reported a test accuracy.
  folder.partition.classification = false;
  for (const MethodRun& run : folder.runs) {
    for (const NodeRun& n : run.nodes) {
      for (const node::RoundRow& r : n.rounds) {
        if (std::isfinite(r.test_acc)) folder.partition.classification = true;
      }
    }
  }
  return folder;
}

}  // namespace meshlearn::launch
