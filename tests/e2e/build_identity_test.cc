// The built programs know their build (process/build_identity.h): `--version` prints it, a run's
// and a fuzz run's manifest record it, and a launch, a report or a fuzz run into a checkout's
// results/ needs a clean build or --allow-dirty (tools/layout/kept_results.h). The checkout is a
// made-up one in a temporary folder (a `.git` folder beside `results/`); the binaries are real,
// and their own identity, fixed when they were built, decides. Each test reads that identity from
// `--version` and checks what such a build must do:
// - a dirty build: the launch, the report and the fuzz run into results/ are refused and write
//   nothing, and --allow-dirty writes, its manifest carrying the diff hash;
// - a clean build: they write, and the manifest says clean.
// They run twice: over meshlearn-launch (clean on CI's fresh clone, dirty while a change is
// tested before its commit) and over meshlearn-launch-dirty, the same objects linked with the
// identity of a dirty tree the build makes (tests/e2e/CMakeLists.txt). Rationale: the identity is
// compiled in, so that no variable or flag can make a binary claim another build.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "tests/e2e/run_folder_support.h"

namespace meshlearn::e2e {
namespace {

namespace fs = std::filesystem;

// What `<program> --version` says of the build.
struct PrintedBuild {
  std::string commit;  // "unknown" outside a git checkout
  bool clean = false;
  std::string diff_hash;  // a dirty tree's
};

PrintedBuild VersionOf(const std::string& program, const std::string& dir) {
  fs::create_directories(dir);
  Finished version = RunToEnd({program, "--version"}, dir + "/version.log");
  EXPECT_TRUE(ExitedWith(version.status, 0)) << version.log;
  PrintedBuild build;
  const size_t at = version.log.find("build: commit ");
  EXPECT_NE(at, std::string::npos) << version.log;
  if (at == std::string::npos) return build;
  const std::string line = version.log.substr(at, version.log.find('\n', at) - at);
  build.commit = line.substr(14, line.find_first_of(" ,", 14) - 14);
  build.clean = line.ends_with(", clean tree");
  if (const size_t hash = line.find("(diff_hash "); hash != std::string::npos) {
    build.diff_hash = line.substr(hash + 11, line.size() - hash - 12);
  }
  return build;
}

// "<dir>/checkout": a checkout's top (it holds .git) with its results/ folder; returns results/.
std::string MakeCheckout(const std::string& dir) {
  fs::create_directories(dir + "/checkout/.git");
  fs::create_directories(dir + "/checkout/results");
  return fs::canonical(dir + "/checkout/results").string();
}

// The manifest's first launch records `build` (and a dirty tree's diff hash).
void ExpectLaunchRecords(const toml::table& m, const PrintedBuild& build) {
  EXPECT_EQ(Text(m, "launches[0].commit"), build.commit);
  EXPECT_EQ(m.at_path("launches[0].clean").value<bool>(), std::optional<bool>(build.clean));
  if (build.clean || build.commit == "unknown") {
    EXPECT_FALSE(m.at_path("launches[0].diff_hash")) << "a clean or unknown build has no diff";
  } else {
    EXPECT_EQ(Text(m, "launches[0].diff_hash"), build.diff_hash);
  }
}

TEST(BuildIdentity, EveryProgramPrintsItsBuildWithVersion) {
  const std::string dir = ::testing::TempDir() + "/e2e_build_version";
  const PrintedBuild launch = VersionOf(MESHLEARN_LAUNCH_BIN, dir + "/launch");
  const PrintedBuild node = VersionOf(MESHLEARN_NODE_BIN, dir + "/node");
  EXPECT_FALSE(launch.commit.empty());
  // One build made both.
  EXPECT_EQ(node.commit, launch.commit);
  EXPECT_EQ(node.clean, launch.clean);
  EXPECT_EQ(node.diff_hash, launch.diff_hash);
  EXPECT_EQ(launch.diff_hash.empty(), launch.clean || launch.commit == "unknown");
}

// `launcher` with `args`, its output in "<dir>/<name>.log".
Finished RunLauncherBinary(const std::string& launcher, const std::string& dir,
                           const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), launcher);
  return RunToEnd(args, dir + "/" + name + ".log");
}

