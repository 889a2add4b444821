// What a binary knows of its build (process/build_identity.h): this test binary's own identity is
// self-consistent whatever the tree was (clean in CI's fresh clone, dirty while editing), and each
// kind of build is described so that a person can tell them apart.
#include "process/build_identity.h"

#include <gtest/gtest.h>

#include <string>

namespace meshlearn::node {
namespace {

bool IsHex(const std::string& text, size_t length) {
  return text.size() == length && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

TEST(BuildIdentity, ThisBuildNamesItsCommitAndItsTree) {
  const BuildIdentity& build = ThisBuild();
  EXPECT_EQ(build.source_dir, MESHLEARN_SOURCE_DIR);
  if (!build.Known()) {
    EXPECT_FALSE(build.clean);
    EXPECT_EQ(build.diff_hash, "");
    EXPECT_NE(build.version.find("(not built from a git checkout)"), std::string::npos);
    return;
  }
  EXPECT_TRUE(IsHex(build.commit, 40)) << build.commit;
  EXPECT_EQ(build.version.rfind("0.1.0+git.", 0), 0u) << build.version;
  if (build.clean) {
    EXPECT_EQ(build.diff_hash, "");
    EXPECT_FALSE(build.version.ends_with("-dirty")) << build.version;
  } else {
    EXPECT_TRUE(IsHex(build.diff_hash, 16)) << build.diff_hash;
    EXPECT_TRUE(build.version.ends_with("-dirty")) << build.version;
  }
}

TEST(BuildIdentity, EachKindOfBuildIsDescribed) {
  const std::string commit(40, 'c');
  EXPECT_EQ(DescribeBuild({"v", commit, true, "", "/src"}), "commit " + commit + ", clean tree");
  EXPECT_EQ(DescribeBuild({"v", commit, false, "0123456789abcdef", "/src"}),
            "commit " + commit + ", dirty tree (diff_hash 0123456789abcdef)");
  EXPECT_EQ(DescribeBuild({"v", kUnknownCommit, false, "", "/src"}),
            "commit unknown (not built from a git checkout)");
  EXPECT_EQ(VersionText("meshlearn-x"),
            "meshlearn-x " + ThisBuild().version + "\nbuild: " + DescribeBuild(ThisBuild()));
}

}  // namespace
}  // namespace meshlearn::node
