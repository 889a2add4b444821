// The run manifest and the fuzz run's (tools/scenario/manifest.h): render -> parse -> render gives
// the same bytes, old manifests without the build's keys still read, and a damaged manifest is
// refused naming the key, as every TOML file is (node/config/toml_reader.h).
#include "tools/scenario/manifest.h"

#include <gtest/gtest.h>

#include "process/build_identity.h"

namespace meshlearn::launch {
namespace {

Manifest TwoMethods() {
  Manifest m;
  m.status = kComplete;
  m.started = "2026-11-26T07:00:00Z";
  m.scenario_name = "toy";
  m.seed = 4;
  m.nodes = 6;
  m.resolved = "name = \"toy\"\n";
  LaunchRecord launch;
  launch.command = {"meshlearn-launch", "toy.toml", "--simulate"};
  launch.mode = "simulated";
  launch.host = {{"cores", "2"}};
  m.launches = {launch};
  MethodRecord simulated;
  simulated.name = "random";
  simulated.status = kComplete;
  simulated.wall_seconds = 313;
  simulated.simulated_seconds = 5;
  MethodRecord real = simulated;
  real.name = "oracle";
  real.simulated_seconds.reset();
  m.methods = {simulated, real};
  return m;
}

TEST(Manifest, RoundTripsRealAndSimulatedSeconds) {
  std::string text = RenderManifest(TwoMethods());
  auto parsed = ParseManifest(text, "manifest.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(RenderManifest(*parsed), text);
  ASSERT_EQ(parsed->methods.size(), 2u);
  EXPECT_EQ(parsed->methods[0].wall_seconds, 313);
  EXPECT_EQ(parsed->methods[0].simulated_seconds, 5);
  EXPECT_FALSE(parsed->methods[1].simulated_seconds.has_value());
  EXPECT_NE(text.find("simulated_s = 5"), std::string::npos) << text;
}

TEST(Manifest, AMissingOrUnknownKeyIsNamed) {
  std::string text = RenderManifest(TwoMethods());
  std::string missing = text;
  missing.erase(missing.find("nodes_failed = 0"), std::string("nodes_failed = 0").size());
  auto parsed = ParseManifest(missing, "run/manifest.toml");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), ErrorCode::kMalformed);
  EXPECT_NE(parsed.status().message().find("run/manifest.toml: missing required key "
                                           "'methods[0].nodes_failed'"),
            std::string::npos)
      << parsed.status().message();

  // Appended at the end, the key belongs to the last [[methods]] table.
  // Appended at the end, the key belongs to the last [[methods]] table.
  auto unknown = ParseManifest(text + "colour = \"blue\"\n", "run/manifest.toml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown key 'methods[1].colour'"), std::string::npos)
      << unknown.status().message();
}

// A launch records its binary's build; manifests written before builds knew it (results/ keeps
// about 230) have none of the three keys, read as not set and render back without them.
TEST(Manifest, RecordsTheBuildAndReadsManifestsWithoutIt) {
  const std::string before = RenderManifest(TwoMethods());
  EXPECT_EQ(before.find("commit"), std::string::npos) << before;
  auto old = ParseManifest(before, "old/manifest.toml");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_FALSE(old->launches[0].commit || old->launches[0].clean || old->launches[0].diff_hash);
  EXPECT_EQ(RenderManifest(*old), before);

  Manifest dirty = TwoMethods();
  dirty.launches[0].commit = std::string(40, 'e');
  dirty.launches[0].clean = false;
  dirty.launches[0].diff_hash = "0123456789abcdef";
  const std::string text = RenderManifest(dirty);
  for (const char* line : {"clean = false", "diff_hash = '0123456789abcdef'"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  auto parsed = ParseManifest(text, "manifest.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->launches[0].commit, std::string(40, 'e'));
  EXPECT_EQ(parsed->launches[0].clean, false);
  EXPECT_EQ(parsed->launches[0].diff_hash, "0123456789abcdef");
  EXPECT_EQ(RenderManifest(*parsed), text);

  std::string wrong = text;
  wrong.replace(wrong.find("clean = false"), 13, "clean = 'no'");
  auto refused = ParseManifest(wrong, "run/manifest.toml");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'launches[0].clean'"), std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("must be true or false"), std::string::npos)
      << refused.status().message();
}

// ThisLaunch records this binary's build (process/build_identity.h), not the working folder's.
TEST(Manifest, ThisLaunchRecordsThisBinarysBuild) {
  const node::BuildIdentity& build = node::ThisBuild();
  const LaunchRecord launch = ThisLaunch({"meshlearn-launch", "fuzz"}, "fuzz");
  EXPECT_EQ(launch.version, build.version);
  EXPECT_EQ(launch.commit, build.commit);
  EXPECT_EQ(launch.clean, build.clean);
  EXPECT_EQ(launch.diff_hash.has_value(), !build.diff_hash.empty());
  EXPECT_EQ(launch.mode, "fuzz");
  EXPECT_FALSE(launch.started.empty());
  EXPECT_FALSE(launch.libraries.empty());
}

TEST(FuzzManifest, RoundTripsAndIsRefusedAsARunManifest) {
  FuzzManifest m;
  m.status = kFailed;
  m.started = "2026-12-02T10:00:00Z";
  m.ended = "2026-12-02T10:20:00Z";
  m.from = 1;
  m.seeds = 1000;
  m.failed = 2;
  m.launches = TwoMethods().launches;
  m.launches[0].mode = "fuzz";
  m.launches[0].commit = std::string(40, 'f');
  m.launches[0].clean = true;
  const std::string text = RenderFuzzManifest(m);
  EXPECT_EQ(text.rfind("# meshlearn fuzz manifest", 0), 0u) << text;
  auto parsed = ParseFuzzManifest(text, "fuzz/manifest.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(RenderFuzzManifest(*parsed), text);
  EXPECT_EQ(parsed->seeds, 1000u);
  EXPECT_EQ(parsed->failed, 2u);
  EXPECT_EQ(parsed->launches[0].clean, true);
  // Each reader reads its own file only.
  EXPECT_FALSE(ParseManifest(text, "fuzz/manifest.toml").ok());
  EXPECT_FALSE(ParseFuzzManifest(RenderManifest(TwoMethods()), "run/manifest.toml").ok());
}

}  // namespace
}  // namespace meshlearn::launch
