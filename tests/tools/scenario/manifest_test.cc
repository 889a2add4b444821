// The run manifest (tools/scenario/manifest.h): render -> parse -> render gives the same bytes, and
// a damaged manifest is refused naming the key, as every TOML file is (node/config/toml_reader.h).
#include "tools/scenario/manifest.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace meshlearn::launch
