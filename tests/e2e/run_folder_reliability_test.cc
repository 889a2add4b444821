// meshlearn-launch's run folder under faults (label `reliability`): an interrupted run says so
// and resumes, and a node killed and restarted by hand is not a failure.
#include <gtest/gtest.h>
#include <signal.h>

#include "tests/e2e/run_folder_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

TEST(RunFolder, AnInterruptedRunSaysSoAndResumeCompletesIt) {
  std::string dir = ::testing::TempDir() + "/e2e_run_interrupted";
  std::filesystem::remove_all(dir);
  std::string scenario = WriteScenario(dir, 10, 0.3);
  std::string out = dir + "/out";
  auto launcher = ChildProcess::Start(
      {MESHLEARN_LAUNCH_BIN, scenario, "--out", out, "--methods", "random"}, dir + "/first.log");
  ASSERT_TRUE(launcher.has_value());
  ASSERT_TRUE(WaitFor([&] { return LastRound(out + "/random/node-0") >= 2; }, seconds(300)))
      << ReadText(dir + "/first.log");
  launcher->Signal(SIGINT);
  EXPECT_TRUE(ExitedWith(launcher->Wait(seconds(300)), 130)) << ReadText(dir + "/first.log");
  std::string log = ReadText(dir + "/first.log");
  EXPECT_NE(log.find("(interrupted: nodes reached rounds "), std::string::npos) << log;
  EXPECT_NE(log.find("continue the run with --resume"), std::string::npos) << log;

  toml::table m = ManifestOf(out);
  EXPECT_EQ(Text(m, "status"), "interrupted");
  ASSERT_EQ(Count(m, "methods"), 1u);
  EXPECT_EQ(Text(m, "methods[0].status"), "interrupted");
  int64_t first = Integer(m, "methods[0].first_node_round");
  int64_t last = Integer(m, "methods[0].last_node_round");
  EXPECT_GE(first, 0);
  EXPECT_LT(last, 10);
  std::string summary = ReadText(out + "/summary.csv");
  std::string expected =
      ",interrupted,10," + std::to_string(first) + "," + std::to_string(last) + ",,,,";
  EXPECT_NE(summary.find(expected), std::string::npos) << summary;

  Finished resumed =
      RunLauncher(dir, "resume", {scenario, "--out", out, "--methods", "random", "--resume"});
  ASSERT_TRUE(ExitedWith(resumed.status, 0)) << resumed.log;
  for (int i = 0; i < 6; ++i) {
    std::string node = out + "/random/node-" + std::to_string(i);
    EXPECT_EQ(ExpectConsecutiveRounds(node), 11u) << node;
    EXPECT_NE(ReadText(node + "/node.log").find("resuming after round"), std::string::npos) << node;
  }
  m = ManifestOf(out);
  EXPECT_EQ(Text(m, "status"), "complete");
  EXPECT_EQ(Count(m, "launches"), 2u);
  EXPECT_EQ(Text(m, "methods[0].status"), "complete");
  EXPECT_NE(ReadText(out + "/summary.csv").find(",complete,10,10,10,,,,"), std::string::npos);
}

TEST(RunFolder, ANodeKilledAndRestartedByHandIsNotCountedAsFailed) {
  std::string dir = ::testing::TempDir() + "/e2e_run_restarted";
  std::filesystem::remove_all(dir);
  // A 2 s deadline: the survivors notice the dead node within the run.
  std::string scenario = WriteScenario(dir, 20, 0.3, 2);
  std::string out = dir + "/out";
  auto launcher = ChildProcess::Start(
      {MESHLEARN_LAUNCH_BIN, scenario, "--out", out, "--methods", "random"}, dir + "/launch.log");
  ASSERT_TRUE(launcher.has_value());
  std::string victim = out + "/random/node-4";
  ASSERT_TRUE(WaitFor([&] { return LastRound(victim) >= 3; }, seconds(300)))
      << ReadText(dir + "/launch.log");
  pid_t pid = FindNodeProcess(victim + "/node.toml");
  ASSERT_GT(pid, 0);
  // The other nodes are paused (SIGSTOP) from the kill until the restarted node holds its
  // folder, so that the run cannot end before the restart however slowly it starts; they go on
  // (SIGCONT) on every path out of this test.
  std::vector<pid_t> others;
  for (int i : {0, 1, 2, 3, 5}) {
    others.push_back(FindNodeProcess(out + "/random/node-" + std::to_string(i) + "/node.toml"));
    ASSERT_GT(others.back(), 0) << "node " << i << " is not running";
  }
  struct Resume {
    const std::vector<pid_t>& pids;
    ~Resume() {
      for (pid_t p : pids) ::kill(p, SIGCONT);
    }
  } resume_others{others};
  for (pid_t p : others) ::kill(p, SIGSTOP);
  ::kill(pid, SIGKILL);
  ASSERT_TRUE(WaitFor(
      [&] { return ReadText(dir + "/launch.log").find("node 4 died") != std::string::npos; },
      seconds(120)))
      << ReadText(dir + "/launch.log");
  auto restarted = ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", victim + "/node.toml"},
                                       dir + "/restarted.log");
  ASSERT_TRUE(restarted.has_value());
  ASSERT_TRUE(
      WaitFor([&] { return node::NodeFolderLockHolder(victim) == restarted->pid(); }, seconds(300)))
      << "the restarted node never locked " << victim << ":\n"
      << ReadText(dir + "/restarted.log");
  for (pid_t p : others) ::kill(p, SIGCONT);

  auto status = launcher->Wait(seconds(300));
  std::string log = ReadText(dir + "/launch.log");
  EXPECT_TRUE(ExitedWith(status, 0)) << log;
  EXPECT_NE(log.find("node 4 died, but it was restarted and its folder holds all 20 rounds: "
                     "counted as finished"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("nodes failed"), std::string::npos) << log;
  EXPECT_TRUE(ExitedWith(restarted->Wait(seconds(120)), 0)) << ReadText(dir + "/restarted.log");
  // The restarted node resumed from its checkpoint: every round once, wall_s counting on.
  EXPECT_EQ(ExpectConsecutiveRounds(victim), 21u);
  EXPECT_NE(ReadText(out + "/summary.csv").find(",complete,20,20,20,,,,"), std::string::npos)
      << ReadText(out + "/summary.csv");
}

}  // namespace
}  // namespace meshlearn::e2e
