#include "tools/layout/kept_results.h"

#include <filesystem>
#include <system_error>

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;

constexpr const char kResultsFolderName[] = "results";

// `path` resolved (the rules in kept_results.h); `path` made absolute when it cannot be.
fs::path Resolved(const std::string& path) {
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) absolute = path;
  fs::path resolved = fs::weakly_canonical(absolute, ec);
  if (ec) resolved = absolute;
  resolved = resolved.lexically_normal();
  if (!resolved.has_filename() && resolved.has_parent_path()) resolved = resolved.parent_path();
  return resolved;
}

}  // namespace

std::optional<std::string> KeptResultsFolderOf(const std::string& path,
                                               const std::string& source_dir) {
  const fs::path source = source_dir.empty() ? fs::path() : Resolved(source_dir);
  for (fs::path at = Resolved(path); at.has_relative_path(); at = at.parent_path()) {
    if (at.filename() != kResultsFolderName) continue;
    const fs::path tree = at.parent_path();
    std::error_code ec;
    if (tree == source || fs::exists(tree / ".git", ec)) return at.string();
  }
  return std::nullopt;
}

Status CheckWriteIntoResults(const std::string& option, const std::string& path,
                             const node::BuildIdentity& build, bool allow_dirty) {
  if (allow_dirty || (build.Known() && build.clean)) return Status::Ok();
  const std::optional<std::string> kept = KeptResultsFolderOf(path, build.source_dir);
  if (!kept) return Status::Ok();
  const std::string built = build.Known() ? "from a tree that differs from commit " + build.commit +
                                                " (diff_hash " + build.diff_hash + ")"
                                          : "outside a git checkout (commit unknown)";
  return Status::InvalidArgument(
      option + " " + path + " is inside " + *kept +
      ", which keeps the results the pages cite, and this binary was built " + built +
      ". Only a clean build writes there: commit the changes and rebuild, or write elsewhere "
      "(e.g. runs/), or pass --allow-dirty to write there anyway (the manifest then records the "
      "diff hash, and a page citing the run must say so)");
}

}  // namespace meshlearn::launch
