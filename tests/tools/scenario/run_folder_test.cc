// The launcher's run folder (tools/scenario/run_folder.h) on folders written by hand: what --force
// deletes and what it keeps.
#include "tools/scenario/run_folder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace meshlearn::launch {
namespace {

namespace fs = std::filesystem;

void Touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "x\n";
}

// An engine run (--engine mpirun or slurm) writes its rank script, node template, hostfile, job
// script, engine log and Slurm job id in the method folder and an exit_status in each node folder:
// --force deletes them with the rest of the run and keeps only the user's files.
TEST(RunFolderForce, DeletesAnEngineRunsFilesAndKeepsOnlyTheUsers) {
  std::string dir = ::testing::TempDir() + "/run_folder_force_engine";
  fs::remove_all(dir);
  Manifest previous;
  previous.scenario_name = "e2e";
  previous.status = kComplete;
  MethodRecord method;
  method.name = "random";
  method.status = kComplete;
  previous.methods = {method};
  fs::create_directories(dir);
  std::ofstream(dir + "/manifest.toml") << RenderManifest(previous);
  for (const char* file :
       {"summary.csv", "shards/client-0.shard", "random/hostfile", "random/node-template.toml",
        "random/rank.sh", "random/job.sh", "random/engine.log", "random/slurm_job_id",
        "random/heatmap.csv", "random/full_test.csv", "random/node-0/rounds.csv",
        "random/node-0/node.log", "random/node-0/exit_status", "random/node-1/exit_status",
        "random/node-1/checkpoint.bin"}) {
    Touch(dir + "/" + file);
  }
  Touch(dir + "/random/my-notes.txt");
  Touch(dir + "/random/node-1/my-plot.txt");

  std::vector<std::string> notes;
  auto claimed = ClaimedRunFolder::Claim(dir, ExistingRun::kReplace, Manifest{}, &notes);
  ASSERT_TRUE(claimed.ok()) << claimed.status().message();

  std::vector<std::string> left;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) left.push_back(fs::relative(entry.path(), dir).string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"launch.lock", "manifest.toml", "random/my-notes.txt",
                                            "random/node-1/my-plot.txt"}));
  EXPECT_FALSE(fs::exists(dir + "/random/node-0")) << "a node folder left empty is removed";
  std::string said;
  for (const std::string& line : notes) said += line + "\n";
  EXPECT_NE(said.find("--force kept 2 file(s) meshlearn did not write:"), std::string::npos)
      << said;
}

// A launcher killed (SIGKILL, a power cut) during its first method left a manifest that records
// no method yet: --resume continues that run, and records the killed launch as `killed`.
TEST(RunFolderResume, ARunKilledInItsFirstMethodIsResumed) {
  std::string dir = ::testing::TempDir() + "/run_folder_resume_first";
  fs::remove_all(dir);
  Manifest run;
  run.scenario_name = "e2e";
  run.resolved = "[scenario]\nname = \"e2e\"\nseed = 3\n";
  run.launches = {LaunchRecord{}};
  fs::create_directories(dir);
  std::ofstream(dir + "/manifest.toml") << RenderManifest(run);
  Touch(dir + "/random/node-0/rounds.csv");

  Manifest fresh = run;
  fresh.launches = {LaunchRecord{}};
  fresh.launches[0].command = {"meshlearn-launch", "--resume"};
  std::vector<std::string> notes;
  auto claimed = ClaimedRunFolder::Claim(dir, ExistingRun::kResume, fresh, &notes);
  ASSERT_TRUE(claimed.ok()) << claimed.status().message();
  ASSERT_EQ(claimed->manifest().launches.size(), 2u);
  EXPECT_EQ(claimed->manifest().launches[0].status, kKilled) << "the killed launch says so";
  EXPECT_TRUE(claimed->manifest().launches[0].ended.empty()) << "its end is not known";
  EXPECT_EQ(claimed->manifest().launches[1].status, kRunning);
  EXPECT_TRUE(claimed->manifest().methods.empty());
  EXPECT_TRUE(fs::exists(dir + "/random/node-0/rounds.csv"));
}

}  // namespace
}  // namespace meshlearn::launch
