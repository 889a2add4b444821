#include "topology/peer_table.h"

#include <gtest/gtest.h>

namespace meshlearn::topology {
namespace {

using std::chrono::seconds;

TEST(PeerTable, PeersAreSamplableOnlyAfterTheirHello) {
  PeerTable table("me", 3, seconds(10), seconds(60));
  EXPECT_TRUE(table.Learn("a", "tcp://127.0.0.1:2", ""));
  EXPECT_FALSE(table.Learn("a", "tcp://127.0.0.1:3", ""));  // a known candidate: endpoint updated
  EXPECT_EQ(table.Find("a")->endpoint, "tcp://127.0.0.1:3");
  EXPECT_FALSE(table.Learn("me", "tcp://x:1", ""));
  EXPECT_FALSE(table.IsSamplable("a", {}));
  table.MarkActive("a");
  EXPECT_TRUE(table.IsSamplable("a", {}));
}

TEST(PeerTable, RepeatedFailuresKillAPeerWithDoublingBackoffAndSuccessRevivesIt) {
  PeerTable table("me", 2, seconds(10), seconds(25));
  table.Learn("a", "tcp://127.0.0.1:2", "");
  table.MarkActive("a");
  Clock::time_point t{};
  EXPECT_FALSE(table.RecordFailure("a", t));
  EXPECT_EQ(table.LivenessOf("a", t), Liveness::kAlive);
  EXPECT_TRUE(table.RecordFailure("a", t));
  EXPECT_EQ(table.LivenessOf("a", t + seconds(9)), Liveness::kDead);
  EXPECT_EQ(table.LivenessOf("a", t + seconds(10)), Liveness::kProbation);
  // A failure on probation: dead again for twice as long.
  EXPECT_TRUE(table.RecordFailure("a", t + seconds(10)));
  EXPECT_EQ(table.LivenessOf("a", t + seconds(29)), Liveness::kDead);
  EXPECT_EQ(table.LivenessOf("a", t + seconds(30)), Liveness::kProbation);
  // The backoff is capped.
  EXPECT_TRUE(table.RecordFailure("a", t + seconds(30)));
  EXPECT_EQ(table.LivenessOf("a", t + seconds(55)), Liveness::kProbation);
  table.RecordSuccess("a");
  EXPECT_EQ(table.LivenessOf("a", t + seconds(55)), Liveness::kAlive);
  EXPECT_EQ(table.Find("a")->failures_total, 4u);
}

TEST(PeerTable, AVerifiedPeerKeepsItsEndpointAgainstLearnAndLeavesUntilVerifiedAgain) {
  PeerTable table("me", 2, seconds(10), seconds(60));
  table.Learn("a", "tcp://127.0.0.1:2", "");
  table.MarkActive("a");
  EXPECT_EQ(table.verified(), 1u);
  table.Learn("a", "tcp://127.0.0.9:9", "");  // gossip cannot move a verified peer
  EXPECT_EQ(table.Find("a")->endpoint, "tcp://127.0.0.1:2");
  table.MoveVerified("a", "tcp://127.0.0.1:3", "");
  EXPECT_EQ(table.Find("a")->endpoint, "tcp://127.0.0.1:3");
  table.MarkLeft("a");
  EXPECT_EQ(table.LivenessOf("a", {}), Liveness::kLeft);
  EXPECT_FALSE(table.IsSamplable("a", {}));
  EXPECT_EQ(table.Replaceable({}), "a");
  table.MarkActive("a");
  EXPECT_EQ(table.LivenessOf("a", {}), Liveness::kAlive);
  EXPECT_EQ(table.Replaceable({}), std::nullopt);
  table.Forget("a");
  EXPECT_EQ(table.verified(), 0u);
}

}  // namespace
}  // namespace meshlearn::topology
