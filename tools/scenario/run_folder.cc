#include "tools/scenario/run_folder.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "base/atomic_file.h"
#include "tools/layout/run_layout.h"
#include "tools/scenario/scenario.h"

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;

// Entries of `dir`, recursively, as paths relative to it (launch.lock left out).
std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> entries;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string relative = fs::relative(it->path(), dir, ec).string();
    if (relative != kLaunchLockFile) entries.push_back(relative);
  }
  std::sort(entries.begin(), entries.end());
  return entries;
}

// The method folders of the run in `dir`: those its manifest names, and any folder holding a
// node folder with a node.toml or rounds.csv (a launcher without manifests wrote those).
std::set<std::string> MethodFolders(const std::string& dir, const Manifest* manifest) {
  std::set<std::string> folders;
  if (manifest) {
    for (const MethodRecord& m : manifest->methods) folders.insert(Slug(m.name));
  }
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec) || it->is_symlink(ec)) continue;
    for (fs::directory_iterator sub(it->path(), ec); !ec && sub != fs::directory_iterator();
         sub.increment(ec)) {
      std::string name = sub->path().filename().string();
      if (IsLauncherNodeFolder(name) && (fs::exists(sub->path() / kNodeConfigFile, ec) ||
                                         fs::exists(sub->path() / kRoundsFile, ec))) {
        folders.insert(it->path().filename().string());
        break;
      }
    }
  }
  return folders;
}

// A node of the run in `dir` whose folder is still locked: "<folder> (process N)".
std::optional<std::string> RunningNode(const std::string& dir) {
  for (const std::string& entry : Entries(dir)) {
    if (fs::path(entry).filename() != kNodeLockFile) continue;
    pid_t holder = FileLock::Holder(dir + "/" + entry);
    if (holder != 0) {
      return dir + "/" + fs::path(entry).parent_path().string() +
             (holder > 0 ? " (process " + std::to_string(holder) + ")" : "");
    }
  }
  return std::nullopt;
}

// The first line where `before` and `now` differ, as "line N: 'x' before, 'y' now".
std::string FirstDifference(const std::string& before, const std::string& now) {
  std::istringstream a(before), b(now);
  std::string line_a, line_b;
  for (int line = 1;; ++line) {
    bool more_a = static_cast<bool>(std::getline(a, line_a));
    bool more_b = static_cast<bool>(std::getline(b, line_b));
    if (!more_a && !more_b) return "";
    if (!more_a) line_a = "(end)";
    if (!more_b) line_b = "(end)";
    if (line_a != line_b) {
      return "the run has '" + line_a + "' where this one has '" + line_b + "'";
    }
  }
}

// One line about the run in a folder, for messages.
std::string Describe(const Manifest& m) {
  std::string methods;
  for (const MethodRecord& r : m.methods) {
    methods += (methods.empty() ? "" : ", ") + r.name + " " + r.status;
  }
  return "scenario '" + m.scenario_name + "', seed " + std::to_string(m.seed) + ", " +
         std::to_string(m.nodes) + " nodes, started " + m.started + ", " + m.status +
         (methods.empty() ? "" : "; methods: " + methods);
}

// Deletes every meshlearn file of the run in `dir`, then the folders left empty; appends what
// stays to `kept`.
Status DeleteRunFiles(const std::string& dir, const Manifest* previous,
                      std::vector<std::string>* kept) {
  std::set<std::string> methods = MethodFolders(dir, previous);
  std::vector<std::string> folders;
  for (const std::string& entry : Entries(dir)) {
    std::error_code ec;
    fs::path path = fs::path(dir) / entry;
    if (fs::is_directory(fs::symlink_status(path, ec))) {
      folders.push_back(entry);
    } else if (WrittenByMeshlearn(entry, methods)) {
      fs::remove(path, ec);
      if (ec) return Status::IoError(path.string() + ": cannot delete: " + ec.message());
    }
  }
  // Deepest first, so that a node folder goes before its method folder.
  std::sort(folders.begin(), folders.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
  });
  for (const std::string& folder : folders) {
    std::error_code ec;
    if (FolderOfMeshlearn(folder, methods) && fs::is_empty(fs::path(dir) / folder, ec))
      fs::remove(fs::path(dir) / folder, ec);
  }
  for (const std::string& entry : Entries(dir)) {
    std::error_code ec;
    if (!fs::is_directory(fs::symlink_status(fs::path(dir) / entry, ec))) {
      kept->push_back(dir + "/" + entry);
    }
  }
  return Status::Ok();
}