// A launch and a report by `launcher` into a checkout's results/ (see the file comment), in a
// fresh `dir`; returns the build it printed.
PrintedBuild ExpectLaunchesIntoResultsFollowTheRule(const std::string& launcher,
                                                    const std::string& dir) {
  fs::remove_all(dir);
  const PrintedBuild build = VersionOf(launcher, dir);
  auto RunLauncher = [&](const std::string& d, const std::string& name,
                         const std::vector<std::string>& args) {
    return RunLauncherBinary(launcher, d, name, args);
  };
  const std::string results = MakeCheckout(dir);
  const std::string scenario = WriteScenario(dir, 1, 0);
  // Through a relative path with `..`, as a user might type it.
  const std::string out = dir + "/checkout/runs/../results/run";
  Finished plain = RunLauncher(dir, "plain", {scenario, "--out", out, "--simulate"});
  if (build.clean) {
    EXPECT_TRUE(ExitedWith(plain.status, 0)) << plain.log;
    ExpectLaunchRecords(ManifestOf(out), build);
  } else {
    EXPECT_TRUE(ExitedWith(plain.status, 2)) << plain.log;
    EXPECT_NE(plain.log.find("--out " + out + " is inside " + results), std::string::npos)
        << plain.log;
    EXPECT_NE(plain.log.find("pass --allow-dirty to write there anyway"), std::string::npos)
        << plain.log;
    EXPECT_FALSE(fs::exists(out)) << "a refused launch wrote nothing";
  }

  const std::string allowed = results + "/allowed";
  Finished run =
      RunLauncher(dir, "allowed", {scenario, "--out", allowed, "--simulate", "--allow-dirty"});
  EXPECT_TRUE(ExitedWith(run.status, 0)) << run.log;
  if (!ExitedWith(run.status, 0)) return build;
  const toml::table m = ManifestOf(allowed);
  ExpectLaunchRecords(m, build);
  EXPECT_EQ(Text(m, "launches[0].command[5]"), "--allow-dirty");

  // `report` rewrites summary.csv: the same rule.
  const std::string summary = ReadText(allowed + "/summary.csv");
  Finished report = RunLauncher(dir, "report", {"report", allowed});
  EXPECT_TRUE(ExitedWith(report.status, build.clean ? 0 : 2)) << report.log;
  if (!build.clean) {
    EXPECT_NE(report.log.find("RUN_DIR " + allowed + " is inside " + results), std::string::npos)
        << report.log;
    EXPECT_EQ(ReadText(allowed + "/summary.csv"), summary);
  }
  Finished allowed_report =
      RunLauncher(dir, "report-allowed", {"report", allowed, "--allow-dirty"});
  EXPECT_TRUE(ExitedWith(allowed_report.status, 0)) << allowed_report.log;

  // Outside results/, any build writes.
  Finished elsewhere =
      RunLauncher(dir, "elsewhere", {scenario, "--out", dir + "/runs/e2e", "--simulate"});
  EXPECT_TRUE(ExitedWith(elsewhere.status, 0)) << elsewhere.log;
  return build;
}

TEST(BuildIdentity, ALaunchIntoACheckoutsResultsNeedsACleanBuildOrAllowDirty) {
  ExpectLaunchesIntoResultsFollowTheRule(MESHLEARN_LAUNCH_BIN,
                                         ::testing::TempDir() + "/e2e_kept_results");
}

TEST(BuildIdentity, ADirtyBuildIsRefusedResultsAndAllowDirtyWritesThere) {
  const PrintedBuild build = ExpectLaunchesIntoResultsFollowTheRule(
      MESHLEARN_LAUNCH_DIRTY_BIN, ::testing::TempDir() + "/e2e_kept_results_dirty");
  EXPECT_FALSE(build.clean) << "meshlearn-launch-dirty is built with a dirty tree's identity";
  EXPECT_EQ(build.diff_hash.size(), 16u);
}

