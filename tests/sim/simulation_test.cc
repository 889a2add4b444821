// The simulator (sim/simulation.h): real nodes' logic and learners on a virtual clock and a
// modelled network. Meshes of synthetic linear-regression nodes, small enough to run in seconds.
#include "sim/simulation.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "node/host/node_host.h"
#include "protocol/codec.h"
#include "sim/snapshot.h"
#include "sim/storage_faults.h"
#include "tests/e2e/e2e_support.h"
#include "tests/sim/averaging_learner.h"

namespace meshlearn::sim {
namespace {

using e2e::ReadText;
using e2e::Rounds;

// A mesh of `ids.size()` synthetic nodes under `dir`, each knowing every other, in 127.0.0.1:
// 20000 + i (a simulation binds nothing).
class SimMesh {
 public:
  SimMesh(const std::string& name, std::vector<std::string> ids, int64_t rounds, int clusters = 1)
      : ids_(std::move(ids)) {
    dir_ = ::testing::TempDir() + "/sim_" + name;
    std::filesystem::remove_all(dir_);
    auto shards =
        e2e::WriteSyntheticShards(dir_ + "/shards", static_cast<int>(ids_.size()), clusters, 7);
    EXPECT_EQ(shards.size(), ids_.size());
    for (size_t i = 0; i < ids_.size(); ++i) {
      node::NodeConfig c = e2e::SyntheticNodeConfig(
          ids_[i], "tcp://127.0.0.1:" + std::to_string(20000 + i), shards[i], dir_ + "/" + ids_[i]);
      c.training.rounds = rounds;
      c.learning.peers_per_round = static_cast<int>(ids_.size()) - 1;  // everyone, every round
      // The tests below reason in a 1 s deadline. Rationale: the e2e helper's deadline grew for
      // loaded machines, but a simulation runs on a virtual clock that load cannot slow.
      c.round.round_deadline_s = 1;
      c.round.linger_s = 1;
      configs_.push_back(c);
    }
    for (node::NodeConfig& c : configs_) {
      for (const node::NodeConfig& other : configs_) {
        if (other.id != c.id) c.peers.push_back({other.id, other.listen});
      }
    }
  }

  // Runs the simulation into `out` (a folder under the mesh's), with `options`.
  SimulationReport Run(const std::string& out, SimulationOptions options) {
    std::vector<node::NodeConfig> configs = configs_;
    for (node::NodeConfig& c : configs) {
      c.output_dir = dir_ + "/" + out + "/" + c.id;
      std::filesystem::create_directories(c.output_dir);
    }
    auto report = Simulate(configs, options);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? *report : SimulationReport{};
  }

  std::string NodeDir(const std::string& out, const std::string& id) const {
    return dir_ + "/" + out + "/" + id;
  }
  std::vector<node::NodeConfig>& configs() { return configs_; }
  const std::vector<std::string>& ids() const { return ids_; }

