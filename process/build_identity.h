#pragma once
// What this binary was built from: the commit and whether the tree was clean, captured by the
// build on every build (cmake/build_version.cmake), so that a binary knows its own sources
// whatever folder it runs in. Every meshlearn program links it; `--version` prints it, the run
// manifest records it (tools/scenario/manifest.h), and a build that is not clean may not write
// into results/ unless told so (tools/layout/kept_results.h).

#include <string>

namespace meshlearn::node {

// The commit of a build made outside a git checkout (from a tarball).
inline constexpr const char kUnknownCommit[] = "unknown";

// A build's identity.
struct BuildIdentity {
  // "<project version>+git.<git describe --always --tags>", with "-dirty" when the tree was not
  // clean; "<project version> (not built from a git checkout)" when the commit is unknown.
  std::string version;
  std::string commit = kUnknownCommit;  // the full hash of HEAD, or kUnknownCommit
  // True when the tracked files equalled the commit and no untracked file was left that
  // .gitignore does not ignore; false when they did not, or the commit is unknown.
  bool clean = false;
  // A tree that is not clean: 16 hex digits of a SHA-256 over `git diff HEAD` and the untracked
  // files' paths and contents (the same changes give the same hash). Empty otherwise.
  std::string diff_hash;
  std::string source_dir;  // the absolute path of the source tree it was built from

  // True when the build knows its commit.
  bool Known() const { return commit != kUnknownCommit; }
};

// This binary's identity.
const BuildIdentity& ThisBuild();

// One line for people: "commit <hash>, clean tree", "commit <hash>, dirty tree (diff_hash <h>)"
// or "commit unknown (not built from a git checkout)".
std::string DescribeBuild(const BuildIdentity& build);

// What `--version` prints for `program`: "<program> <version>" and a second line "build: " +
// DescribeBuild(ThisBuild()).
std::string VersionText(const std::string& program);

}  // namespace meshlearn::node