// A fuzz run by `launcher` writes its manifest, and into a checkout's results/ follows the rule
// (see the file comment), in a fresh `dir`; returns the build it printed.
PrintedBuild ExpectAFuzzRunWritesItsManifest(const std::string& launcher, const std::string& dir) {
  fs::remove_all(dir);
  const PrintedBuild build = VersionOf(launcher, dir);
  auto RunLauncher = [&](const std::string& d, const std::string& name,
                         const std::vector<std::string>& args) {
    return RunLauncherBinary(launcher, d, name, args);
  };
  const std::string out = dir + "/fuzz";
  const std::vector<std::string> command = {
      "fuzz", "--seeds", "1", "--from", "7", "--nodes", "3", "--rounds", "1", "--determinism-every",
      "0",    "--out",   out};
  Finished fuzz = RunLauncher(dir, "fuzz", command);
  EXPECT_TRUE(ExitedWith(fuzz.status, 0)) << fuzz.log;
  if (!ExitedWith(fuzz.status, 0)) return build;
  const toml::table m = ManifestOf(out);
  EXPECT_EQ(Integer(m, "format"), 1);
  EXPECT_EQ(Text(m, "status"), "complete");
  EXPECT_EQ(Integer(m, "fuzz.from"), 7);
  EXPECT_EQ(Integer(m, "fuzz.seeds"), 1);
  EXPECT_EQ(Integer(m, "fuzz.failed"), 0);
  EXPECT_FALSE(Text(m, "started").empty());
  EXPECT_GE(Text(m, "ended"), Text(m, "started"));
  EXPECT_EQ(Count(m, "launches"), 1u);
  if (Count(m, "launches") != 1u) return build;
  EXPECT_EQ(Text(m, "launches[0].mode"), "fuzz");
  EXPECT_EQ(Text(m, "launches[0].status"), "complete");
  EXPECT_EQ(Text(m, "launches[0].command[1]"), "fuzz");
  EXPECT_EQ(Count(m, "launches[0].command"), command.size() + 1);
  EXPECT_FALSE(Text(m, "launches[0].libraries.libtorch").empty());
  ExpectLaunchRecords(m, build);
  EXPECT_TRUE(fs::exists(out + "/fuzz.csv"));

  // Into a checkout's results/, the launcher's rule.
  const std::string results = MakeCheckout(dir);
  std::vector<std::string> kept = command;
  kept.back() = results + "/fuzz";
  Finished into_results = RunLauncher(dir, "fuzz-results", kept);
  EXPECT_TRUE(ExitedWith(into_results.status, build.clean ? 0 : 2)) << into_results.log;
  EXPECT_EQ(fs::exists(results + "/fuzz/manifest.toml"), build.clean);
  if (!build.clean) {
    kept.back() = results + "/fuzz-allowed";
    kept.push_back("--allow-dirty");
    Finished allowed = RunLauncher(dir, "fuzz-allowed", kept);
    EXPECT_TRUE(ExitedWith(allowed.status, 0)) << allowed.log;
    ExpectLaunchRecords(ManifestOf(results + "/fuzz-allowed"), build);
  }
  return build;
}

TEST(BuildIdentity, AFuzzRunWritesItsManifest) {
  ExpectAFuzzRunWritesItsManifest(MESHLEARN_LAUNCH_BIN,
                                  ::testing::TempDir() + "/e2e_fuzz_manifest");
}

TEST(BuildIdentity, ADirtyBuildsFuzzRunIsRefusedResultsAndAllowDirtyWritesThere) {
  const PrintedBuild build = ExpectAFuzzRunWritesItsManifest(
      MESHLEARN_LAUNCH_DIRTY_BIN, ::testing::TempDir() + "/e2e_fuzz_manifest_dirty");
  EXPECT_FALSE(build.clean) << "meshlearn-launch-dirty is built with a dirty tree's identity";
}

}  // namespace
}  // namespace meshlearn::e2e