 private:
  std::vector<std::string> ids_;
  std::string dir_;
  std::vector<node::NodeConfig> configs_;
};

const std::vector<std::string> kFour = {"n0", "n1", "n2", "n3"};

// Every row's rounds are 0, 1, 2... once each; the number of rows.
size_t ConsecutiveRounds(const std::string& node_dir) {
  auto rows = Rounds(node_dir);
  for (size_t r = 0; r < rows.size(); ++r) {
    EXPECT_EQ(rows[r].round, static_cast<int64_t>(r)) << node_dir;
  }
  return rows.size();
}

// How many sampled peers did not answer, over the rounds of the node in `node_dir`.
int MissedPeers(const std::string& node_dir) {
  int missed = 0;
  for (const node::RoundRow& row : Rounds(node_dir)) missed += row.sampled - row.answered;
  return missed;
}

// Node `id`'s rounds.csv, comm.csv and scores.csv are written in run `a` and byte-identical in
// run `b`.
void ExpectSameNodeFiles(SimMesh& mesh, const std::string& a, const std::string& b,
                         const std::string& id) {
  for (const char* file : {"rounds.csv", "comm.csv", "scores.csv"}) {
    std::string text = ReadText(mesh.NodeDir(a, id) + "/" + file);
    EXPECT_FALSE(text.empty()) << id << "/" << file;
    EXPECT_EQ(text, ReadText(mesh.NodeDir(b, id) + "/" + file)) << id << "/" << file;
  }
}

TEST(Simulation, TheSameSeedGivesByteIdenticalOutputsWithOneAndTwoThreads) {
  SimMesh mesh("identical", {"n0", "n1", "n2", "n3", "n4", "n5"}, 12, 2);
  SimulationOptions options;
  options.seed = 5;
  options.network.latency_s = 0.01;
  options.network.bandwidth_bytes_per_s = 1e6;
  options.network.loss = 0.05;  // losses are drawn from the seed too
  options.network.round_compute_s = 0.2;
  options.threads = 1;
  SimulationReport one = mesh.Run("one", options);
  options.threads = 2;
  SimulationReport two = mesh.Run("two", options);
  EXPECT_EQ(one.simulated_seconds, two.simulated_seconds);
  EXPECT_EQ(one.events, two.events);
  double first_loss = 0, last_loss = 0;
  for (const std::string& id : mesh.ids()) {
    ExpectSameNodeFiles(mesh, "one", "two", id);
    auto rows = Rounds(mesh.NodeDir("one", id));
    ASSERT_EQ(rows.size(), 13u) << id;
    first_loss += rows.front().test_loss;
    last_loss += rows.back().test_loss;
    EXPECT_GT(rows.back().bytes_in, 0u) << id;
  }
  // Every node samples every other, across both clusters, so one node may end worse than it
  // began; the mesh as a whole learns.
  EXPECT_LT(last_loss, first_loss) << "the mesh did not learn";
}

// Latency: a request and its reply take twice the latency. Below the deadline every model
// arrives, and each round lasts that long; above it no reply arrives in time, not even a HelloAck:
// no peer is ever verified (issue 17: a peer's own Hello no longer admits it), so none is sampled
// and every node trains alone.
TEST(Simulation, ALatencyAboveTheDeadlineLeavesEveryRequestUnanswered) {
  SimMesh mesh("latency", kFour, 5);
  SimulationOptions options;
  options.network.latency_s = 0.3;  // deadline 1 s: there and back in 0.6 s
  mesh.Run("fast", options);
  options.network.latency_s = 0.6;  // there and back in 1.2 s
  mesh.Run("slow", options);
  for (const std::string& id : kFour) {
    auto fast = Rounds(mesh.NodeDir("fast", id));
    ASSERT_EQ(fast.size(), 6u) << id;
    for (size_t r = 1; r < fast.size(); ++r) {
      EXPECT_EQ(fast[r].answered, 3) << id << " round " << r;
      EXPECT_GE(fast[r].wall_s - fast[r - 1].wall_s, 0.6 - 1e-9) << id << " round " << r;
    }
    auto slow = Rounds(mesh.NodeDir("slow", id));
    ASSERT_EQ(slow.size(), 6u) << id;
    EXPECT_GE(slow[1].wall_s, 1.0) << id << ": round 1 waited for the first Hellos";
    for (size_t r = 1; r < slow.size(); ++r) {
      EXPECT_EQ(slow[r].sampled, 0) << id << " round " << r;
      EXPECT_EQ(slow[r].answered, 0) << id << " round " << r;
    }
  }
}

// Bandwidth: a model message takes its bytes / bandwidth; when that exceeds the deadline, no
// model arrives in time, while the small Hellos still do.
TEST(Simulation, AModelTooBigForTheBandwidthWithinTheDeadlineNeverArrives) {
  SimMesh mesh("bandwidth", kFour, 4);
  for (node::NodeConfig& c : mesh.configs()) {
    c.model.architecture = training::Architecture::kMlp;  // 10-200-1: 2,401 parameters, ~9.7 KB
    c.training.learning_rate = 0.0005;
  }
  SimulationOptions options;
  options.network.bandwidth_bytes_per_s = 1e6;  // ~10 ms per model
  mesh.Run("wide", options);
  options.network.bandwidth_bytes_per_s = 3000;  // ~3 s per model, 30 ms per Hello
  mesh.Run("narrow", options);
  for (const std::string& id : kFour) {
    auto wide = Rounds(mesh.NodeDir("wide", id));
    auto narrow = Rounds(mesh.NodeDir("narrow", id));
    ASSERT_EQ(wide.size(), 5u) << id;
    ASSERT_EQ(narrow.size(), 5u) << id;
    for (size_t r = 1; r < 5; ++r) EXPECT_EQ(wide[r].answered, 3) << id << " round " << r;
    // Each round asks every peer and gets nothing in time, until dead_after_failures (3) misses
    // mark them dead: round 4 samples nobody.
    for (size_t r = 1; r <= 3; ++r) {
      EXPECT_EQ(narrow[r].sampled, 3) << id << " round " << r << ": its peers joined";
      EXPECT_EQ(narrow[r].answered, 0) << id << " round " << r;
    }
    EXPECT_EQ(narrow[4].sampled, 0) << id << ": its peers are dead by round 4";
  }
}

// A death: the node is away for 5 s of simulated time; the others skip it, then it restarts from
// its in-memory checkpoint (no gap, no repeat in rounds.csv, its bytes counted on from what the
// dead incarnation sent) and is answered again.
TEST(Simulation, ADeadNodeIsSkippedThenRestartsFromItsCheckpointAndIsAnsweredAgain) {
  SimMesh mesh("death", kFour, 12);
  SimulationOptions options;
  options.network.outages.push_back({"n2", OutageKind::kDeath, 3, 5.0});
  options.network.round_compute_s = 0.1;
  mesh.Run("out", options);
  EXPECT_EQ(ConsecutiveRounds(mesh.NodeDir("out", "n2")), 13u);
  EXPECT_NE(ReadText(mesh.NodeDir("out", "n2") + "/node.log").find("outage over: restarted"),
            std::string::npos);
  const std::vector<node::RoundRow> restarted = Rounds(mesh.NodeDir("out", "n2"));
  for (size_t r = 1; r < restarted.size(); ++r) {
    EXPECT_GE(restarted[r].bytes_out, restarted[r - 1].bytes_out) << "n2 round " << r;
    EXPECT_GE(restarted[r].bytes_in, restarted[r - 1].bytes_in) << "n2 round " << r;
  }
  auto rows = Rounds(mesh.NodeDir("out", "n0"));
  ASSERT_EQ(rows.size(), 13u);
  int missed = 0;
  for (const node::RoundRow& row : rows) missed += row.sampled - row.answered;
  EXPECT_GT(missed, 0) << "n0 never missed the dead node";
  EXPECT_EQ(rows.back().answered, rows.back().sampled) << "n2 is answered again at the end";
  for (const char* id : {"n0", "n1", "n3"}) {
    EXPECT_EQ(ConsecutiveRounds(mesh.NodeDir("out", id)), 13u) << id;
  }
}

// A pause: the node stops for 5 s of simulated time and continues where it was; the others
// skip it meanwhile.
TEST(Simulation, APausedNodeIsSkippedAndContinuesWhereItWas) {
  SimMesh mesh("pause", kFour, 10);
  SimulationOptions options;
  options.network.outages.push_back({"n1", OutageKind::kPause, 2, 5.0});
  mesh.Run("out", options);
  auto paused = Rounds(mesh.NodeDir("out", "n1"));
  ASSERT_EQ(ConsecutiveRounds(mesh.NodeDir("out", "n1")), 11u);
  EXPECT_GE(paused[3].wall_s - paused[2].wall_s, 5.0) << "n1's round 3 spans its pause";
  EXPECT_EQ(ReadText(mesh.NodeDir("out", "n1") + "/node.log").find("restarted"), std::string::npos)
      << "a pause is not a restart";
  EXPECT_GT(MissedPeers(mesh.NodeDir("out", "n0")), 0) << "n0 never missed the paused node";
}

// A partition between {n0, n1} and {n2, n3} for rounds [3, 6): inside, each node is answered by
// its own side only. The other side's nodes miss three rounds, are marked dead, and are sampled
// again once their backoff (one round deadline) has passed: the mesh heals.
TEST(Simulation, APartitionCutsTheGroupsForItsRoundsAndTheMeshHealsAfterwards) {
  SimMesh mesh("partition", kFour, 12);
  SimulationOptions options;
  options.network.partitions.push_back({{{"n0", "n1"}, {"n2", "n3"}}, 3, 6});
  options.network.round_compute_s = 0.5;
  mesh.Run("out", options);
  for (const std::string& id : kFour) {
    auto rows = Rounds(mesh.NodeDir("out", id));
    ASSERT_EQ(rows.size(), 13u) << id;
    EXPECT_EQ(rows[2].answered, 3) << id;
    EXPECT_EQ(rows[4].answered, 1) << id << ": round 4 is inside the partition";
    EXPECT_EQ(rows[12].answered, 3) << id << ": the mesh healed by round 12";
  }
}

// The simulated seconds each round of node `id` took in run `out`, of the rounds that began at or
// after `from_s` (the end of the round before).
std::vector<double> RoundSecondsFrom(SimMesh& mesh, const std::string& out, const std::string& id,
                                     double from_s) {
  auto rows = Rounds(mesh.NodeDir(out, id));
  std::vector<double> seconds;
  for (size_t r = 1; r < rows.size(); ++r) {
    if (rows[r - 1].wall_s >= from_s) seconds.push_back(rows[r].wall_s - rows[r - 1].wall_s);
  }
  return seconds;
}

// A node computing 100 times slower (issue 48): in async mode the other nodes' rounds take what
// they take without it, from the first (before its round 0 ends it answers at once that it has
// no model yet), while in sync mode, once it has published its first round, they wait for its
// next round up to the deadline (1 s).
TEST(Simulation, AStragglerDelaysTheOthersUpToTheDeadlineInSyncModeOnly) {
  SimMesh mesh("straggler", kFour, 200);
  // Rationale: without waiting for the straggler the fast nodes would early-stop (and rest)
  // before it has a model to answer with.
  for (node::NodeConfig& c : mesh.configs()) c.training.patience = 1000;
  SimulationOptions options;
  options.network.round_compute_s = 0.02;
  mesh.Run("none", options);
  options.network.nodes.push_back({"n3", 100.0, {}, {}});
  mesh.Run("sync", options);
  for (node::NodeConfig& c : mesh.configs()) c.round.sync = false;
  mesh.Run("async", options);
  const auto straggler = Rounds(mesh.NodeDir("async", "n3"));
  ASSERT_FALSE(straggler.empty());
  EXPECT_DOUBLE_EQ(straggler.front().train_s, 2.0) << "its rounds take 100 x 0.02 s";
  const double published = straggler.front().wall_s;
  for (const char* id : {"n0", "n1", "n2"}) {
    const std::vector<double> alone = RoundSecondsFrom(mesh, "none", id, 0);
    const std::vector<double> async = RoundSecondsFrom(mesh, "async", id, 0);
    const std::vector<double> sync = RoundSecondsFrom(mesh, "sync", id, published);
    ASSERT_GE(async.size(), 10u) << id;
    ASSERT_GE(sync.size(), 3u) << id;
    const double usual = *std::max_element(alone.begin(), alone.end());
    EXPECT_LT(usual, 0.1) << id;
    EXPECT_LT(*std::max_element(async.begin(), async.end()), usual + 0.01)
        << id << ": no async round waits for the straggler";
    const auto rows = Rounds(mesh.NodeDir("async", id));
    EXPECT_TRUE(std::any_of(rows.begin(), rows.end(),
                            [](const node::RoundRow& row) { return row.answered == 3; }))
        << id << ": the straggler answered with what it had";
    const double longest = *std::max_element(sync.begin(), sync.end());
    EXPECT_GT(longest, 0.9) << id << ": a sync round waits for the straggler up to the deadline";
    EXPECT_LT(longest, 1.0 + usual + 0.05) << id << ": and never past it";
  }
}

// Runs `mesh` (10 rounds of 0.5 s) with n2 away from `leave_s` to `return_s`; n2 finishes every
// round once, after restarting from its checkpoint. Returns n2's node.log.
std::string RunWithN2Away(SimMesh& mesh, double leave_s, double return_s) {
  SimulationOptions options;
  options.network.round_compute_s = 0.5;
  options.network.churn_trace.push_back({"n2", leave_s, return_s});
  mesh.Run("out", options);
  EXPECT_EQ(ConsecutiveRounds(mesh.NodeDir("out", "n2")), 11u);
  const std::string log = ReadText(mesh.NodeDir("out", "n2") + "/node.log");
  EXPECT_NE(log.find("churn: died"), std::string::npos) << log;
  EXPECT_NE(log.find("outage over: restarted"), std::string::npos) << log;
  return log;
}

// Churn from a trace: n2 leaves in the middle of a round and comes back 5 s later from its
// checkpoint; it finishes every round once, and the others skipped it meanwhile.
TEST(Simulation, AChurnedNodeLeavesMidRoundAndResumesFromItsCheckpoint) {
  SimMesh mesh("churn", kFour, 10);
  RunWithN2Away(mesh, 2.3, 7.3);
  EXPECT_GT(MissedPeers(mesh.NodeDir("out", "n0")), 0) << "n0 never missed the churned node";
}

// A churned node that comes back after the others have ended does its last rounds alone, but its
// last line does not say it never reached a peer: it did, before it left (its checkpoint's
// comm.csv counts the answers).
TEST(Simulation, ANodeBackAfterTheOthersEndedDoesNotSayItNeverReachedAPeer) {
  SimMesh mesh("churn_alone", kFour, 10);
  const std::string log = RunWithN2Away(mesh, 2.3, 30);
  EXPECT_EQ(Rounds(mesh.NodeDir("out", "n2")).back().answered, 0) << "its last round was alone";
  EXPECT_NE(log.find("stopped after round 10"), std::string::npos) << log;
  EXPECT_EQ(log.find(node::kNeverReachedAPeer), std::string::npos) << log;
}

// Drawn churn (half the nodes, up 2 s and away 1 s on average, rounds of 0.5 s) in a mesh of
// drawn compute speeds and links: every node still finishes all its rounds, the run ends, and the
// same seed gives the same files with one thread and with two.
TEST(Simulation, UnderDrawnChurnEveryNodeFinishesItsRoundsTheSameWithOneAndTwoThreads) {
  SimMesh mesh("drawn_churn", kFour, 10);
  SimulationOptions options;
  options.network.round_compute_s = 0.5;
  options.network.latency_s = 0.01;
  options.network.bandwidth_bytes_per_s = 1e5;
  options.network.compute = {SpreadKind::kLogNormal, 0.5, 1, 1};
  options.network.latency = {SpreadKind::kUniform, 0, 1, 5};
  options.network.churn = {0.5, 2, 1};
  options.threads = 1;
  mesh.Run("out", options);
  options.threads = 2;
  mesh.Run("two", options);
  for (const std::string& id : kFour) ExpectSameNodeFiles(mesh, "out", "two", id);
  int restarted = 0;
  for (const std::string& id : kFour) {
    EXPECT_EQ(ConsecutiveRounds(mesh.NodeDir("out", id)), 11u) << id;
    restarted +=
        ReadText(mesh.NodeDir("out", id) + "/node.log").find("churn: died") != std::string::npos;
  }
  EXPECT_EQ(restarted, 2);
}

TEST(Simulation, AnOutageOfAnUnknownNodeIsRefusedBeforeTheStart) {
  SimMesh mesh("unknown", kFour, 2);
  SimulationOptions options;
  options.network.outages.push_back({"n9", OutageKind::kDeath, 1, 1.0});
  std::vector<node::NodeConfig> configs = mesh.configs();
  auto report = Simulate(configs, options);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(report.status().message().find("'n9'"), std::string::npos)
      << report.status().ToString();
}

// Snapshots: a run stopped at its barriers and resumed gives the same files as one that was never
// stopped, byte for byte (sim/simulation.h, "Snapshots").
// With top-k gossip too: the checkpoints keep the public estimates, so a resumed mesh goes on with
// the same lineages and copies and sends the same bytes.
class ResumedRun : public ::testing::TestWithParam<CompressionCodec> {};

TEST_P(ResumedRun, GivesTheOutputsOfARunNeverStopped) {
  SimMesh mesh(std::string("resume_") + CompressionCodecName(GetParam()), kFour, 9, 2);
  for (node::NodeConfig& c : mesh.configs()) {
    c.compression.codec = GetParam();
    c.compression.topk_fraction = 0.3;
  }
  SimulationOptions options;
  options.seed = 3;
  options.network.latency_s = 0.01;
  options.network.loss = 0.05;  // the generator's state crosses the snapshots
  options.network.round_compute_s = 0.1;
  options.snapshot_every = 3;
  const std::string snapshots =
      ::testing::TempDir() + "/sim_resume_" + CompressionCodecName(GetParam());
  options.snapshot_dir = snapshots + "/whole-snapshot";
  SimulationReport whole = mesh.Run("whole", options);
  EXPECT_FALSE(whole.interrupted);
  EXPECT_EQ(whole.snapshot_round, 6);

  std::atomic<bool> stop{true};  // SIGTERM from the start: each run stops at its next barrier
  options.interrupt = &stop;
  options.snapshot_dir = snapshots + "/stopped-snapshot";
  SimulationReport first = mesh.Run("stopped", options);
  EXPECT_TRUE(first.interrupted);
  EXPECT_EQ(first.snapshot_round, 3);
  EXPECT_EQ(Rounds(mesh.NodeDir("stopped", "n0")).size(), 4u) << "rounds 0-3 are written";
  options.resume = true;
  SimulationReport second = mesh.Run("stopped", options);
  EXPECT_EQ(second.resumed_from, 3);
  EXPECT_EQ(second.snapshot_round, 6);
  EXPECT_TRUE(second.interrupted);
  stop = false;
  SimulationReport last = mesh.Run("stopped", options);
  EXPECT_EQ(last.resumed_from, 6);
  EXPECT_FALSE(last.interrupted);
  // What the run cost is carried across launches: each resumed launch knows the seconds of the
  // ones before it, up to its snapshot.
  EXPECT_EQ(whole.earlier_real_seconds, 0);
  EXPECT_GT(second.earlier_real_seconds, 0);
  EXPECT_LE(second.earlier_real_seconds, first.real_seconds);
  EXPECT_GT(second.earlier_compute_seconds, 0);
  EXPECT_GT(last.earlier_real_seconds, second.earlier_real_seconds);
  EXPECT_GT(last.earlier_compute_seconds, second.earlier_compute_seconds);
  for (const std::string& id : mesh.ids()) {
    EXPECT_EQ(ConsecutiveRounds(mesh.NodeDir("stopped", id)), 10u) << id;
    ExpectSameNodeFiles(mesh, "whole", "stopped", id);
  }
}
// A snapshot barrier restarts every node from its checkpoint (new connections, Hellos: a few more
// bytes). With top-k the checkpoints keep the public estimates, so no requester needs a peer's
// estimate whole after a barrier: barriers cost a top-k mesh exactly the bytes they cost a
// float32 mesh.
TEST(Simulation, SnapshotBarriersCostTopKNoMoreBytesThanFloat32) {
  std::map<std::string, std::vector<int64_t>> extra;  // per codec: bytes added by the barriers
  for (CompressionCodec codec : {CompressionCodec::kNone, CompressionCodec::kTopK}) {
    const std::string name = CompressionCodecName(codec);
    SimMesh mesh("barrier_bytes_" + name, kFour, 9, 2);
    for (node::NodeConfig& c : mesh.configs()) {
      c.compression.codec = codec;
      c.compression.topk_fraction = 0.3;
    }
    SimulationOptions options;
    options.network.round_compute_s = 0.1;
    mesh.Run("plain", options);
    options.snapshot_every = 3;
    options.snapshot_dir = ::testing::TempDir() + "/sim_barrier_bytes_" + name + "/snapshot";
    mesh.Run("barriers", options);
    for (const std::string& id : mesh.ids()) {
      auto plain = Rounds(mesh.NodeDir("plain", id));
      auto barriers = Rounds(mesh.NodeDir("barriers", id));
      ASSERT_EQ(plain.size(), barriers.size()) << name << " " << id;
      for (size_t r = 0; r < plain.size(); ++r) {
        extra[name].push_back(static_cast<int64_t>(barriers[r].bytes_out) -
                              static_cast<int64_t>(plain[r].bytes_out));
      }
    }
  }
  EXPECT_EQ(extra["topk"], extra["none"]);
  EXPECT_GT(extra["none"].back(), 0) << "the barriers cost something";
}

INSTANTIATE_TEST_SUITE_P(Codecs, ResumedRun,
                         ::testing::Values(CompressionCodec::kNone, CompressionCodec::kTopK),
                         [](const auto& info) { return CompressionCodecName(info.param); });

// A snapshot's spent seconds read back; a snapshot written before they existed reads as "not
// known", a damaged value is refused by line and key, and a format 1 snapshot by its format.
TEST(Simulation, SnapshotsCarryTheSecondsSpentSoFar) {
  SimulationSnapshot s;
  s.round = 3;
  s.every = 3;
  s.generator = "1 2 3";
  s.real_seconds = 12.5;
  s.compute_seconds = 20.25;
  s.nodes.push_back({"n0", true, 1, 10, 20, 3, NAN, {2}, std::nullopt});
  s.nodes.push_back({"n1", false, 2, 30, 40, 1, 0.5, {}, "died"});
  std::string text = SnapshotText(s);
  auto read = ParseSnapshot(text, "snap");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->real_seconds, 12.5);
  EXPECT_EQ(read->compute_seconds, 20.25);
  ASSERT_EQ(read->nodes.size(), 2u);
  EXPECT_TRUE(std::isnan(read->nodes[0].last_val_loss));
  EXPECT_EQ(read->nodes[0].outages, std::vector<size_t>{2});
  EXPECT_FALSE(read->nodes[1].running);
  EXPECT_EQ(read->nodes[1].failure, "died");
  EXPECT_EQ(SnapshotText(*read), text);

