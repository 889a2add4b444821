// meshlearn-launch on real engines, as root without systemd: a Slurm cluster of three pretend
// hosts on this machine (scripts/local_slurm.sh: munged, slurmctld, three slurmd) and Open MPI's
// mpirun. The nodes take their identity from the engine and bootstrap from rank 0 by host name
// (node1..node3 resolve to 127.0.0.1 through nss_wrapper); the launcher reports from the run
// folder. Each test starts and stops its own engine, with its state in the test's own folder and
// free ports.
#include <dirent.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <regex>

#include "tests/e2e/e2e_support.h"

namespace meshlearn::e2e {
namespace {

using std::chrono::seconds;

// Rounds of the runs compared for equality last at least this long. Rationale: a sync run is
// deterministic while no sampled peer is more than kSnapshotHistory (4) rounds ahead
// (node/logic/model_server.h); unpaced, millisecond rounds of a linear model let a node stalled by
// a loaded machine fall that far behind.
constexpr double kPacedRoundS = 0.5;

// 9 nodes in 3 synthetic clusters (or `clients` nodes in clusters of 3), sync, cos_weights.
// `deadline_s`: the round deadline. Runs compared for equality give live peers a generous one:
// under load a short deadline marks live peers dead and changes the samples. `linger_s`: how long
// a finished node keeps serving; runs compared for equality linger long enough that no node
// leaves (and says Goodbye, which takes it out of its peers' sampling) while another still runs.
std::string WriteScenario(const std::string& dir, int clients, int rounds, double min_round_s,
                          double deadline_s = 5, double linger_s = 1) {
  std::filesystem::create_directories(dir);
  std::string path = dir + "/scenario.toml";
  std::string sizes = clients == 9 ? "[3, 3, 3]" : "[3, 3]";
  std::ofstream(path) << "name = \"engines\"\nseed = 5\n"
                         "[data]\ndataset = \"synthetic\"\nshift = \"synthetic\"\nclients = "
                      << clients << "\ncluster_sizes = " << sizes
                      << "\ntrain_per_client = 60\nvalidation_per_client = 30\n"
                         "test_per_client = 30\n"
                         "[node.model]\narchitecture = \"linear\"\n"
                         "[node.training]\noptimizer = \"sgd\"\nlearning_rate = 0.003\nrounds = "
                      << rounds
                      << "\n[node.learning]\npeers_per_round = 2\n"
                         "[node.round]\nround_deadline_s = "
                      << deadline_s << "\nlinger_s = " << linger_s
                      << "\nmin_round_s = " << min_round_s
                      << "\n[[methods]]\nname = \"cos_weights\"\n"
                         "learning = { metric = \"cos_weights\", tau = 140 }\n";
  return path;
}

std::string SourcePath(const std::string& relative) {
  return std::string(MESHLEARN_SOURCE_DIR) + "/" + relative;
}

// The output of `command` run by the shell (stdout and stderr), and its exit status.
std::pair<int, std::string> Shell(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// A Slurm cluster of three pretend hosts, up for the life of the object.
class SlurmCluster {
 public:
  explicit SlurmCluster(std::string dir) : dir_(std::move(dir)) {
    auto [status, out] =
        Shell("bash " + SourcePath("scripts/local_slurm.sh") + " start " + dir_ + " 3");
    start_output_ = out;
    up_ = status == 0;
    std::smatch m;
    if (std::regex_search(out, m, std::regex("LD_PRELOAD=(\\S+)"))) nss_wrapper_ = m[1];
  }
  ~SlurmCluster() { Shell("bash " + SourcePath("scripts/local_slurm.sh") + " stop " + dir_); }

  bool up() const { return up_; }
  const std::string& start_output() const { return start_output_; }
  // The environment a launcher needs to use this cluster and resolve its host names.
  void Export() const {
    ::setenv("SLURM_CONF", (dir_ + "/slurm.conf").c_str(), 1);
    ::setenv("LD_PRELOAD", nss_wrapper_.c_str(), 1);
    ::setenv("NSS_WRAPPER_HOSTS", (dir_ + "/hosts").c_str(), 1);
  }
  // Slurm's own view of the jobs still queued or running.
  std::string Queue() const {
    return Shell("SLURM_CONF=" + dir_ + "/slurm.conf squeue -h -o '%i %j %T'").second;
  }

 private:
  std::string dir_;
  std::string start_output_;
  std::string nss_wrapper_;
  bool up_ = false;
};

// Runs the launcher with `args` into `log`; returns its wait status.
std::optional<int> Launch(const std::vector<std::string>& args, const std::string& log,
                          seconds timeout = seconds(600)) {
  std::vector<std::string> full = {MESHLEARN_LAUNCH_BIN};
  full.insert(full.end(), args.begin(), args.end());
  auto launcher = ChildProcess::Start(full, log);
  if (!launcher) return std::nullopt;
  return launcher->Wait(timeout);
}

// Every node of `method` sampled the same peers and reached the same losses in every round in
// both run folders.
void ExpectSameSyncRun(const std::string& local, const std::string& engine, int nodes, int rounds) {
  for (int i = 0; i < nodes; ++i) {
    std::string node = "/cos_weights/node-" + std::to_string(i);
    auto a = Rounds(local + node);
    auto b = Rounds(engine + node);
    ASSERT_EQ(a.size(), static_cast<size_t>(rounds + 1)) << local + node;
    ASSERT_EQ(b.size(), a.size()) << engine + node;
    for (size_t r = 0; r < a.size(); ++r) {
      EXPECT_EQ(b[r].peers, a[r].peers) << node << " round " << r;
      EXPECT_NEAR(b[r].test_loss, a[r].test_loss, 1e-6 * a[r].test_loss) << node << " round " << r;
      EXPECT_NEAR(b[r].val_loss, a[r].val_loss, 1e-6 * a[r].val_loss) << node << " round " << r;
    }
  }
}

// The summary.csv row of `method` without its machine- and address-dependent columns (wall_s,
// overhead, peak memory, bytes), for comparing runs.
std::string SummaryMetrics(const std::string& summary_csv) {
  std::istringstream lines(ReadText(summary_csv));
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  std::vector<std::string> names, cells;
  std::istringstream h(header), r(row);
  for (std::string c; std::getline(h, c, ',');) names.push_back(c);
  for (std::string c; std::getline(r, c, ',');) cells.push_back(c);
  std::string kept;
  for (size_t i = 0; i < names.size() && i < cells.size(); ++i) {
    // Bytes differ too: the endpoints that Hellos and PeerLists carry are the engine's host
    // names there and loopback addresses in the local run.
    if (names[i] == "wall_s" || names[i] == "overhead" || names[i].rfind("peak_pss", 0) == 0 ||
        names[i] == "bytes_sent_per_node" || names[i] == "time_to_target_s")
      continue;
    kept += names[i] + "=" + cells[i] + " ";
  }
  return kept;
}

// The pid of rank `rank`'s meshlearn-node, started from template `template_path`, or -1.
pid_t FindRank(const std::string& template_path, const std::string& rank_variable, int rank) {
  DIR* proc = ::opendir("/proc");
  pid_t found = -1;
  while (dirent* entry = proc ? ::readdir(proc) : nullptr) {
    std::string base = std::string("/proc/") + entry->d_name;
    std::string cmdline = ReadText(base + "/cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find("meshlearn-node") == std::string::npos ||
        cmdline.find(template_path) == std::string::npos) {
      continue;
    }
    std::string environ_text = ReadText(base + "/environ");
    std::string wanted = rank_variable + "=" + std::to_string(rank);
    for (size_t at = 0; at < environ_text.size();) {
      size_t end = environ_text.find('\0', at);
      if (environ_text.substr(at, end - at) == wanted) found = std::atoi(entry->d_name);
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  if (proc) ::closedir(proc);
  return found;
}

// The node's log names peers on the other pretend hosts by host name: the mesh was learned
// through the engine's host names, not loopback addresses.
void ExpectPeersReachedByHostName(const std::string& node_dir) {
  std::string log = ReadText(node_dir + "/node.log");
  EXPECT_NE(log.find("(tcp://node2:"), std::string::npos) << log;
  EXPECT_NE(log.find("(tcp://node3:"), std::string::npos) << log;
}

class Engines : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/e2e_engines_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
           std::to_string(::getpid());
    dir_ = std::filesystem::path(dir_).lexically_normal().string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) {
      std::filesystem::remove_all(dir_);
      if (!slurm_dir_.empty()) std::filesystem::remove_all(slurm_dir_);
    }
  }
  // A short folder for the Slurm cluster's state: its Unix sockets' paths must stay below 108
  // bytes.
  std::string SlurmDir() {
    slurm_dir_ = "/tmp/mls-" + std::to_string(::getpid());
    return slurm_dir_;
  }
  std::string dir_;
  std::string slurm_dir_;
};

TEST_F(Engines, NineNodesOverThreeSlurmHostsMatchTheLocalRunAndTheReportRebuilds) {
  SlurmCluster slurm(SlurmDir());
  ASSERT_TRUE(slurm.up()) << slurm.start_output();
  std::string scenario = WriteScenario(dir_, 9, 6, kPacedRoundS, 60, 10);
  std::string local = dir_ + "/local", engine = dir_ + "/slurm-run";
  EXPECT_TRUE(ExitedWith(Launch({scenario, "--out", local}, dir_ + "/local.log"), 0))
      << ReadText(dir_ + "/local.log");
  slurm.Export();
  auto status = Launch({scenario, "--out", engine, "--engine", "slurm", "--bind", "127.0.0.1", "--",
                        "--nodes=3", "--overcommit"},
                       dir_ + "/slurm.log");
  std::string log = ReadText(dir_ + "/slurm.log");
  ASSERT_TRUE(ExitedWith(status, 0)) << log << ReadText(engine + "/cos_weights/engine.log");
  EXPECT_NE(log.find("slurm engine mode"), std::string::npos) << log;
  EXPECT_NE(log.find("Test MSE at each node's best-validation round"), std::string::npos) << log;
  ExpectSameSyncRun(local, engine, 9, 6);
  EXPECT_EQ(SummaryMetrics(engine + "/summary.csv"), SummaryMetrics(local + "/summary.csv"));
  // Ranks 0-2 ran on node1, 3-5 on node2, 6-8 on node3, each told by Slurm.
  EXPECT_NE(ReadText(engine + "/cos_weights/node-4/node.log").find("slurm rank 4 of 9 on node2"),
            std::string::npos)
      << ReadText(engine + "/cos_weights/node-4/node.log");
  ExpectPeersReachedByHostName(engine + "/cos_weights/node-0");
  auto resolved = node::LoadNodeConfig(engine + "/cos_weights/node-7/node.toml");
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(resolved->advertise.rfind("tcp://node3:", 0), 0u) << resolved->advertise;
  EXPECT_EQ(resolved->mesh_size, 9);

  // The report rebuilds the same table and files from the run folder alone (the wall time it
  // reads is the slowest node's, not the launcher's).
  std::string row = log.substr(log.find("\ncos_weights ") + 1);
  row = row.substr(0, row.find('%') + 1);  // method, clusters, mean, in-cluster
  std::string metrics = SummaryMetrics(engine + "/summary.csv");
  for (const char* file :
       {"/summary.csv", "/curves.png", "/cos_weights/heatmap.csv", "/cos_weights/heatmap.png"}) {
    std::filesystem::remove(engine + file);
  }
  auto report = Shell(std::string(MESHLEARN_LAUNCH_BIN) + " report " + engine);
  EXPECT_EQ(report.first, 0) << report.second;
  EXPECT_NE(report.second.find(row), std::string::npos) << "report:\n"
                                                        << report.second << "\nlaunch row:\n"
                                                        << row;
  EXPECT_EQ(SummaryMetrics(engine + "/summary.csv"), metrics);
  for (const char* file : {"/curves.png", "/cos_weights/heatmap.csv", "/cos_weights/heatmap.png"}) {
    EXPECT_TRUE(std::filesystem::exists(engine + file)) << file;
  }
  EXPECT_EQ(slurm.Queue(), "") << "no job is left in the queue";
}

TEST_F(Engines, NineNodesThroughMpirunMatchTheLocalRun) {
  std::string scenario = WriteScenario(dir_, 9, 6, kPacedRoundS, 60, 10);
  std::string local = dir_ + "/local", engine = dir_ + "/mpi-run";
  EXPECT_TRUE(ExitedWith(Launch({scenario, "--out", local}, dir_ + "/local.log"), 0))
      << ReadText(dir_ + "/local.log");
  std::ofstream(dir_ + "/hostfile") << "# one host\nlocalhost slots=9\n";
  auto status = Launch({scenario, "--out", engine, "--engine", "mpirun", "--hostfile",
                        dir_ + "/hostfile", "--bind", "127.0.0.1", "--", "--oversubscribe"},
                       dir_ + "/mpi.log");
  std::string log = ReadText(dir_ + "/mpi.log");
  ASSERT_TRUE(ExitedWith(status, 0)) << log << ReadText(engine + "/cos_weights/engine.log");
  EXPECT_NE(log.find("mpirun engine mode"), std::string::npos) << log;
  ExpectSameSyncRun(local, engine, 9, 6);
  EXPECT_EQ(SummaryMetrics(engine + "/summary.csv"), SummaryMetrics(local + "/summary.csv"));
  EXPECT_NE(ReadText(engine + "/cos_weights/node-8/node.log").find("mpi rank 8 of 9"),
            std::string::npos)
      << ReadText(engine + "/cos_weights/node-8/node.log");
  EXPECT_NE(ReadText(engine + "/cos_weights/node-3/node.log")
                .find("bootstrapping from rank 0 at localhost:"),
            std::string::npos);
}

TEST_F(Engines, ASlurmRankKilledMidRunIsReportedAndTheOthersFinish) {
  SlurmCluster slurm(SlurmDir());
  ASSERT_TRUE(slurm.up()) << slurm.start_output();
  slurm.Export();
  std::string scenario = WriteScenario(dir_, 6, 20, 0.15);
  std::string out = dir_ + "/out";
  auto launcher =
      ChildProcess::Start({MESHLEARN_LAUNCH_BIN, scenario, "--out", out, "--engine", "slurm",
                           "--bind", "127.0.0.1", "--", "--nodes=3", "--overcommit"},
                          dir_ + "/launch.log");
  ASSERT_TRUE(launcher.has_value());
  std::string victim = out + "/cos_weights/node-4";
  ASSERT_TRUE(WaitFor([&] { return LastRound(victim) >= 3; }, seconds(300)))
      << ReadText(dir_ + "/launch.log");
  pid_t pid = FindRank(out + "/cos_weights/node-template.toml", "SLURM_PROCID", 4);
  ASSERT_GT(pid, 0);
  ::kill(pid, SIGKILL);
  auto status = launcher->Wait(seconds(600));
  std::string log = ReadText(dir_ + "/launch.log");
  EXPECT_TRUE(ExitedWith(status, 3)) << log;  // results written, some nodes failed
  EXPECT_NE(log.find("node 4 died: killed by signal 9; last log lines:"), std::string::npos) << log;
  EXPECT_NE(log.find("(1 of 6 nodes failed)"), std::string::npos) << log;
  for (int i = 0; i < 6; ++i) {
    if (i == 4) continue;
    EXPECT_EQ(Rounds(out + "/cos_weights/node-" + std::to_string(i)).size(), 21u) << i;
  }
  EXPECT_NE(ReadText(out + "/summary.csv").find("\"cos_weights\",mse"), std::string::npos);
  EXPECT_EQ(slurm.Queue(), "");
}

TEST_F(Engines, CtrlCCancelsTheSbatchJobAndTheResultsSoFarAreWritten) {
  SlurmCluster slurm(SlurmDir());
  ASSERT_TRUE(slurm.up()) << slurm.start_output();
  slurm.Export();
  std::string scenario = WriteScenario(dir_, 6, 200, 0.2);
  std::string out = dir_ + "/out";
  auto launcher = ChildProcess::Start(
      {MESHLEARN_LAUNCH_BIN, scenario, "--out", out, "--engine", "slurm", "--slurm-batch", "--bind",
       "127.0.0.1", "--", "--nodes=3", "--overcommit"},
      dir_ + "/launch.log");
  ASSERT_TRUE(launcher.has_value());
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < 6; ++i) {
          if (LastRound(out + "/cos_weights/node-" + std::to_string(i)) < 2) return false;
        }
        return true;
      },
      seconds(300)))
      << ReadText(dir_ + "/launch.log") << ReadText(out + "/cos_weights/engine.log");
  EXPECT_NE(slurm.Queue().find("meshlearn-cos_weights RUNNING"), std::string::npos)
      << slurm.Queue();
  launcher->Signal(SIGINT);
  auto status = launcher->Wait(seconds(300));
  std::string log = ReadText(dir_ + "/launch.log");
  EXPECT_TRUE(ExitedWith(status, 130)) << log;
  EXPECT_EQ(slurm.Queue(), "") << "the job was cancelled";
  EXPECT_EQ(FindRank(out + "/cos_weights/node-template.toml", "SLURM_PROCID", 0), -1);
  EXPECT_NE(ReadText(out + "/summary.csv").find("\"cos_weights\",mse"), std::string::npos);
  for (int i = 0; i < 6; ++i) {
    size_t rows = Rounds(out + "/cos_weights/node-" + std::to_string(i)).size();
    EXPECT_GE(rows, 3u) << i;
    EXPECT_LT(rows, 201u) << i << " stopped early";
  }
}

