// meshlearn-launch and its run folder (--out): a second launch never loses a run, --force and
// --resume do what docs/experiments.md "Run folders" says, every run has a manifest, and the
// launcher's messages point at the real cause. An interrupted run and a node restarted by hand:
// run_folder_reliability_test.cc.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <map>

#include <toml++/toml.h>

#include "tests/e2e/run_folder_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

TEST(RunFolder, ASecondLaunchIntoTheSameOutIsRefusedAndChangesNothing) {
  std::string dir = ::testing::TempDir() + "/e2e_run_twice";
  std::filesystem::remove_all(dir);
  std::string scenario = WriteScenario(dir, 3, 0);
  std::string out = dir + "/out";
  Finished first = RunLauncher(dir, "first", {scenario, "--out", out, "--simulate"});
  ASSERT_TRUE(ExitedWith(first.status, 0)) << first.log;
  std::ofstream(out + "/notes.txt") << "my notes on this run\n";
  std::ofstream(out + "/random/analysis.txt") << "my analysis\n";
  std::map<std::string, std::string> before = Files(out);

  Finished second = RunLauncher(dir, "second", {scenario, "--out", out, "--simulate"});
  EXPECT_TRUE(ExitedWith(second.status, 2)) << second.log;
  EXPECT_NE(second.log.find(out + " already holds a run (scenario 'e2e', seed 3"),
            std::string::npos)
      << second.log;
  EXPECT_NE(second.log.find("--resume continues that run, --force replaces it"), std::string::npos)
      << second.log;
  EXPECT_EQ(Files(out), before) << "the refused launch changed the run folder";

  // Another seed or another method subset is refused just the same.
  Finished seed = RunLauncher(
      dir, "seed", {scenario, "--out", out, "--simulate", "--seed", "4", "--methods", "random"});
  EXPECT_TRUE(ExitedWith(seed.status, 2)) << seed.log;
  EXPECT_EQ(Files(out), before);

  // A method named twice is refused before anything is written.
  Finished twice =
      RunLauncher(dir, "twice", {scenario, "--out", dir + "/twice", "--methods", "random,random"});
  EXPECT_TRUE(ExitedWith(twice.status, 2)) << twice.log;
  EXPECT_NE(twice.log.find("--methods names 'random' more than once"), std::string::npos)
      << twice.log;
  EXPECT_FALSE(std::filesystem::exists(dir + "/twice"));

  // A folder with files of the user's own and no run is refused, even with --force.
  std::filesystem::create_directories(dir + "/mine");
  std::ofstream(dir + "/mine/summary.csv") << "my own summary\n";
  for (const char* force : {"", "--force"}) {
    std::vector<std::string> args = {scenario, "--out", dir + "/mine", "--simulate"};
    if (*force) args.push_back(force);
    Finished mine = RunLauncher(dir, "mine", args);
    EXPECT_TRUE(ExitedWith(mine.status, 2)) << mine.log;
    EXPECT_NE(mine.log.find("is not empty and holds no meshlearn run"), std::string::npos)
        << mine.log;
    EXPECT_EQ(Files(dir + "/mine"),
              (std::map<std::string, std::string>{{"summary.csv", "my own summary\n"}}));
  }
}

