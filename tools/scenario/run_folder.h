#pragma once
// The run folder (--out) of meshlearn-launch: claimed by one launch at a time, never reused
// without being asked, and described by its manifest (tools/scenario/manifest.h).
//
// Rules (docs/experiments.md "Run folders"):
//   - a launch takes "<out>/launch.lock"; a second launch into the same folder while the first
//     runs is refused, whatever its options;
//   - a folder that is missing or empty is a new run;
//   - a non-empty folder is refused (exit 2, nothing touched), unless
//       --resume: it holds a run with a manifest whose scenario, as run, is this one (same file
//         contents after --set, --nodes and --seed, hence the same seed and partition). Methods
//         the manifest records as complete are kept and not run again; the others run, and their
//         nodes continue from their checkpoints;
//       --force: it holds a meshlearn run (a manifest, or the clusters.csv of an older launcher).
//         Every file meshlearn writes in a run folder, by name and place (the run's files at the
//         top, shards/client-<i>.shard, and in each method folder its pictures, keys/ and the
//         node-<id> folders' files), is deleted, and then the folders left empty; anything else
//         (the user's own files) stays where it is and is listed. A folder that holds no
//         meshlearn run is refused even with --force;
//   - --resume and --force are refused while a node of the previous run still holds its folder.

#include <optional>
#include <string>
#include <vector>

#include "base/file_lock.h"
#include "base/status.h"
#include "tools/scenario/manifest.h"

namespace meshlearn::launch {

// What a launch does with an --out folder that is not empty.
enum class ExistingRun {
  kRefuse,   // the default
  kResume,   // --resume
  kReplace,  // --force
};

// A run folder claimed by this launch. Move-only; the lock is released when it goes.
class ClaimedRunFolder {
 public:
  // Claims `dir` (created if missing) for a launch whose manifest, were the run new, is `fresh`
  // (scenario, seed, nodes, libraries, host and this launch filled in), following the rules
  // above. On --resume the folder's manifest is kept and this launch appended to it. `notes`
  // receives lines for the user (the files --force kept). Errors, all with nothing deleted:
  // kUnavailable (another launch, or a node of the previous run, holds the folder),
  // kInvalidArgument (a non-empty folder without --resume or --force, another scenario on
  // --resume, no meshlearn run to replace or resume) and kIoError (the folder cannot be created
  // or written, with the system's reason).
  static Result<ClaimedRunFolder> Claim(const std::string& dir, ExistingRun existing,
                                        Manifest fresh, std::vector<std::string>* notes);

  // The manifest as it stands.
  const Manifest& manifest() const { return manifest_; }
  // Records `method` (adding or replacing its record) and rewrites the manifest.
  Status Record(const MethodRecord& method);
  // Ends this launch with `status` (the run's status too) and rewrites the manifest.
  Status Finish(const std::string& status);

 private:
  ClaimedRunFolder(std::string dir, FileLock lock, Manifest manifest)
      : dir_(std::move(dir)), lock_(std::move(lock)), manifest_(std::move(manifest)) {}
  Status Write() const;

  std::string dir_;
  FileLock lock_;
  Manifest manifest_;
};

}  // namespace meshlearn::launch