TEST_F(Engines, CtrlCStopsTheMpirunRanksCleanly) {
  std::string scenario = WriteScenario(dir_, 6, 200, 0.2);
  std::string out = dir_ + "/out";
  auto launcher = ChildProcess::Start(
      {MESHLEARN_LAUNCH_BIN, scenario, "--out", out, "--engine", "mpirun", "--bind", "127.0.0.1"},
      dir_ + "/launch.log");
  ASSERT_TRUE(launcher.has_value());
  auto node_dir = [&](int i) { return out + "/cos_weights/node-" + std::to_string(i); };
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < 6; ++i) {
          if (LastRound(node_dir(i)) < 2) return false;
        }
        return true;
      },
      seconds(300)))
      << ReadText(dir_ + "/launch.log");
  launcher->Signal(SIGINT);
  auto status = launcher->Wait(seconds(300));
  std::string log = ReadText(dir_ + "/launch.log");
  EXPECT_TRUE(ExitedWith(status, 130)) << log;
  EXPECT_EQ(log.find("nodes failed"), std::string::npos) << log;
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(ReadText(node_dir(i) + "/exit_status"), "0\n") << i << " stopped cleanly";
    EXPECT_NE(ReadText(node_dir(i) + "/node.log").find("stopped after round"), std::string::npos);
    EXPECT_LT(Rounds(node_dir(i)).size(), 201u) << i << " stopped early";
  }
  EXPECT_EQ(FindRank(out + "/cos_weights/node-template.toml", "OMPI_COMM_WORLD_RANK", 0), -1);
  EXPECT_NE(ReadText(out + "/summary.csv").find("\"cos_weights\",mse"), std::string::npos);
}

