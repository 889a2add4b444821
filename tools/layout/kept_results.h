#pragma once
// Where kept results live, and which builds may write there (issue 58; docs/experiments.md "Kept
// results and the build"). The result pages cite the runs in a checkout's results/ folder, so
// every one of them must name the sources that made it.
//
// Rules:
// - A kept-results folder is a folder named `results` at the top of a source tree: its parent
//   holds `.git` (a checkout or a worktree), or is the source tree the binary was built from.
//   Rationale: the rule protects every checkout's results/, not only the one the binary came
//   from, and a tarball's (which has no .git) when it built the binary.
// - A path is inside one when, made absolute against the working folder with the symbolic links
//   of its existing part followed and `.` and `..` removed, it is that folder or below it.
//   Rationale: `--out runs/../results/x`, or a link to results/, writes there all the same.
// - A command may write into a path inside a kept-results folder only from a clean build (a known
//   commit, a tree equal to it: node::BuildIdentity), or when told so (`--allow-dirty`). The check
//   comes before the command writes anything. Then the run's manifest records the diff hash, and
//   a page that cites the run must say so.
// - A path outside every kept-results folder may be written by any build.

#include <optional>
#include <string>

#include "base/status.h"
#include "process/build_identity.h"

namespace meshlearn::launch {

// The kept-results folder that `path` is inside (resolved, see the rules), with `source_dir` the
// source tree of the binary; nullopt when it is inside none.
std::optional<std::string> KeptResultsFolderOf(const std::string& path,
                                               const std::string& source_dir);

// Ok when a command run by a binary of `build` may write into `path`, which the command line gave
// as `option` ("--out", "RUN_DIR"), with `allow_dirty` set by --allow-dirty (see the rules).
// Otherwise kInvalidArgument naming the option, the path, the kept-results folder, the build (its
// commit and diff hash, or that it is unknown) and the ways on: a clean build, another folder, or
// --allow-dirty.
Status CheckWriteIntoResults(const std::string& option, const std::string& path,
                             const node::BuildIdentity& build, bool allow_dirty);

}  // namespace meshlearn::launch
