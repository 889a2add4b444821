// The sequential exchange schedule's turns (sim/exchange_turns.h): the order of a round, and
// which node exchanges when, rule by rule.
#include "sim/exchange_turns.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace meshlearn::sim {
namespace {

using Kind = TurnStep::Kind;

TEST(TurnOrder, IsAPermutationDrawnFromTheSeedAFreshOneEachRound) {
  std::set<std::vector<size_t>> orders;
  for (int64_t round = 1; round <= 20; ++round) {
    std::vector<size_t> order = TurnOrder(7, round, 10);
    std::vector<size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < 10; ++i) EXPECT_EQ(sorted[i], i) << "round " << round;
    EXPECT_EQ(order, TurnOrder(7, round, 10)) << "the same seed and round, the same order";
    orders.insert(order);
  }
  EXPECT_EQ(orders.size(), 20u) << "a fresh order every round";
  EXPECT_NE(TurnOrder(7, 1, 10), TurnOrder(8, 1, 10)) << "another seed, another order";
  // The documented generator, pinned: a change of it changes every sequential run.
  EXPECT_EQ(TurnOrder(1, 1, 4), (std::vector<size_t>{1, 2, 3, 0}));
  EXPECT_EQ(TurnOrder(1, 2, 4), (std::vector<size_t>{2, 3, 0, 1}));
}

// Nodes 0-3, present unless `away` or `gone` name them.
struct Mesh {
  ExchangeTurns turns{1, 4};
  std::set<size_t> away, gone;
  std::map<size_t, int64_t> waits_for;  // the round each node asked for last

  void Ask(size_t node, int64_t round, bool exchanges = true) {
    waits_for[node] = round;
    turns.Ask(node, round, exchanges);
  }
  std::optional<TurnStep> Next() {
    return turns.Next([this](size_t i) {
      if (gone.count(i)) return NodePresence::kGone;
      return away.count(i) ? NodePresence::kAway : NodePresence::kPresent;
    });
  }
  // Takes every step there is now: every turn ends at once; a released node asks for its next
  // round up to `last_round`. The steps in order: "g2" grants node 2, "r1" releases node 1.
  std::vector<std::string> Run(int64_t last_round) {
    std::vector<std::string> steps;
    while (auto step = Next()) {
      const size_t i = step->node;
      steps.push_back((step->kind == Kind::kGrant ? "g" : "r") + std::to_string(i));
      if (step->kind == Kind::kGrant) {
        turns.TurnOver(i);
      } else if (waits_for[i] < last_round) {
        Ask(i, waits_for[i] + 1);
      }
    }
    return steps;
  }
};

std::vector<std::string> Grants(const std::vector<size_t>& order, size_t skip = 99) {
  std::vector<std::string> steps;
  for (size_t i : order) {
    if (i != skip) steps.push_back("g" + std::to_string(i));
  }
  return steps;
}

std::vector<std::string> Releases(size_t skip = 99) {
  std::vector<std::string> steps;
  for (size_t i = 0; i < 4; ++i) {
    if (i != skip) steps.push_back("r" + std::to_string(i));
  }
  return steps;
}

std::vector<std::string> Join(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ExchangeTurns, OneNodeAtATimeInTheRoundsOrderThenEveryNodeIsReleased) {
  Mesh mesh;
  for (size_t i = 0; i < 3; ++i) mesh.Ask(i, 1);
  EXPECT_FALSE(mesh.Next()) << "node 3 is on its way to round 1";
  mesh.Ask(3, 1);
  const std::vector<size_t> order = TurnOrder(1, 1, 4);
  auto first = mesh.Next();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->kind, Kind::kGrant);
  EXPECT_EQ(first->node, order[0]);
  EXPECT_FALSE(mesh.turns.MayStep());
  EXPECT_FALSE(mesh.Next()) << "no second turn while the first is under way";
  mesh.turns.TurnOver(order[0]);
  EXPECT_EQ(mesh.Run(2), Join(Join(Grants({order.begin() + 1, order.end()}), Releases()),
                              Join(Grants(TurnOrder(1, 2, 4)), Releases())))
      << "round 2 begins once every node waits for it";
  EXPECT_EQ(mesh.turns.round(), 2);
}

TEST(ExchangeTurns, ARestingNodeTakesNoTurnAndIsReleasedWithTheOthers) {
  Mesh mesh;
  for (size_t i = 0; i < 4; ++i) mesh.Ask(i, 1, i != 2);
  EXPECT_EQ(mesh.Run(1), Join(Grants(TurnOrder(1, 1, 4), 2), Releases()));
}

TEST(ExchangeTurns, AGoneNodeIsNeitherWaitedForNorGrantedATurn) {
  Mesh mesh;
  mesh.gone = {1};
  for (size_t i : {0, 2, 3}) mesh.Ask(i, 1);
  EXPECT_EQ(mesh.Run(2), Join(Join(Grants(TurnOrder(1, 1, 4), 1), Releases(1)),
                              Join(Grants(TurnOrder(1, 2, 4), 1), Releases(1))));
  // A node taken apart while it held the turn gives it up.
  Mesh held;
  for (size_t i = 0; i < 4; ++i) held.Ask(i, 1);
  auto step = held.Next();
  ASSERT_TRUE(step);
  held.turns.Forget(step->node);
  held.gone = {step->node};
  auto next = held.Next();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->kind, Kind::kGrant);
  EXPECT_EQ(next->node, TurnOrder(1, 1, 4)[1]);
}

// A node away (paused) when its slot comes loses it. Back before the next round, it takes its
// turn after the round's others and is released at once, and the next round waits for it; away
// for longer, the next round begins without it.
TEST(ExchangeTurns, ANodeAwayAtItsSlotTakesItsTurnWhenBack) {
  const std::vector<size_t> order = TurnOrder(1, 1, 4);
  const size_t late = order[0];
  const std::string l = std::to_string(late);
  Mesh back;
  back.away = {late};
  for (size_t i = 0; i < 4; ++i) back.Ask(i, 1);
  for (size_t k = 1; k < 4; ++k) {
    auto grant = back.Next();
    ASSERT_TRUE(grant);
    EXPECT_EQ(grant->node, order[k]);
    back.turns.TurnOver(grant->node);
  }
  back.away.clear();
  EXPECT_EQ(back.Run(2), Join(Join(Releases(late), {"g" + l, "r" + l}),
                              Join(Grants(TurnOrder(1, 2, 4)), Releases())));

  Mesh away;
  away.away = {late};
  for (size_t i = 0; i < 4; ++i) away.Ask(i, 1);
  EXPECT_EQ(away.Run(2), Join(Join(Grants(order, late), Releases(late)),
                              Join(Grants(TurnOrder(1, 2, 4), late), Releases(late))));
  away.away.clear();  // back after round 2: it catches up on rounds 1 and 2 at once
  EXPECT_EQ(away.Run(2), (std::vector<std::string>{"g" + l, "r" + l, "g" + l, "r" + l}));
}

}  // namespace
}  // namespace meshlearn::sim