  const size_t line = text.find("real_seconds");
  ASSERT_NE(line, std::string::npos);
  std::string older = text.substr(0, line) + text.substr(text.find('\n', line) + 1);
  auto old = ParseSnapshot(older, "old");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_TRUE(std::isnan(old->real_seconds));
  EXPECT_EQ(old->nodes.size(), 2u);

  std::string damaged = text;
  damaged.replace(line, std::string("real_seconds = 12.5").size(), "real_seconds = -1");
  auto bad = ParseSnapshot(damaged, "bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kMalformed);
  EXPECT_NE(bad.status().message().find("'real_seconds' = -1 must be"), std::string::npos)
      << bad.status().ToString();
  EXPECT_NE(bad.status().message().find("bad:"), std::string::npos) << bad.status().ToString();

  auto format1 = ParseSnapshot("meshlearn simulation snapshot 1\nround 3\n", "v1");
  EXPECT_EQ(format1.status().code(), ErrorCode::kUnsupportedVersion) << format1.status().ToString();
}

TEST(Simulation, ResumingWithoutASnapshotSaysSo) {
  SimMesh mesh("no_snapshot", kFour, 2);
  SimulationOptions options;
  options.resume = true;
  options.snapshot_dir = ::testing::TempDir() + "/sim_no_snapshot/none";
  std::vector<node::NodeConfig> configs = mesh.configs();
  auto report = Simulate(configs, options);
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), ErrorCode::kNotFound) << report.status().ToString();
  EXPECT_NE(report.status().message().find("snapshot.txt"), std::string::npos);
}

