#include "process/build_identity.h"

namespace meshlearn::node {
namespace generated {
// Written by cmake/build_version.cmake into the build folder's build_version.cc.
extern const char kVersion[], kCommit[], kDiffHash[], kSourceDir[];
extern const bool kClean;
}  // namespace generated

const BuildIdentity& ThisBuild() {
  static const BuildIdentity build{generated::kVersion, generated::kCommit, generated::kClean,
                                   generated::kDiffHash, generated::kSourceDir};
  return build;
}

std::string DescribeBuild(const BuildIdentity& build) {
  if (!build.Known()) return "commit unknown (not built from a git checkout)";
  if (build.clean) return "commit " + build.commit + ", clean tree";
  return "commit " + build.commit + ", dirty tree (diff_hash " + build.diff_hash + ")";
}

std::string VersionText(const std::string& program) {
  return program + " " + ThisBuild().version + "\nbuild: " + DescribeBuild(ThisBuild());
}

}  // namespace meshlearn::node