TEST_F(Engines, TheReportOfNodesStartedByHandNeedsNoLauncherFiles) {
  // Two nodes run by hand from one template, as an operator would with any engine: here the
  // "engine" is two shells that set SLURM_* themselves.
  std::string shards = dir_ + "/shards";
  ASSERT_EQ(WriteSyntheticShards(shards, 2, 1, 7).size(), 2u);
  uint16_t port = *node::FindFreeTcpPortRange("127.0.0.1", 2);
  std::ofstream(dir_ + "/template.toml")
      << "id = \"n{rank}\"\nlisten = \"tcp://127.0.0.1:{port}\"\n"
      << "output_dir = \"" << dir_ << "/run/node-n{rank}\"\n"
      << "[data]\nshard = \"" << shards << "/client-{rank}.shard\"\n"
      << "[model]\narchitecture = \"linear\"\n[training]\noptimizer = \"sgd\"\nrounds = 3\n"
      << "learning_rate = 0.003\n[learning]\nsampler = \"random\"\npeers_per_round = 1\n"
      << "[round]\nround_deadline_s = 5\nlinger_s = 0.5\n"
      << "[engine]\nkind = \"slurm\"\nport = " << port << "\n";
  std::vector<ChildProcess> nodes;
  for (int rank = 0; rank < 2; ++rank) {
    ::setenv("SLURM_PROCID", std::to_string(rank).c_str(), 1);
    ::setenv("SLURM_NTASKS", "2", 1);
    ::setenv("SLURM_JOB_NODELIST", "localhost", 1);
    ::setenv("SLURMD_NODENAME", "localhost", 1);
    auto child = ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", dir_ + "/template.toml"},
                                     dir_ + "/rank" + std::to_string(rank) + ".log");
    ASSERT_TRUE(child.has_value());
    nodes.push_back(std::move(*child));
  }
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(ExitedWith(nodes[rank].Wait(seconds(300)), 0))
        << ReadText(dir_ + "/rank" + std::to_string(rank) + ".log");
  }
  auto report = Shell(std::string(MESHLEARN_LAUNCH_BIN) + " report " + dir_ + "/run");
  EXPECT_EQ(report.first, 0) << report.second;
  EXPECT_NE(report.second.find("note: no clusters.csv: every node is counted in cluster 0"),
            std::string::npos)
      << report.second;
  EXPECT_NE(report.second.find("Test MSE"), std::string::npos) << report.second;
  EXPECT_NE(ReadText(dir_ + "/run/summary.csv").find("\"run\",mse"), std::string::npos)
      << ReadText(dir_ + "/run/summary.csv");
  auto heatmap = ReadText(dir_ + "/run/heatmap.csv");
  EXPECT_EQ(heatmap.substr(0, heatmap.find('\n')), ",n0,n1") << heatmap;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(Rounds(dir_ + "/run/node-n" + std::to_string(rank)).size(), 4u) << rank;
  }
}

TEST_F(Engines, ARankWithoutEngineIdentityRefusesToStartNamingTheVariable) {
  std::ofstream(dir_ + "/template.toml")
      << "id = \"{rank}\"\nlisten = \"tcp://127.0.0.1:{port}\"\n[data]\nshard = \"x\"\n"
      << "[engine]\nkind = \"slurm\"\n";
  ::unsetenv("SLURM_PROCID");
  auto node = ChildProcess::Start({MESHLEARN_NODE_BIN, "--config", dir_ + "/template.toml"},
                                  dir_ + "/node.log");
  ASSERT_TRUE(node.has_value());
  EXPECT_TRUE(ExitedWith(node->Wait(seconds(60)), 2));
  std::string log = ReadText(dir_ + "/node.log");
  EXPECT_NE(log.find("SLURM_PROCID is not set"), std::string::npos) << log;
  EXPECT_NE(log.find(dir_ + "/template.toml"), std::string::npos) << log;
}

}  // namespace
}  // namespace meshlearn::e2e