// Every message arrives damaged: the receivers decode the real frames and refuse them with the
// protocol's error, as a process does (the same host and decoder): logged, counted by code, and
// no node ever reaches a peer.
TEST(Simulation, DamagedFramesAreRefusedWithTheProtocolsError) {
  for (const char* damage : {"corrupt", "truncate"}) {
    SimMesh mesh(std::string("damage_") + damage, kFour, 2);
    SimulationOptions options;
    (std::string(damage) == "corrupt" ? options.network.corrupt : options.network.truncate) = 1;
    options.with_status = true;
    std::map<std::string, uint64_t> rejected;
    options.on_progress = [&](const SimulationProgress& p) {
      for (const node::NodeStatus& s : p.statuses) rejected[s.id] = s.counters.rejected_inbound;
    };
    mesh.Run("out", options);
    for (const std::string& id : kFour) {
      std::string log = ReadText(mesh.NodeDir("out", id) + "/node.log");
      EXPECT_NE(log.find("rejected a message from"), std::string::npos) << damage << " " << id;
      EXPECT_NE(log.find("malformed"), std::string::npos) << damage << " " << id << "\n" << log;
      EXPECT_NE(log.find(node::kNeverReachedAPeer), std::string::npos) << damage << " " << id;
      EXPECT_GT(rejected[id], 0u) << damage << " " << id;
    }
  }
}