// What a non-empty run folder holds: its manifest (when it reads), why it does not read, and
// whether the folder holds a meshlearn run at all (also one of an older launcher, without one).
struct PreviousRun {
  std::optional<Manifest> manifest;
  Status unreadable;
  bool holds_run = false;
};

PreviousRun ReadPreviousRun(const std::string& dir) {
  PreviousRun previous;
  const std::string manifest_path = PathIn(dir, kManifestFile);
  if (auto text = ReadWholeFile(manifest_path); text.ok()) {
    auto parsed = ParseManifest(*text, manifest_path);
    if (parsed.ok()) {
      previous.manifest = std::move(*parsed);
    } else {
      previous.unreadable = parsed.status();
    }
  }
  auto clusters = ReadWholeFile(PathIn(dir, kClustersFile));
  bool older_run = clusters.ok() && clusters->starts_with("node,cluster\n");
  previous.holds_run = previous.manifest || !previous.unreadable.ok() || older_run;
  return previous;
}

// Why a launch of `existing` may not claim the non-empty `dir` holding `previous` (Ok when it
// may): no run to replace or resume, a run only --resume or --force may touch, a node still
// running there.
Status RefusalOf(const std::string& dir, ExistingRun existing, const PreviousRun& previous) {
  const std::string choices =
      "--resume continues that run, --force replaces it (deleting only the files meshlearn "
      "wrote there), or choose another --out";
  if (existing == ExistingRun::kRefuse) {
    if (!previous.holds_run) {
      return Status::InvalidArgument(
          dir + " is not empty and holds no meshlearn run (no " + kManifestFile +
          "); nothing was changed. Choose an empty or new folder with --out");
    }
    return Status::InvalidArgument(dir + " already holds a run (" +
                                   (previous.manifest
                                        ? Describe(*previous.manifest)
                                        : std::string("written by an older meshlearn-launch")) +
                                   "); nothing was changed. " + choices);
  }
  if (!previous.holds_run) {
    return Status::InvalidArgument(
        dir + " is not empty and holds no meshlearn run (no " + kManifestFile + "): " +
        (existing == ExistingRun::kResume ? "--resume has nothing to continue"
                                          : "--force replaces only a meshlearn run") +
        "; nothing was changed. Choose an empty or new folder with --out");
  }
  if (auto node = RunningNode(dir)) {
    return Status::Unavailable("node folder " + *node +
                               " is still in use by a node of the run there; stop it first");
  }
  return Status::Ok();
}

// The manifest of the run in `dir` that --resume continues with launch `fresh`; kInvalidArgument
// when `previous` has no manifest or is of another scenario or seed.
Result<Manifest> ResumedManifest(const std::string& dir, PreviousRun& previous,
                                 const Manifest& fresh) {
  if (!previous.manifest) {
    return Status::InvalidArgument(
        "--resume: " +
        (previous.unreadable.ok() ? dir + " has no " + kManifestFile +
                                        " (it was written by an older meshlearn-launch), so the "
                                        "run cannot be checked"
                                  : previous.unreadable.message()) +
        "; nothing was changed. --force replaces it");
  }
  if (previous.manifest->resolved != fresh.resolved) {
    return Status::InvalidArgument(
        "--resume: " + dir + " holds a run of another scenario or seed (" +
        FirstDifference(previous.manifest->resolved, fresh.resolved) +
        "); nothing was changed. Resume with the same scenario file, --set, --nodes and "
        "--seed, or use --force to replace that run");
  }
  Manifest manifest = std::move(*previous.manifest);
  // The lock is ours, so a launch still recorded as running had its launcher killed.
  for (LaunchRecord& earlier : manifest.launches) {
    if (earlier.status == kRunning) earlier.status = kKilled;
  }
  manifest.status = kRunning;
  manifest.ended.clear();
  manifest.scenario_text = fresh.scenario_text;
  manifest.launches.push_back(fresh.launches.back());
  return manifest;
}

