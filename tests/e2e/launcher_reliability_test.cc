// meshlearn-launch as a user runs it, where reliability is at stake (label `reliability`): a mesh
// made secure by one key (security = true), and a node killed mid-run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include "tests/e2e/launcher_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

TEST(Launcher, SecurityTrueGivesEveryNodeAKeyAndTheEncryptedMeshExchangesModels) {
  std::string dir = ::testing::TempDir() + "/e2e_launch_security";
  std::filesystem::remove_all(dir);
  std::string scenario = WriteScenario(dir, 5, 0);
  std::string out = dir + "/out";
  auto launcher = ChildProcess::Start({MESHLEARN_LAUNCH_BIN, scenario, "--out", out, "--set",
                                       "security=true", "--methods", "random"},
                                      dir + "/launch.log");
  ASSERT_TRUE(launcher.has_value());
  EXPECT_TRUE(ExitedWith(launcher->Wait(seconds(300)), 0)) << ReadText(dir + "/launch.log");
  std::string keys = out + "/random/keys";
  std::string allowlist = ReadText(keys + "/allowed_keys");
  int sampled = 0, answered = 0;
  for (int i = 0; i < 6; ++i) {
    std::string id = std::to_string(i);
    std::string node = out + "/random/node-" + id;
    struct stat info {};
    ASSERT_EQ(::stat((keys + "/node-" + id + ".key").c_str(), &info), 0) << id;
    EXPECT_EQ(info.st_mode & 0777, 0600u) << id;
    std::string public_key = ReadText(keys + "/node-" + id + ".pub");
    public_key = public_key.substr(public_key.find('\n') + 1, 40);
    // Each key is bound to its node's id (issue 17, item 6), the key file's name as a comment.
    EXPECT_NE(allowlist.find(public_key + " " + id + "  # node-" + id), std::string::npos)
        << allowlist;
    EXPECT_EQ(ReadText(node + "/node.log").find("bound to no node id"), std::string::npos)
        << ReadText(node + "/node.log");
    std::string config = ReadText(node + "/node.toml");
    EXPECT_NE(config.find("[security]"), std::string::npos) << config;
    EXPECT_NE(ReadText(node + "/node.log").find("traffic is encrypted (CURVE)"), std::string::npos)
        << ReadText(node + "/node.log");
    auto rows = Rounds(node);
    EXPECT_EQ(rows.size(), 6u) << id;
    int node_answered = 0;
    for (const auto& row : rows) {
      sampled += row.sampled;
      node_answered += row.answered;
    }
    EXPECT_GT(node_answered, 0) << id << " received no model";
    answered += node_answered;
  }
  EXPECT_EQ(sampled, 6 * 5 * 2);
  EXPECT_GE(answered, sampled / 2) << "most requests of the encrypted mesh are answered";
}

TEST(Launcher, NodeKilledMidRunIsReportedAndTheOthersResultsAreWritten) {
  std::string dir = ::testing::TempDir() + "/e2e_launch_kill";
  std::filesystem::remove_all(dir);
  // A 2 s deadline: the survivors must notice the dead node within the run.
  std::string scenario = WriteScenario(dir, 20, 0.15, 2);
  std::string out = dir + "/out";
  auto launcher = ChildProcess::Start({MESHLEARN_LAUNCH_BIN, scenario, "--out", out, "--set",
                                       "methods=[{name=\"random\", "
                                       "learning={sampler=\"random\"}}]"},
                                      dir + "/launch.log");
  ASSERT_TRUE(launcher.has_value());
  std::string victim = out + "/random/node-4";
  ASSERT_TRUE(WaitFor([&] { return LastRound(victim) >= 3; }, seconds(120)))
      << ReadText(dir + "/launch.log");
  // The whole path: another test may run a node 4 of a "random" method at the same time.
  pid_t pid = FindNodeProcess(victim + "/node.toml");
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGKILL);
  auto status = launcher->Wait(seconds(300));
  std::string log = ReadText(dir + "/launch.log");
  EXPECT_TRUE(ExitedWith(status, 3)) << log;  // results written, some nodes failed
  EXPECT_NE(log.find("node 4 died: killed by signal 9"), std::string::npos) << log;
  EXPECT_NE(log.find("(1 of 6 nodes failed)"), std::string::npos) << log;
  for (int i = 0; i < 6; ++i) {
    if (i == 4) continue;
    EXPECT_EQ(Rounds(out + "/random/node-" + std::to_string(i)).size(), 21u) << i;
  }
  EXPECT_NE(ReadText(out + "/summary.csv").find("\"random\",mse"), std::string::npos);
  EXPECT_TRUE(IsPng(out + "/random/heatmap.png"));
}

}  // namespace
}  // namespace meshlearn::e2e