// A node that finishes says Goodbye, as a process does: its peers mark it left and stop sampling
// it at once, instead of waiting for its deadline every round.
TEST(Simulation, AFinishedNodeSaysGoodbyeAndIsNoLongerSampled) {
  SimMesh mesh("goodbye", kFour, 8);
  mesh.configs()[3].training.rounds = 3;  // n3 finishes first
  SimulationOptions options;
  options.network.round_compute_s = 0.5;
  mesh.Run("out", options);
  EXPECT_EQ(Rounds(mesh.NodeDir("out", "n3")).size(), 4u);
  for (const char* id : {"n0", "n1", "n2"}) {
    std::string log = ReadText(mesh.NodeDir("out", id) + "/node.log");
    EXPECT_NE(log.find("peer n3 left (finished its rounds)"), std::string::npos) << id << log;
    auto rows = Rounds(mesh.NodeDir("out", id));
    ASSERT_EQ(rows.size(), 9u) << id;
    EXPECT_EQ(rows.back().sampled, 2) << id << ": n3 is not sampled after its Goodbye";
    EXPECT_EQ(rows.back().answered, 2) << id;
  }
}

// Issue 31: a node that speaks only version 2 and version-3 nodes that send int8 models train
// together. n3 announces version 2 ([round] max_protocol_version) and so gets float32 models: its
// traffic is byte for byte what it is in a mesh of version-2 nodes. The others get int8 models
// from each other, and the bytes counted (rounds.csv, from the frames sent) drop.
TEST(Simulation, AVersion2NodeAndInt8Version3NodesTrainTogether) {
  SimMesh mesh("compression", kFour, 6);
  SimulationOptions options;
  options.network.round_compute_s = 0.2;
  for (node::NodeConfig& c : mesh.configs()) c.round.max_protocol_version = 2;
  mesh.Run("v2", options);
  for (node::NodeConfig& c : mesh.configs()) {
    c.round.max_protocol_version = 0;  // this build's version
    if (c.id == "n3") {
      c.round.max_protocol_version = 2;
    } else {
      c.compression.codec = CompressionCodec::kInt8;
      c.compression.block_size = 64;
    }
  }
  mesh.Run("mixed", options);
  double first_loss = 0, last_loss = 0;
  for (const std::string& id : kFour) {
    std::string log = ReadText(mesh.NodeDir("mixed", id) + "/node.log");
    EXPECT_EQ(log.find("rejected"), std::string::npos) << id << "\n" << log;
    auto rows = Rounds(mesh.NodeDir("mixed", id));
    auto plain = Rounds(mesh.NodeDir("v2", id));
    ASSERT_EQ(rows.size(), 7u) << id;
    ASSERT_EQ(plain.size(), 7u) << id;
    for (const auto& row : rows) {
      if (row.round == 0) continue;
      EXPECT_EQ(row.sampled, 3) << id << " round " << row.round;
      EXPECT_EQ(row.answered, 3) << id << " round " << row.round << ": every model was accepted";
    }
    first_loss += rows.front().test_loss;
    last_loss += rows.back().test_loss;
    if (id == "n3") {
      EXPECT_EQ(rows.back().bytes_in, plain.back().bytes_in)
          << "the version-2 node receives exactly the bytes of a version-2 mesh";
      EXPECT_EQ(rows.back().bytes_out, plain.back().bytes_out);
    } else {
      EXPECT_LT(rows.back().bytes_in, plain.back().bytes_in) << id << " receives int8 models";
      EXPECT_LT(rows.back().bytes_out, plain.back().bytes_out) << id << " sends int8 models";
    }
  }
  EXPECT_LT(last_loss, first_loss) << "the mixed mesh did not learn";
}

