#include "tools/layout/run_layout.h"

#include <cctype>
#include <filesystem>
#include <vector>

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;

constexpr const char kNodePrefix[] = "node-";

// Files meshlearn writes at the top of a run folder, in a method folder and in a node folder.
const std::set<std::string> kRunFiles = {kManifestFile,  kSummaryFile,    kCurvesFile,
                                         kClustersFile,  kSimulationFile, kDashboardCostsFile,
                                         kLaunchLockFile};
const std::set<std::string> kMethodFiles = {kHeatmapCsvFile,   kHeatmapPngFile, kEmdMatrixCsvFile,
                                            kEmdMatrixPngFile, kHostfileFile,   kNodeTemplateFile,
                                            kRankScriptFile,   kJobScriptFile,  kEngineLogFile,
                                            kSlurmJobIdFile,   kFullTestFile,   kNetworkFile};
const std::set<std::string> kNodeFiles = {
    kNodeConfigFile, kNodeLogFile,   kRoundsFile,     kScoresFile,   kCommFile,      kClusterFile,
    kEmdFile,        kSignatureFile, kCheckpointFile, kNodeLockFile, kExitStatusFile};

// `name` without a trailing ".tmp".
std::string Untemp(const std::string& name) {
  return name.ends_with(".tmp") && name.size() > 4 ? name.substr(0, name.size() - 4) : name;
}

std::vector<std::string> Components(const std::string& relative) {
  std::vector<std::string> parts;
  for (const fs::path& p : fs::path(relative)) parts.push_back(p.string());
  return parts;
}

}  // namespace

std::string PathIn(const std::string& folder, const char* name) { return folder + "/" + name; }

std::string FuzzSeedDir(const std::string& out_dir, uint64_t seed, FuzzSeedRun run) {
  const char* suffix = run == FuzzSeedRun::kAgain     ? "-again"
                       : run == FuzzSeedRun::kReduced ? "-reduced"
                                                      : "";
  return (fs::path(out_dir) / ("seed-" + std::to_string(seed) + suffix)).string();
}

std::string MethodDir(const std::string& out_dir, const std::string& method) {
  return out_dir + "/" + Slug(method);
}

std::string NodeFolderName(const std::string& id) { return kNodePrefix + id; }

std::string NodeDir(const std::string& method_dir, const std::string& id) {
  return method_dir + "/" + NodeFolderName(id);
}

bool IsLauncherNodeFolder(const std::string& name) {
  return name.starts_with(kNodePrefix) && name.size() > 5 &&
         name.find_first_not_of("0123456789", 5) == std::string::npos;
}

std::optional<std::string> NodeIdOfFolder(const std::string& name) {
  if (!name.starts_with(kNodePrefix) || name.size() <= 5) return std::nullopt;
  return name.substr(5);
}

bool WrittenByMeshlearn(const std::string& relative, const std::set<std::string>& methods) {
  std::vector<std::string> p = Components(relative);
  if (p.empty()) return false;
  std::string file = Untemp(p.back());
  if (p.size() == 1) return kRunFiles.count(file) > 0;
  if (p.size() == 2 && p[0] == kShardsFolder) {
    return file.starts_with("client-") && file.size() > 13 &&
           file.compare(file.size() - 6, 6, ".shard") == 0 &&
           file.find_first_not_of("0123456789", 7) == file.size() - 6;
  }
  if (!methods.count(p[0])) return false;
  if (p.size() == 2) return kMethodFiles.count(file) > 0;
  if (p.size() == 3 && p[1] == kKeysFolder) {
    return file == kAllowedKeysFile ||
           (file.starts_with(kNodePrefix) && (file.ends_with(".key") || file.ends_with(".pub")));
  }
  if (p.size() == 3 && IsLauncherNodeFolder(p[1])) return kNodeFiles.count(file) > 0;
  return false;
}

bool FolderOfMeshlearn(const std::string& relative, const std::set<std::string>& methods) {
  std::vector<std::string> p = Components(relative);
  return (p.size() == 1 && (p[0] == kShardsFolder || methods.count(p[0]))) ||
         (p.size() == 2 && methods.count(p[0]) &&
          (p[1] == kKeysFolder || IsLauncherNodeFolder(p[1])));
}

std::string Slug(const std::string& name) {
  std::string slug;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') {
      slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!slug.empty() && slug.back() != '-') {
      slug += '-';
    }
  }
  while (!slug.empty() && slug.back() == '-') slug.pop_back();
  return slug.empty() ? "method" : slug;
}

}  // namespace meshlearn::launch