TEST(RunFolder, TheManifestRecordsTheScenarioVersionsHostTimesAndStatus) {
  std::string dir = ::testing::TempDir() + "/e2e_run_manifest";
  std::filesystem::remove_all(dir);
  std::string scenario = WriteScenario(dir, 3, 0);
  std::string out = dir + "/out";
  Finished run = RunLauncher(
      dir, "run",
      {scenario, "--out", out, "--simulate", "--set", "node.learning.peers_per_round=1"});
  ASSERT_TRUE(ExitedWith(run.status, 0)) << run.log;
  toml::table m = ManifestOf(out);
  EXPECT_EQ(Text(m, "status"), "complete");
  EXPECT_EQ(Text(m, "scenario.name"), "e2e");
  EXPECT_EQ(Text(m, "scenario.file"), scenario);
  EXPECT_EQ(Text(m, "scenario.text"), ReadText(scenario)) << "the scenario text as given";
  EXPECT_NE(Text(m, "scenario.resolved").find("peers_per_round = 1"), std::string::npos)
      << Text(m, "scenario.resolved");
  EXPECT_EQ(Integer(m, "seed"), 3);
  EXPECT_EQ(Integer(m, "nodes"), 6);
  EXPECT_FALSE(Text(m, "started").empty());
  EXPECT_GE(Text(m, "ended"), Text(m, "started"));
  ASSERT_EQ(Count(m, "launches"), 1u);
  std::vector<std::string> command;
  if (const toml::array* a = m.at_path("launches[0].command").as_array()) {
    for (const toml::node& arg : *a) command.push_back(arg.value_or(std::string()));
  }
  EXPECT_EQ(command,
            (std::vector<std::string>{MESHLEARN_LAUNCH_BIN, scenario, "--out", out, "--simulate",
                                      "--set", "node.learning.peers_per_round=1"}));
  EXPECT_EQ(Text(m, "launches[0].mode"), "simulated");
  EXPECT_EQ(Text(m, "launches[0].status"), "complete");
  // Built from a git checkout: the version names the commit.
  EXPECT_EQ(Text(m, "launches[0].version").rfind("0.1.0+git.", 0), 0u)
      << Text(m, "launches[0].version");
  for (const char* library : {"compiler", "libtorch", "zeromq", "msgpack-c", "toml++", "spdlog",
                              "boost", "zlib", "igraph"}) {
    EXPECT_FALSE(Text(m, std::string("launches[0].libraries.") + library).empty()) << library;
  }
  for (const char* fact : {"name", "system", "cores", "memory_mib"}) {
    EXPECT_FALSE(Text(m, std::string("launches[0].host.") + fact).empty()) << fact;
  }
  ASSERT_EQ(Count(m, "methods"), 2u);
  for (const char* method : {"methods[0]", "methods[1]"}) {
    std::string at = method;
    EXPECT_EQ(Text(m, at + ".status"), "complete") << at;
    EXPECT_EQ(Integer(m, at + ".rounds"), 3) << at;
    EXPECT_EQ(Integer(m, at + ".first_node_round"), 3) << at;
    EXPECT_EQ(Integer(m, at + ".last_node_round"), 3) << at;
    EXPECT_EQ(Integer(m, at + ".nodes"), 6) << at;
    EXPECT_FALSE(Text(m, at + ".ended").empty()) << at;
  }
  std::string summary = ReadText(out + "/summary.csv");
  EXPECT_NE(summary.find(",status,rounds,first_node_round,last_node_round,"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find(",complete,3,3,3,,,,"), std::string::npos) << summary;
}

TEST(RunFolder, ForceReplacesOnlyMeshlearnFilesAndResumeAddsMethodsToTheSameRun) {
  std::string dir = ::testing::TempDir() + "/e2e_run_force";
  std::filesystem::remove_all(dir);
  std::string scenario = WriteScenario(dir, 3, 0);
  std::string out = dir + "/out";
  Finished first =
      RunLauncher(dir, "first", {scenario, "--out", out, "--simulate", "--methods", "cos_weights"});
  ASSERT_TRUE(ExitedWith(first.status, 0)) << first.log;
  std::ofstream(out + "/notes.txt") << "notes\n";
  std::ofstream(out + "/cos_weights/analysis.txt") << "analysis\n";
  std::ofstream(out + "/cos_weights/node-2/my-plot.txt") << "plot\n";

  Finished force = RunLauncher(
      dir, "force",
      {scenario, "--out", out, "--simulate", "--force", "--seed", "4", "--methods", "random"});
  ASSERT_TRUE(ExitedWith(force.status, 0)) << force.log;
  EXPECT_NE(force.log.find("--force kept 3 file(s) meshlearn did not write:"), std::string::npos)
      << force.log;
  for (const char* kept :
       {"notes.txt", "cos_weights/analysis.txt", "cos_weights/node-2/my-plot.txt"}) {
    EXPECT_NE(force.log.find(out + "/" + kept), std::string::npos) << kept << "\n" << force.log;
    EXPECT_TRUE(std::filesystem::exists(out + "/" + kept)) << kept;
  }
  // The replaced run's files are gone, its folders too where nothing of the user's stayed.
  EXPECT_FALSE(std::filesystem::exists(out + "/cos_weights/heatmap.csv"));
  EXPECT_FALSE(std::filesystem::exists(out + "/cos_weights/node-0"));
  EXPECT_FALSE(std::filesystem::exists(out + "/cos_weights/node-2/rounds.csv"));
  EXPECT_EQ(Integer(ManifestOf(out), "seed"), 4);
  EXPECT_EQ(Count(ManifestOf(out), "launches"), 1u);
  std::string summary = ReadText(out + "/summary.csv");
  EXPECT_NE(summary.find("\"random\","), std::string::npos) << summary;
  EXPECT_EQ(summary.find("\"cos_weights\","), std::string::npos) << summary;

  // --resume checks the scenario as run: another seed is refused, and nothing changes.
  std::map<std::string, std::string> before = Files(out);
  Finished other = RunLauncher(dir, "other",
                               {scenario, "--out", out, "--simulate", "--resume", "--seed", "5",
                                "--methods", "cos_weights"});
  EXPECT_TRUE(ExitedWith(other.status, 2)) << other.log;
  EXPECT_NE(other.log.find("--resume: " + out + " holds a run of another scenario or seed"),
            std::string::npos)
      << other.log;
  EXPECT_NE(other.log.find("'seed = 4' where this one has 'seed = 5'"), std::string::npos)
      << other.log;
  EXPECT_EQ(Files(out), before);

  // The same run resumed with another method: both are in the table and in summary.csv.
  Finished resume = RunLauncher(dir, "resume",
                                {scenario, "--out", out, "--simulate", "--resume", "--seed", "4",
                                 "--methods", "cos_weights"});
  ASSERT_TRUE(ExitedWith(resume.status, 0)) << resume.log;
  EXPECT_NE(resume.log.find("method 'random' completed in an earlier launch"), std::string::npos)
      << resume.log;
  summary = ReadText(out + "/summary.csv");
  EXPECT_NE(summary.find("\"random\","), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"cos_weights\","), std::string::npos) << summary;
  EXPECT_EQ(ReadText(out + "/random/node-0/rounds.csv"), before["random/node-0/rounds.csv"]);
  std::string simulation = ReadText(out + "/simulation.csv");
  EXPECT_NE(simulation.find("\n\"random\","), std::string::npos) << simulation;
  EXPECT_NE(simulation.find("\n\"cos_weights\","), std::string::npos) << simulation;
  toml::table m = ManifestOf(out);
  EXPECT_EQ(Count(m, "launches"), 2u);
  EXPECT_EQ(Count(m, "methods"), 2u);
  EXPECT_EQ(Text(m, "status"), "complete");
}