// Issue 31: top-k gossip. Every node sends 30% of the coordinates of its model's change (int8
// values) as updates of its public estimate; the requesters rebuild each peer's estimate from the
// chains (node/logic/public_estimates.h). Every model is accepted, the mesh learns, far fewer
// bytes travel than with float32, and the run is byte-identical with one and two threads.
TEST(Simulation, TopKGossipRebuildsEveryPeersEstimateAndSendsFewerBytes) {
  SimMesh mesh("topk", kFour, 8);
  SimulationOptions options;
  options.network.round_compute_s = 0.2;
  mesh.Run("plain", options);
  for (node::NodeConfig& c : mesh.configs()) {
    c.compression.codec = CompressionCodec::kTopK;
    c.compression.topk_fraction = 0.3;
    c.compression.block_size = 64;
  }
  mesh.Run("topk", options);
  options.threads = 2;
  mesh.Run("topk-two", options);
  double first_loss = 0, last_loss = 0;
  for (const std::string& id : kFour) {
    std::string log = ReadText(mesh.NodeDir("topk", id) + "/node.log");
    EXPECT_EQ(log.find("could not be used"), std::string::npos) << id << "\n" << log;
    auto rows = Rounds(mesh.NodeDir("topk", id));
    auto plain = Rounds(mesh.NodeDir("plain", id));
    ASSERT_EQ(rows.size(), 9u) << id;
    for (const auto& row : rows) {
      if (row.round == 0) continue;
      EXPECT_EQ(row.answered, 3) << id << " round " << row.round << ": every chain applied";
    }
    first_loss += rows.front().test_loss;
    last_loss += rows.back().test_loss;
    EXPECT_LT(rows.back().bytes_out, plain.back().bytes_out) << id << " sends top-k chains";
    ExpectSameNodeFiles(mesh, "topk", "topk-two", id);
  }
  EXPECT_LT(last_loss, first_loss) << "the top-k mesh did not learn";
}

// DP-SGD draws its Poisson samples and its noise from the node's seed: a simulated DP run gives the
// same files whatever the number of threads, and it spends and reports its ε.
TEST(Simulation, ADifferentiallyPrivateRunIsByteIdenticalWithOneAndTwoThreads) {
  SimMesh mesh("privacy", kFour, 4, 2);
  for (node::NodeConfig& c : mesh.configs()) {
    c.privacy.enabled = true;
    c.privacy.noise_multiplier = 1.0;
  }
  SimulationOptions options;
  options.network.round_compute_s = 0.1;
  options.threads = 1;
  mesh.Run("one", options);
  options.threads = 2;
  mesh.Run("two", options);
  for (const std::string& id : kFour) {
    ExpectSameNodeFiles(mesh, "one", "two", id);
    auto rows = Rounds(mesh.NodeDir("one", id));
    ASSERT_EQ(rows.size(), 5u) << id;
    EXPECT_GT(rows.back().epsilon, rows.front().epsilon) << id << ": each round spends ε";
  }
}

// ---- The sequential exchange schedule (sim/exchange_turns.h).

// Each node's (merged, trained) model per round: rounds.csv's train_loss and val_loss with the
// averaging learner (tests/sim/averaging_learner.h).
std::vector<std::pair<double, double>> MergedAndTrained(const std::string& node_dir) {
  std::vector<std::pair<double, double>> values;
  for (const node::RoundRow& row : Rounds(node_dir))
    values.emplace_back(row.train_loss, row.val_loss);
  return values;
}

