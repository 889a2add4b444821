// Which builds may write into a checkout's results/ (tools/layout/kept_results.h), decided for
// builds the test makes up: a clean one, a dirty one and one of unknown commit, over a small tree
// of checkouts, links and look-alike folders.
#include "tools/layout/kept_results.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "tests/fresh_dir.h"

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;

node::BuildIdentity Clean(const std::string& source_dir = "/nowhere") {
  return {"0.1.0+git.abc1234", std::string(40, 'a'), /*clean=*/true, "", source_dir};
}
node::BuildIdentity Dirty(const std::string& source_dir = "/nowhere") {
  return {"0.1.0+git.abc1234-dirty", std::string(40, 'a'), /*clean=*/false, "0123456789abcdef",
          source_dir};
}
node::BuildIdentity Unknown(const std::string& source_dir = "/nowhere") {
  return {"0.1.0 (not built from a git checkout)", node::kUnknownCommit, false, "", source_dir};
}

// root/checkout (a clone: .git/), root/worktree (a worktree: a .git file), root/tarball (no .git:
// a source tree known only as the binary's), root/plain (no .git), each with results/; a link
// root/link -> checkout/results.
class KeptResults : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::canonical(testing::FreshTestDir("kept_results")).string();
    for (const char* tree : {"checkout", "worktree", "tarball", "plain"}) {
      fs::create_directories(At(tree) + "/results/seed-1");
    }
    fs::create_directories(At("checkout/.git"));
    std::ofstream(At("worktree/.git")) << "gitdir: /elsewhere/.git/worktrees/w\n";
    fs::create_directories(At("checkout/runs"));
    fs::create_directories(At("checkout/data/results"));
    fs::create_directory_symlink(At("checkout/results"), At("link"));
  }

  std::string At(const std::string& relative) const { return root_ + "/" + relative; }

  std::string root_;
};

TEST_F(KeptResults, AResultsFolderAtTheTopOfACheckoutOrOfTheBuildsSourcesIsKept) {
  const std::string kept = At("checkout/results");
  EXPECT_EQ(KeptResultsFolderOf(kept, ""), kept);
  EXPECT_EQ(KeptResultsFolderOf(kept + "/", ""), kept);
  EXPECT_EQ(KeptResultsFolderOf(kept + "/seed-1/new/run", ""), kept) << "not made yet";
  EXPECT_EQ(KeptResultsFolderOf(At("worktree/results/x"), ""), At("worktree/results"));
  // A tarball's results/ only when the binary was built from it.
  EXPECT_EQ(KeptResultsFolderOf(At("tarball/results/x"), ""), std::nullopt);
  EXPECT_EQ(KeptResultsFolderOf(At("tarball/results/x"), At("tarball")), At("tarball/results"));
  EXPECT_EQ(KeptResultsFolderOf(At("tarball/results/x"), At("tarball/.")), At("tarball/results"));
  // Folders that only look like it.
  for (const char* other : {"plain/results/x", "checkout/runs/x", "checkout/data/results/x",
                            "checkout/results-old/x", "checkout"}) {
    EXPECT_EQ(KeptResultsFolderOf(At(other), ""), std::nullopt) << other;
  }
}

TEST_F(KeptResults, APathIsResolvedBeforeItIsJudged) {
  const std::string kept = At("checkout/results");
  // `..`, in the part that exists and in the part that does not.
  EXPECT_EQ(KeptResultsFolderOf(At("checkout/runs/../results/x"), ""), kept);
  EXPECT_EQ(KeptResultsFolderOf(At("checkout/new/../results/x"), ""), kept);
  EXPECT_EQ(KeptResultsFolderOf(At("checkout/results/../runs/x"), ""), std::nullopt);
  // A link to results/, and a path relative to the working folder.
  EXPECT_EQ(KeptResultsFolderOf(At("link/x"), ""), kept);
  const std::string relative = fs::relative(At("checkout/results/x"), fs::current_path()).string();
  ASSERT_NE(relative.front(), '/');
  EXPECT_EQ(KeptResultsFolderOf(relative, ""), kept) << relative;
}

TEST_F(KeptResults, ADirtyOrUnknownBuildIsRefusedUnlessAllowed) {
  const std::string out = At("link/seed-2");
  EXPECT_TRUE(CheckWriteIntoResults("--out", out, Clean(), false).ok());
  for (const node::BuildIdentity& build : {Dirty(), Unknown()}) {
    Status refused = CheckWriteIntoResults("--out", out, build, /*allow_dirty=*/false);
    ASSERT_FALSE(refused.ok()) << build.version;
    EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument);
    // What, where, and how to go on.
    EXPECT_NE(refused.message().find("--out " + out + " is inside " + At("checkout/results")),
              std::string::npos)
        << refused.message();
    EXPECT_NE(refused.message().find("pass --allow-dirty to write there anyway"), std::string::npos)
        << refused.message();
    EXPECT_TRUE(CheckWriteIntoResults("--out", out, build, /*allow_dirty=*/true).ok());
  }
  EXPECT_NE(CheckWriteIntoResults("--out", out, Dirty(), false)
                .message()
                .find("built from a tree that differs from commit " + std::string(40, 'a') +
                      " (diff_hash 0123456789abcdef)"),
            std::string::npos);
  EXPECT_NE(CheckWriteIntoResults("--out", out, Unknown(), false)
                .message()
                .find("built outside a git checkout (commit unknown)"),
            std::string::npos);
  // Anywhere else, any build writes.
  for (const char* elsewhere : {"checkout/runs/x", "plain/results/x", "tarball/results/x"}) {
    EXPECT_TRUE(CheckWriteIntoResults("--out", At(elsewhere), Dirty(), false).ok()) << elsewhere;
  }
  // The binary's own sources count even without .git.
  EXPECT_FALSE(
      CheckWriteIntoResults("RUN_DIR", At("tarball/results/x"), Unknown(At("tarball")), false)
          .ok());
}

}  // namespace
}  // namespace meshlearn::launch