// Deletes the files of the run `previous` in `dir` for --force, noting what it deleted and kept.
Status ReplaceRun(const std::string& dir, const PreviousRun& previous,
                  std::vector<std::string>* notes) {
  const Manifest* manifest = previous.manifest ? &*previous.manifest : nullptr;
  std::vector<std::string> kept;
  MESHLEARN_RETURN_IF_ERROR(DeleteRunFiles(dir, manifest, &kept));
  notes->push_back("--force: deleted the files of the run in " + dir + " (" +
                   (manifest ? Describe(*manifest) : std::string("an older meshlearn-launch's")) +
                   ")");
  if (!kept.empty()) {
    notes->push_back("--force kept " + std::to_string(kept.size()) +
                     " file(s) meshlearn did not write:");
    for (size_t i = 0; i < kept.size() && i < 20; ++i) notes->push_back("  " + kept[i]);
    if (kept.size() > 20) {
      notes->push_back("  ... and " + std::to_string(kept.size() - 20) + " more");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ClaimedRunFolder> ClaimedRunFolder::Claim(const std::string& dir, ExistingRun existing,
                                                 Manifest fresh, std::vector<std::string>* notes) {
  std::error_code ec;
  const bool dir_existed = fs::exists(dir, ec);
  fs::create_directories(dir, ec);
  if (ec) return Status::IoError(dir + ": cannot create the output folder: " + ec.message());
  // A refused launch leaves the folder as it found it: launch.lock gets this launch's id only
  // once the folder is claimed, and goes again (the folder too) if this launch created it.
  const std::string lock_path = PathIn(dir, kLaunchLockFile);
  const bool lock_existed = fs::exists(lock_path, ec);
  auto lock = FileLock::Acquire(lock_path, /*record_pid=*/false);
  if (!lock.ok()) {
    if (lock.status().code() != ErrorCode::kUnavailable) return lock.status();
    return Status::Unavailable(lock.status().message() +
                               ": another meshlearn-launch is running in " + dir +
                               "; wait for it to end, or choose another --out");
  }
  auto refuse = [&](Status why) -> Result<ClaimedRunFolder> {
    if (!lock_existed) fs::remove(lock_path, ec);
    if (!dir_existed) fs::remove(dir, ec);
    return why;
  };
  auto claim = [&](Manifest manifest) -> Result<ClaimedRunFolder> {
    MESHLEARN_RETURN_IF_ERROR(lock->RecordPid());
    ClaimedRunFolder folder(dir, std::move(*lock), std::move(manifest));
    MESHLEARN_RETURN_IF_ERROR(folder.Write());
    return folder;
  };
  std::vector<std::string> entries = Entries(dir);
  if (entries.empty()) {
    if (existing == ExistingRun::kResume) {
      return refuse(Status::InvalidArgument("--resume: " + dir + " holds no run to resume"));
    }
    return claim(std::move(fresh));
  }

  PreviousRun previous = ReadPreviousRun(dir);
  if (Status refused = RefusalOf(dir, existing, previous); !refused.ok()) return refuse(refused);
  if (existing == ExistingRun::kResume) {
    auto manifest = ResumedManifest(dir, previous, fresh);
    if (!manifest.ok()) return refuse(manifest.status());
    return claim(std::move(*manifest));
  }
  MESHLEARN_RETURN_IF_ERROR(ReplaceRun(dir, previous, notes));
  return claim(std::move(fresh));
}

Status ClaimedRunFolder::Record(const MethodRecord& method) {
  manifest_.SetMethod(method);
  return Write();
}

Status ClaimedRunFolder::Finish(const std::string& status) {
  manifest_.status = status;
  manifest_.ended = NowUtc();
  if (!manifest_.launches.empty()) {
    manifest_.launches.back().status = status;
    manifest_.launches.back().ended = manifest_.ended;
  }
  return Write();
}

Status ClaimedRunFolder::Write() const {
  return WriteFileAtomically(PathIn(dir_, kManifestFile), RenderManifest(manifest_));
}

}  // namespace meshlearn::launch