// Worked by hand with the averaging learner: n0-n3 serve 1, 11, 21, 31 after round 0, and every
// node samples the three others. Synchronous: every node averages the others' round-0 models
// (16), sequential: each reads the merged models of the nodes before it in the round's order.
// With seed 1 round 1's order is n1 n2 n3 n0:
//   n1 (11 + 1 + 21 + 31) / 4 = 16;  n2 (21 + 1 + 16 + 31) / 4 = 17.25;
//   n3 (31 + 1 + 16 + 17.25) / 4 = 16.3125;  n0 (1 + 16 + 17.25 + 16.3125) / 4 = 12.640625;
// each serves merged + 1 after the round. Round 2's order is n2 n3 n0 n1, from 13.640625, 17,
// 18.25 and 17.3125:
//   n2 (18.25 + 13.640625 + 17 + 17.3125) / 4 = 16.55078125;
//   n3 (17.3125 + 13.640625 + 17 + 16.55078125) / 4 = 16.1259765625;
//   n0 (13.640625 + 17 + 16.55078125 + 16.1259765625) / 4 = 15.829345703125;
//   n1 (17 + 15.829345703125 + 16.55078125 + 16.1259765625) / 4 = 16.37652587890625.
TEST(Simulation, SequentialTurnsReadThePeersMergedModelsInPlace) {
  ASSERT_EQ(TurnOrder(1, 1, 4), (std::vector<size_t>{1, 2, 3, 0}));
  ASSERT_EQ(TurnOrder(1, 2, 4), (std::vector<size_t>{2, 3, 0, 1}));
  SimMesh mesh("sequential_by_hand", kFour, 2);
  SimulationOptions options;
  options.seed = 1;
  options.network.latency_s = 0.01;
  options.make_learner = [](const node::NodeConfig& c) -> Result<std::unique_ptr<node::Learner>> {
    return std::unique_ptr<node::Learner>(std::make_unique<testing::AveragingLearner>(c));
  };
  mesh.Run("synchronous", options);
  options.schedule = ExchangeSchedule::kSequential;
  mesh.Run("sequential", options);
  const std::map<std::string, std::vector<std::pair<double, double>>> sequential = {
      {"n0", {{0, 1}, {12.640625, 13.640625}, {15.829345703125, 16.829345703125}}},
      {"n1", {{10, 11}, {16, 17}, {16.37652587890625, 17.37652587890625}}},
      {"n2", {{20, 21}, {17.25, 18.25}, {16.55078125, 17.55078125}}},
      {"n3", {{30, 31}, {16.3125, 17.3125}, {16.1259765625, 17.1259765625}}}};
  for (size_t i = 0; i < kFour.size(); ++i) {
    const std::string& id = kFour[i];
    EXPECT_EQ(MergedAndTrained(mesh.NodeDir("sequential", id)), sequential.at(id)) << id;
    const double start = 10.0 * static_cast<double>(i);
    EXPECT_EQ(MergedAndTrained(mesh.NodeDir("synchronous", id)),
              (std::vector<std::pair<double, double>>{{start, start + 1}, {16, 17}, {17, 18}}))
        << id;
    for (const node::RoundRow& row : Rounds(mesh.NodeDir("sequential", id))) {
      if (row.round > 0) {
        EXPECT_EQ(row.answered, 3) << id << " round " << row.round;
      }
    }
  }
}

// A real mesh (synthetic regression) under the sequential schedule: it learns, every node
// completes every round, the schedule changes what the nodes compute, and a run stopped at its
// snapshots and resumed gives the files of one never stopped.
TEST(Simulation, ASequentialRunResumedFromItsSnapshotsGivesTheOutputsOfOneNeverStopped) {
  SimMesh mesh("sequential_resume", kFour, 6, 2);
  SimulationOptions options;
  options.seed = 3;
  options.network.latency_s = 0.01;
  options.network.round_compute_s = 0.1;
  mesh.Run("synchronous", options);
  options.schedule = ExchangeSchedule::kSequential;
  options.snapshot_every = 2;
  const std::string snapshots = ::testing::TempDir() + "/sim_sequential_resume";
  options.snapshot_dir = snapshots + "/whole-snapshot";
  SimulationReport whole = mesh.Run("whole", options);
  EXPECT_EQ(whole.snapshot_round, 4);
  std::atomic<bool> stop{true};  // each launch stops at its next barrier
  options.interrupt = &stop;
  options.snapshot_dir = snapshots + "/stopped-snapshot";
  EXPECT_EQ(mesh.Run("stopped", options).snapshot_round, 2);
  options.resume = true;
  EXPECT_EQ(mesh.Run("stopped", options).snapshot_round, 4);
  stop = false;
  EXPECT_FALSE(mesh.Run("stopped", options).interrupted);
  double first_loss = 0, last_loss = 0;
  for (const std::string& id : mesh.ids()) {
    EXPECT_EQ(ConsecutiveRounds(mesh.NodeDir("whole", id)), 7u) << id;
    ExpectSameNodeFiles(mesh, "whole", "stopped", id);
    EXPECT_NE(ReadText(mesh.NodeDir("whole", id) + "/rounds.csv"),
              ReadText(mesh.NodeDir("synchronous", id) + "/rounds.csv"))
        << id;
    auto rows = Rounds(mesh.NodeDir("whole", id));
    first_loss += rows.front().test_loss;
    last_loss += rows.back().test_loss;
  }
  EXPECT_LT(last_loss, first_loss) << "the mesh did not learn";
}

