// The snapshot barrier (sim/snapshot_barrier.h), rule by rule: when barriers fall, when one is
// due, and the snapshot folder it writes and a resumed simulation reads.
#include "sim/snapshot_barrier.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <sstream>

#include "base/atomic_file.h"

namespace meshlearn::sim {
namespace {

TEST(SnapshotBarrier, FallsEveryNRoundsWhileSomeNodeHasRoundsLeft) {
  SnapshotBarrier barrier(10, "unused", 2);
  barrier.PlanAfter(0, {25, 12});
  EXPECT_EQ(barrier.next(), 10);
  barrier.PlanAfter(10, {25, 12});
  EXPECT_EQ(barrier.next(), 20) << "node 0 still has rounds after 20";
  barrier.PlanAfter(20, {25, 12});
  EXPECT_EQ(barrier.next(), -1) << "no node has a round after 30";

  SnapshotBarrier never(0, "unused", 2);
  never.PlanAfter(0, {25, 12});
  EXPECT_EQ(never.next(), -1);
}

TEST(SnapshotBarrier, IsDueOnceWhenEveryNodeIsThere) {
  SnapshotBarrier barrier(10, "unused", 3);
  barrier.PlanAfter(0, {50, 50, 50});
  EXPECT_FALSE(barrier.Update(0, false, 10));
  EXPECT_FALSE(barrier.Update(1, true, std::nullopt)) << "finished: there";
  EXPECT_FALSE(barrier.Update(2, false, 9));
  EXPECT_TRUE(barrier.Update(2, false, 10)) << "the last node arrives";
  EXPECT_FALSE(barrier.Update(2, false, 10)) << "already scheduled";
  EXPECT_TRUE(barrier.Take());
  barrier.Clear();
  EXPECT_FALSE(barrier.Update(0, false, 10)) << "cleared: the others are not there";
}

TEST(SnapshotBarrier, ANodeThatLeavesBeforeItIsTakenHoldsItUp) {
  SnapshotBarrier barrier(5, "unused", 2);
  barrier.PlanAfter(0, {20, 20});
  EXPECT_FALSE(barrier.Update(0, false, 5));
  EXPECT_TRUE(barrier.Update(1, false, 5));
  EXPECT_FALSE(barrier.Update(1, false, std::nullopt)) << "died in an outage";
  EXPECT_FALSE(barrier.Take()) << "not every node is there";
  EXPECT_TRUE(barrier.Update(1, false, 5)) << "restarted from its checkpoint of round 5";
  EXPECT_TRUE(barrier.Take());
}

TEST(SnapshotBarrier, WithoutABarrierAheadNoNodeIsThere) {
  SnapshotBarrier barrier(0, "unused", 1);
  barrier.PlanAfter(0, {20});
  EXPECT_FALSE(barrier.Update(0, true, std::nullopt));
}

// A folder with two nodes' checkpoints ("a" and "b") and a snapshot of barrier `round`.
class SnapshotFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = ::testing::TempDir() + "/snapshot_barrier_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ + "/a");
    std::filesystem::create_directories(root_ + "/b");
  }

  std::string Checkpoint(const std::string& id) const { return root_ + "/" + id + "/ckpt"; }

  // Takes the snapshot of barrier `round`, each node's checkpoint holding `bytes` + its id.
  void Take(SnapshotBarrier& barrier, int64_t round, const std::string& bytes) {
    SimulationSnapshot s;
    s.round = round;
    s.every = 3;
    s.generator = Generator();
    barrier.Begin(round);
    for (const std::string id : {"a", "b"}) {
      ASSERT_TRUE(WriteFileAtomically(Checkpoint(id), bytes + id).ok());
      ASSERT_TRUE(barrier.KeepCheckpoint(id, Checkpoint(id)).ok());
      s.nodes.push_back({id, true, 1, 10, 20, round, 0.5, {}, std::nullopt});
    }
    ASSERT_TRUE(barrier.Commit(s).ok());
  }

  static std::string Generator() {
    std::ostringstream text;
    text << std::mt19937_64(7);
    return text.str();
  }

  std::string root_;
};

TEST_F(SnapshotFolder, KeepsTheLastSnapshotAndRestoresItsCheckpoints) {
  SnapshotBarrier barrier(3, root_ + "/snapshot", 2);
  Take(barrier, 3, "round 3 of ");
  Take(barrier, 6, "round 6 of ");
  EXPECT_FALSE(std::filesystem::exists(root_ + "/snapshot/round-3")) << "the older one goes";
  EXPECT_TRUE(std::filesystem::exists(root_ + "/snapshot/round-6/a.checkpoint.bin"));

  ASSERT_TRUE(WriteFileAtomically(Checkpoint("a"), "written after the barrier").ok());
  std::mt19937_64 generator;
  auto loaded = barrier.Load({"a", "b"}, 0, generator);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->round, 6);
  EXPECT_EQ(generator, std::mt19937_64(7));
  ASSERT_TRUE(barrier.RestoreCheckpoint(loaded->round, "a", Checkpoint("a")).ok());
  EXPECT_EQ(*ReadWholeFile(Checkpoint("a")), "round 6 of a");
}

TEST_F(SnapshotFolder, ASnapshotOfOtherNodesIsRefusedNamingThem) {
  SnapshotBarrier barrier(3, root_ + "/snapshot", 2);
  Take(barrier, 3, "round 3 of ");
  std::mt19937_64 generator;
  auto other = barrier.Load({"a", "x"}, 0, generator);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("node 'b' where this run has 'x'"), std::string::npos)
      << other.status().ToString();

  auto fewer = barrier.Load({"a"}, 0, generator);
  ASSERT_FALSE(fewer.ok());
  EXPECT_NE(fewer.status().message().find("holds 2 nodes, this run 1"), std::string::npos)
      << fewer.status().ToString();

  SnapshotBarrier other_cadence(4, root_ + "/snapshot", 2);
  auto cadence = other_cadence.Load({"a", "b"}, 0, generator);
  ASSERT_FALSE(cadence.ok());
  EXPECT_NE(cadence.status().message().find("--snapshot-every 3"), std::string::npos)
      << cadence.status().ToString();
}

TEST_F(SnapshotFolder, WithoutASnapshotThereIsNothingToResume) {
  SnapshotBarrier barrier(3, root_ + "/snapshot", 2);
  std::mt19937_64 generator;
  auto loaded = barrier.Load({"a", "b"}, 0, generator);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace meshlearn::sim