TEST(LauncherMessages, NodesZeroIsABadCommandLineWithExitCode2) {
  std::string dir = ::testing::TempDir() + "/e2e_launch_nodes0";
  std::filesystem::remove_all(dir);
  std::string scenario = WriteScenario(dir, 3, 0);
  Finished zero = RunLauncher(dir, "zero", {scenario, "--out", dir + "/out", "--nodes", "0"});
  EXPECT_TRUE(ExitedWith(zero.status, 2)) << zero.log;
  EXPECT_NE(zero.log.find("--nodes"), std::string::npos) << zero.log;
  Finished unknown = RunLauncher(dir, "unknown", {scenario, "--nonesuch"});
  EXPECT_TRUE(ExitedWith(unknown.status, 2)) << unknown.log;
}

TEST(LauncherMessages, AnOutFolderThatCannotBeWrittenSaysWhy) {
  // Root may write anywhere: the launcher runs as user nobody, under a folder only root may
  // write to. Nobody may not enter the build tree (a clone in /root, mode 700), so the folder and
  // a copy of the launcher live under the system's temporary folder.
  ASSERT_EQ(::geteuid(), 0u) << "this test drops to user nobody, which needs root";
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/setpriv")) << "setpriv (util-linux) is missing";
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("meshlearn_e2e_launch_readonly_" + std::to_string(::getpid())))
                        .string();
  std::filesystem::remove_all(dir);
  std::string scenario = WriteScenario(dir, 3, 0);
  const std::string launcher = dir + "/meshlearn-launch";
  std::filesystem::copy_file(MESHLEARN_LAUNCH_BIN, launcher);
  std::string locked = dir + "/locked";
  std::filesystem::create_directories(locked);
  ASSERT_EQ(::chmod(locked.c_str(), 0555), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(scenario.c_str(), 0644), 0);
  Finished run = RunToEnd({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           launcher, scenario, "--out", locked + "/out", "--simulate"},
                          dir + "/readonly.log");
  EXPECT_TRUE(ExitedWith(run.status, 2)) << run.log;
  EXPECT_NE(run.log.find(locked + "/out: cannot create the output folder: Permission denied"),
            std::string::npos)
      << run.log;
  EXPECT_EQ(run.log.find("No such file or directory"), std::string::npos) << run.log;
  std::filesystem::remove_all(dir);
}