// A node that dies or pauses cannot hold the turns: the others go on without it, it catches up
// when back, and every node completes every round.
TEST(Simulation, SequentialTurnsGoOnWithoutADeadOrPausedNode) {
  SimMesh mesh("sequential_outages", kFour, 8);
  SimulationOptions options;
  options.schedule = ExchangeSchedule::kSequential;
  options.network.round_compute_s = 0.1;
  options.network.outages.push_back({"n2", OutageKind::kDeath, 2, 3.0});
  options.network.outages.push_back({"n1", OutageKind::kPause, 3, 2.0});
  mesh.Run("out", options);
  for (const std::string& id : kFour) {
    EXPECT_EQ(ConsecutiveRounds(mesh.NodeDir("out", id)), 9u) << id;
  }
  EXPECT_NE(ReadText(mesh.NodeDir("out", "n2") + "/node.log").find("outage over: restarted"),
            std::string::npos);
}

TEST(Simulation, TheSequentialScheduleRefusesTopKNodes) {
  SimMesh mesh("sequential_topk", kFour, 2);
  for (node::NodeConfig& c : mesh.configs()) c.compression.codec = CompressionCodec::kTopK;
  SimulationOptions options;
  options.schedule = ExchangeSchedule::kSequential;
  auto report = Simulate(mesh.configs(), options);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("codec = \"topk\""), std::string::npos)
      << report.status().ToString();
}

// Every message is sent once, and every fate counted once: sent = lost + dropped + refused +
// received, in messages and bytes.
void ExpectBalanced(const node::MessageLedger& l) {
  EXPECT_EQ(l.sent, l.lost + l.dropped + l.refused + l.received);
  EXPECT_EQ(l.sent_bytes, l.lost_bytes + l.dropped_bytes + l.refused_bytes + l.received_bytes);
}

// Each node's (train_loss, val_loss) per round, by node id.
std::map<std::string, std::vector<std::pair<double, double>>> Losses(SimMesh& mesh,
                                                                     const std::string& out) {
  std::map<std::string, std::vector<std::pair<double, double>>> losses;
  for (const std::string& id : mesh.ids()) {
    for (const node::RoundRow& r : Rounds(mesh.NodeDir(out, id))) {
      losses[id].emplace_back(r.train_loss, r.val_loss);
    }
  }
  return losses;
}

// Every message arrives twice: a copied request is served again and its second reply dropped as
// late, a copied reply is dropped as late. No round counts an answer twice, the nodes learn
// exactly what they learn without copies, and every message's fate is counted once.
TEST(Simulation, DuplicatedMessagesAreServedOrDroppedAndNeverCountedTwice) {
  SimMesh mesh("duplicate", kFour, 4);
  SimulationOptions options;
  options.network.latency_s = 0.01;
  SimulationReport once = mesh.Run("once", options);
  options.network.duplicate = 1;
  SimulationReport twice = mesh.Run("twice", options);
  EXPECT_EQ(twice.faults["duplicated"], twice.messages);
  EXPECT_EQ(twice.ledger.duplicated, twice.messages);
  EXPECT_GT(twice.ledger.dropped, once.ledger.dropped) << "the copies of replies are dropped";
  ExpectBalanced(once.ledger);
  ExpectBalanced(twice.ledger);
  EXPECT_EQ(Losses(mesh, "twice"), Losses(mesh, "once"));
  for (const std::string& id : kFour) {
    for (const node::RoundRow& r : Rounds(mesh.NodeDir("twice", id))) {
      EXPECT_LE(r.answered, r.sampled) << id << " round " << r.round;
    }
  }
}

// A checkpoint torn as its node dies (a crash during the write) is refused at the restart with
// its checksum error; the node says so, restarts clean from round 0 and does every round once
// more; its last checkpoint loads and agrees with its rounds.csv.
TEST(Simulation, ATornCheckpointIsRefusedAtTheRestartAndTheNodeStartsClean) {
  SimMesh mesh("torn", kFour, 8);
  SimulationOptions options;
  options.network.round_compute_s = 0.1;
  options.network.outages.push_back({"n2", OutageKind::kDeath, 3, 2.0});
  options.network.storage.torn = 1;
  SimulationReport report = mesh.Run("out", options);
  EXPECT_EQ(report.faults[kCheckpointsTorn], 1u);
  EXPECT_EQ(report.faults["torn_refused"], 1u);
  EXPECT_EQ(report.faults["torn_loaded"], 0u);
  EXPECT_EQ(report.faults["death"], 1u);
  const std::string n2 = mesh.NodeDir("out", "n2");
  const std::string log = ReadText(n2 + "/node.log");
  EXPECT_NE(log.find("restart refused its checkpoint"), std::string::npos) << log;
  EXPECT_NE(log.find("checksum does not match"), std::string::npos) << log;
  EXPECT_EQ(log.find("found checkpoint of round"), std::string::npos) << "it started clean";
  EXPECT_TRUE(std::filesystem::exists(n2 + "/checkpoint.bin.torn"));
  EXPECT_EQ(ConsecutiveRounds(n2), 9u);
  auto checkpoint = node::ReadCheckpoint(n2 + "/checkpoint.bin");
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  EXPECT_EQ(checkpoint->round, 8);
  EXPECT_FALSE(report.failures[2].has_value());
}

// A write that fails, or a full disk, when a node's outputs are written fails that node with the
// reason (nothing crashes): n2 as it dies, the others as they finish.
TEST(Simulation, AFailedWriteOrAFullDiskFailsItsNodeWithTheReason) {
  for (const bool full : {false, true}) {
    SimMesh mesh(full ? "disk_full" : "write_failed", kFour, 4);
    SimulationOptions options;
    options.network.outages.push_back({"n2", OutageKind::kDeath, 1, 2.0});
    (full ? options.network.storage.full : options.network.storage.fail) = 1;
    SimulationReport report = mesh.Run("out", options);
    EXPECT_GE(report.faults[full ? kDisksFull : kWritesFailed], 4u) << "one per node at least";
    ASSERT_EQ(report.failures.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      ASSERT_TRUE(report.failures[i].has_value()) << i;
      EXPECT_NE(report.failures[i]->find(full ? "No space left on device" : "Input/output error"),
                std::string::npos)
          << *report.failures[i];
    }
    EXPECT_LT(Rounds(mesh.NodeDir("out", "n2")).size(), 5u) << "n2 failed as it died";
  }
}

}  // namespace
}  // namespace meshlearn::sim