// Slurm ends a job at its time limit with SIGTERM. A simulated run with snapshots stops at its
// next snapshot, and --resume continues from there to the same files as a run never stopped.
TEST(RunFolder, ASimulatedRunStoppedBySigtermResumesToTheFilesOfOneNeverStopped) {
  std::string dir = ::testing::TempDir() + "/e2e_run_sigterm";
  std::filesystem::remove_all(dir);
  // 20,000 rounds of 6 linear nodes: about 15 s of simulation here, long enough for the signal
  // to come in the middle, whatever the machine.
  constexpr int kRounds = 20000;
  std::string scenario = WriteScenario(dir, kRounds, 0);
  std::vector<std::string> common = {scenario,    "--methods", "random",           "--simulate",
                                     "--threads", "1",         "--snapshot-every", "1000"};
  auto with = [&](std::vector<std::string> args, const std::string& out) {
    args.insert(args.end(), {"--out", out});
    args.insert(args.begin(), common.begin(), common.end());
    return args;
  };
  Finished whole = RunLauncher(dir, "whole", with({}, dir + "/whole"));
  ASSERT_TRUE(ExitedWith(whole.status, 0)) << whole.log;

  std::vector<std::string> args = with({}, dir + "/stopped");
  args.insert(args.begin(), MESHLEARN_LAUNCH_BIN);
  auto launcher = ChildProcess::Start(args, dir + "/first.log");
  ASSERT_TRUE(launcher.has_value());
  // The progress line comes about once a second: the simulation is under way.
  ASSERT_TRUE(WaitFor(
      [&] { return ReadText(dir + "/first.log").find("[random] round ") != std::string::npos; },
      seconds(300)))
      << ReadText(dir + "/first.log");
  ASSERT_EQ(ReadText(dir + "/first.log").find("round 20000/20000"), std::string::npos)
      << "the simulation ended before the signal could interrupt it";
  launcher->Signal(SIGTERM);
  EXPECT_TRUE(ExitedWith(launcher->Wait(seconds(300)), 130)) << ReadText(dir + "/first.log");
  std::string log = ReadText(dir + "/first.log");
  size_t at = log.find("[random] stopped at the snapshot after round ");
  ASSERT_NE(at, std::string::npos) << log;
  EXPECT_EQ(Text(ManifestOf(dir + "/stopped"), "status"), "interrupted");

  Finished resumed = RunLauncher(dir, "resume", with({"--resume"}, dir + "/stopped"));
  ASSERT_TRUE(ExitedWith(resumed.status, 0)) << resumed.log;
  EXPECT_NE(resumed.log.find("[random] resumed from the snapshot after round "), std::string::npos)
      << resumed.log;
  for (int i = 0; i < 6; ++i) {
    for (const char* file : {"rounds.csv", "comm.csv", "scores.csv"}) {
      std::string node = "/random/node-" + std::to_string(i) + "/" + file;
      std::string expected = ReadText(dir + "/whole" + node);
      EXPECT_EQ(std::count(expected.begin(), expected.end(), '\n'),
                std::string(file) == "rounds.csv" ? kRounds + 2 : 6)
          << node;
      EXPECT_EQ(ReadText(dir + "/stopped" + node), expected) << node;
    }
  }
  EXPECT_EQ(ReadText(dir + "/stopped/random/heatmap.csv"),
            ReadText(dir + "/whole/random/heatmap.csv"));
  // The method's cost counts the launch that SIGTERM stopped too, up to its snapshot.
  auto simulation = RowOf(dir + "/stopped/simulation.csv", "random");
  ASSERT_FALSE(simulation["earlier_real_s"].empty()) << ReadText(dir + "/stopped/simulation.csv");
  const double earlier = std::stod(simulation["earlier_real_s"]);
  EXPECT_GT(earlier, 0);
  EXPECT_GT(std::stod(simulation["earlier_compute_s"]), 0);
  EXPECT_GE(std::stod(RowOf(dir + "/stopped/summary.csv", "random")["wall_s"]),
            earlier + std::stod(simulation["real_s"]));
  EXPECT_EQ(RowOf(dir + "/whole/simulation.csv", "random")["earlier_real_s"], "0");
}

// The cnn trains on the fast path (issue 29: channels-last layers, the step without autograd) in
// the simulator's workers; a seed gives the same files whatever the number of threads.
TEST(RunFolder, ASimulatedCnnRunIsByteIdenticalWithOneAndTwoThreads) {
  std::string dir = ::testing::TempDir() + "/e2e_run_cnn_threads";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string scenario = std::string(MESHLEARN_SOURCE_DIR) + "/configs/quickstart.toml";
  auto run = [&](const std::string& threads) {
    Finished finished = RunLauncher(
        dir, "threads-" + threads,
        {scenario, "--simulate", "--methods", "cos_weights", "--set", "node.training.rounds=3",
         "--threads", threads, "--out", dir + "/threads-" + threads});
    EXPECT_TRUE(ExitedWith(finished.status, 0)) << finished.log;
  };
  run("1");
  run("2");
  ExpectIdenticalMethodFiles(dir + "/threads-1", dir + "/threads-2", "cos_weights", 12);
}

}  // namespace
}  // namespace meshlearn::e2e
