// Hand-worked checks of a bounded row (topology/sampler.h, "A bounded row", "Outside estimates")
// and of the bounded view's choices (topology/peer_view.h): ranks, the two-hop estimates of peers
// without a record, whom a newcomer replaces, the shuffle's target, offer and answer.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "topology/dac_sampler.h"
#include "topology/peer_view.h"

namespace meshlearn::topology {
namespace {

std::unique_ptr<DacSampler> BoundedDac(size_t capacity, std::vector<std::string> peers,
                                       TwoHopCap cap = TwoHopCap::kOff) {
  DacOptions options;
  options.tau = 10;
  options.two_hop_cap = cap;
  auto dac = DacSampler::Create("a", options);
  EXPECT_TRUE(dac.ok());
  (*dac)->SetCapacity(capacity);
  for (const std::string& peer : peers) EXPECT_TRUE((*dac)->AddPeer(peer).ok());
  return std::move(dac).value();
}

// Round 1 of node "a": it scored b 0.9 and c 0.4. b's row names d 0.8, e 0.3 and c 0.5; c's row
// names d 0.6, f 0.7 and e -0.1.
std::vector<PeerObservation> RoundOne() {
  return {{"b", 0.9, {{"c", 0.5}, {"d", 0.8}, {"e", 0.3}}},
          {"c", 0.4, {{"d", 0.6}, {"e", -0.1}, {"f", 0.7}}}};
}

TEST(BoundedRow, RanksPositiveScoresAboveUnscoredAboveNotAlike) {
  EXPECT_EQ(RankOfScore(std::nullopt).tier, RowRank::kUnscored);
  EXPECT_EQ(RankOfScore(0.0).tier, RowRank::kNotAlike) << "0 is not evidence of likeness";
  EXPECT_EQ(RankOfScore(-0.3).tier, RowRank::kNotAlike);
  EXPECT_EQ(RankOfScore(1e-9).tier, RowRank::kPositive);
  EXPECT_TRUE(RankOfScore(-0.3) < RankOfScore(std::nullopt));
  EXPECT_TRUE(RankOfScore(std::nullopt) < RankOfScore(1e-9));
  EXPECT_TRUE(RankOfScore(0.2) < RankOfScore(0.3));
  EXPECT_TRUE(RankOfScore(-0.5) < RankOfScore(-0.1));
  EXPECT_FALSE(RankOfScore(std::nullopt) < RankOfScore(std::nullopt)) << "unscored are equal";
}

TEST(BoundedRow, AFullRowRefusesAnotherPeer) {
  auto dac = BoundedDac(2, {"b", "c"});
  Status refused = dac->AddPeer("d");
  EXPECT_EQ(refused.code(), ErrorCode::kTooMany) << refused.ToString();
  EXPECT_FALSE(dac->HasPeer("d"));
  EXPECT_TRUE(dac->AddPeer("b").ok()) << "a known peer is a no-op, even when full";
  ASSERT_TRUE(dac->RemovePeer("c").ok());
  EXPECT_TRUE(dac->AddPeer("d").ok());
  auto unbounded = BoundedDac(0, {"b", "c"});
  EXPECT_TRUE(unbounded->AddPeer("d").ok());
}

TEST(BoundedRow, OutsideEstimatesTakeTheWitnessWithTheLargestScore) {
  auto dac = BoundedDac(2, {"b", "c"});
  ASSERT_TRUE(dac->Update(1, RoundOne()).ok());
  // d: witnesses b (s_ab = 0.9) and c (0.4) both score it > 0; b is the larger, so s_ad = 0.8.
  // e: only b scores it > 0 (c's -0.1 is no evidence): 0.3. f: only c: 0.7. c is a record (and
  // sampled directly), so b's 0.5 for it is no outside estimate.
  const std::vector<OutsideEstimate>& out = dac->outside_estimates();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].peer, "d");
  EXPECT_DOUBLE_EQ(out[0].score, 0.8);
  EXPECT_EQ(out[0].witness, "b");
  EXPECT_EQ(out[1].peer, "f");
  EXPECT_DOUBLE_EQ(out[1].score, 0.7);
  EXPECT_EQ(out[1].witness, "c");
  EXPECT_EQ(out[2].peer, "e");
  EXPECT_DOUBLE_EQ(out[2].score, 0.3);
  EXPECT_EQ(out[2].witness, "b");
  EXPECT_EQ(dac->NewcomerRank("f").tier, RowRank::kPositive);
  EXPECT_DOUBLE_EQ(dac->NewcomerRank("f").score, 0.7);
  EXPECT_EQ(dac->NewcomerRank("g").tier, RowRank::kUnscored);
}

TEST(BoundedRow, WithTheWitnessCapAnOutsideEstimateIsTheWidestPath) {
  auto dac = BoundedDac(2, {"b", "c"}, TwoHopCap::kWitness);
  ASSERT_TRUE(dac->Update(1, RoundOne()).ok());
  // d: max(min(0.9, 0.8), min(0.4, 0.6)) = 0.8 by b; f: min(0.4, 0.7) = 0.4 by c;
  // e: min(0.9, 0.3) = 0.3 by b.
  std::map<std::string, std::pair<double, std::string>> got;
  for (const OutsideEstimate& e : dac->outside_estimates()) got[e.peer] = {e.score, e.witness};
  EXPECT_EQ(got["d"], (std::pair<double, std::string>{0.8, "b"}));
  EXPECT_EQ(got["f"], (std::pair<double, std::string>{0.4, "c"}));
  EXPECT_EQ(got["e"], (std::pair<double, std::string>{0.3, "b"}));
  EXPECT_EQ(dac->outside_estimates()[1].peer, "f") << "0.4 before e's 0.3";
}

TEST(BoundedRow, APeerBroughtInByAnEstimateStartsWithItAsAnEstimate) {
  auto dac = BoundedDac(2, {"b", "c"});
  ASSERT_TRUE(dac->Update(1, RoundOne()).ok());
  ASSERT_TRUE(dac->RemovePeer("c").ok());  // membership makes room for d
  ASSERT_TRUE(dac->AddPeer("d").ok());
  const PeerRecord* d = dac->Find("d");
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->score.has_value());
  EXPECT_DOUBLE_EQ(*d->score, 0.8);
  EXPECT_FALSE(d->sampled_directly) << "an estimate, which a direct score will replace";
  EXPECT_EQ(dac->NewcomerRank("d").tier, RowRank::kUnscored) << "no longer outside";
  // With τ = 10 over b 0.9 and d 0.8: d draws e^-1 of b's weight.
  EXPECT_NEAR(dac->Find("d")->probability / dac->Find("b")->probability, std::exp(-1.0), 1e-9);
  // The next update replaces the outside estimates with its own rows'.
  ASSERT_TRUE(dac->Update(2, std::vector<PeerObservation>{{"b", 0.9, {{"g", 0.2}}}}).ok());
  ASSERT_EQ(dac->outside_estimates().size(), 1u);
  EXPECT_EQ(dac->outside_estimates()[0].peer, "g");
}

TEST(BoundedRow, ARowWithRoomKeepsNoOutsideEstimates) {
  auto dac = BoundedDac(3, {"b", "c"});
  ASSERT_TRUE(dac->Update(1, RoundOne()).ok());
  EXPECT_TRUE(dac->outside_estimates().empty()) << "every verified peer joins it anyway";
  ASSERT_TRUE(dac->AddPeer("d").ok());
  EXPECT_FALSE(dac->Find("d")->score.has_value()) << "it joins unscored, as without a bound";
}

TEST(BoundedRow, KeepsTheSixteenHighestOutsideEstimatesAndNoneUnbounded) {
  ScoreRow row;
  for (int k = 0; k < 20; ++k) {
    std::string peer = "p";
    peer += std::to_string(10 + k);
    row.push_back({peer, 0.01 * (k + 1)});
  }
  auto dac = BoundedDac(1, {"b"});
  ASSERT_TRUE(dac->Update(1, std::vector<PeerObservation>{{"b", 0.9, row}}).ok());
  ASSERT_EQ(dac->outside_estimates().size(), kMaxOutsideEstimates);
  EXPECT_EQ(dac->outside_estimates().front().peer, "p29");  // 0.20
  EXPECT_EQ(dac->outside_estimates().back().peer, "p14");   // 0.05: p10..p13 dropped
  auto unbounded = BoundedDac(0, {"b"});
  ASSERT_TRUE(unbounded->Update(1, std::vector<PeerObservation>{{"b", 0.9, row}}).ok());
  EXPECT_TRUE(unbounded->outside_estimates().empty());
}

ViewMember Member(std::string_view peer, int age, std::optional<double> score,
                  std::string_view source = "") {
  return {.peer = peer, .age = age, .source = source, .rank = RankOfScore(score)};
}

// The unscored member of `view` with the largest key hash under `key`.
std::string LargestHash(const std::vector<ViewMember>& view, uint64_t key) {
  std::string_view largest;
  for (const ViewMember& m : view) {
    if (largest.empty() || MemberHash(m.peer, key) > MemberHash(largest, key)) largest = m.peer;
  }
  return std::string(largest);
}

TEST(PeerView, ANewcomerReplacesTheLowestMemberWhenItRanksAbove) {
  const uint64_t key = ViewHashKey(3);
  std::vector<ViewMember> view = {Member("p1", 3, 0.9), Member("p2", 2, std::nullopt),
                                  Member("p3", 5, std::nullopt), Member("p4", 0, -0.2)};
  // p4 is known not to be alike: the lowest, and below an unscored newcomer.
  EXPECT_EQ(Evictee(view, "n", RankOfScore(std::nullopt), "", 4, key), "p4");
  EXPECT_EQ(Evictee(view, "n", RankOfScore(-0.5), "", 4, key), std::nullopt) << "-0.5 < -0.2";
  view.pop_back();
  // Among the unscored the larger key hash goes, when the newcomer's is smaller.
  const std::string high = LargestHash({view[1], view[2]}, key);
  const std::string low = high == "p2" ? "p3" : "p2";
  for (const std::string newcomer : {"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"}) {
    const std::optional<std::string> out =
        Evictee(view, newcomer, RankOfScore(std::nullopt), "", 4, key);
    if (MemberHash(newcomer, key) < MemberHash(high, key)) {
      EXPECT_EQ(out, high) << newcomer;
    } else {
      EXPECT_EQ(out, std::nullopt) << newcomer << " hashes above both";
    }
  }
  // A peer an estimate vouches for goes above every unscored member: the higher hash goes.
  EXPECT_EQ(Evictee(view, "n", RankOfScore(0.5), "", 4, key), high);
  EXPECT_NE(high, low);
  // Every member scored: only a higher score gets in, in place of the lowest.
  view = {Member("p1", 3, 0.9), Member("p2", 1, 0.6), Member("p3", 1, 0.7)};
  EXPECT_EQ(Evictee(view, "n", RankOfScore(0.5), "", 4, key), std::nullopt);
  EXPECT_EQ(Evictee(view, "n", RankOfScore(std::nullopt), "", 4, key), std::nullopt);
  EXPECT_EQ(Evictee(view, "n", RankOfScore(0.65), "", 4, key), "p2");
}

TEST(PeerView, TheUnscoredPartOfAFullViewIsTheSmallestHashesWhateverTheArrivalOrder) {
  // 40 unscored peers arrive, one by one, at a full view of 8; two orders, one outcome: the 8 of
  // the smallest key hash (a uniform sample of the 40, whoever came first).
  const uint64_t key = ViewHashKey(9);
  std::vector<std::string> ids;
  for (int k = 0; k < 40; ++k) ids.push_back("q" + std::to_string(k));
  auto fill = [&](std::vector<std::string> order) {
    std::vector<std::string> members(order.begin(), order.begin() + 8);
    for (size_t k = 8; k < order.size(); ++k) {
      std::vector<ViewMember> view;
      for (const std::string& m : members) view.push_back(Member(m, 1, std::nullopt));
      std::optional<std::string> out =
          Evictee(view, order[k], RankOfScore(std::nullopt), "", 8, key);
      if (out) std::replace(members.begin(), members.end(), *out, order[k]);
    }
    return std::set<std::string>(members.begin(), members.end());
  };
  std::vector<std::string> reversed(ids.rbegin(), ids.rend());
  std::vector<std::string> by_hash = ids;
  std::sort(by_hash.begin(), by_hash.end(), [&](const std::string& a, const std::string& b) {
    return MemberHash(a, key) < MemberHash(b, key);
  });
  const std::set<std::string> expected(by_hash.begin(), by_hash.begin() + 8);
  EXPECT_EQ(fill(ids), expected);
  EXPECT_EQ(fill(reversed), expected);
  EXPECT_NE(expected, std::set<std::string>(ids.begin(), ids.begin() + 8)) << "not the first 8";
}

TEST(PeerView, MembersThatLeftOrDiedGiveWayFirst) {
  std::vector<ViewMember> view = {Member("p1", 0, 0.9), Member("p2", 0, 0.8), Member("p3", 0, 0.7)};
  view[2].dead = true;
  EXPECT_EQ(Evictee(view, "n", RankOfScore(-1.0), "", 4, 1), "p3") << "whatever its rank";
  view[1].left = true;
  EXPECT_EQ(Evictee(view, "n", RankOfScore(-1.0), "", 4, 1), "p2") << "left before dead";
}

TEST(PeerView, OneSourceTakesAtMostItsShareOfAFullView) {
  std::vector<ViewMember> view = {Member("p1", 2, 0.2, "s"), Member("p2", 2, 0.3, "s"),
                                  Member("p3", 2, 0.1, "t"), Member("p4", 2, 0.9)};
  EXPECT_EQ(Evictee(view, "n", RankOfScore(0.5), "s", 2, 1), std::nullopt) << "s holds its 2";
  EXPECT_EQ(Evictee(view, "n", RankOfScore(0.5), "t", 2, 1), "p3") << "t holds 1; p3 is lowest";
  EXPECT_EQ(Evictee(view, "n", RankOfScore(0.5), "", 2, 1), "p3") << "told by nobody";
}

TEST(PeerView, TheShuffleTargetIsTheOldestSamplableMember) {
  std::vector<ViewMember> view = {Member("b", 2, 0.1), Member("c", 5, std::nullopt),
                                  Member("d", 5, 0.9), Member("e", 5, 0.3), Member("f", 9, 0.3)};
  view[4].samplable = false;  // dead: not a target
  EXPECT_EQ(ShuffleTarget(view), "c") << "age 5, and c < d < e";
  view[1].samplable = false;
  EXPECT_EQ(ShuffleTarget(view), "d");
  for (ViewMember& m : view) m.samplable = false;
  EXPECT_EQ(ShuffleTarget(view), std::nullopt);
}

std::vector<ViewMember> TenMembers(std::vector<std::string>& ids) {
  ids.clear();
  for (int k = 0; k < 10; ++k) ids.push_back("m" + std::to_string(k));
  std::vector<ViewMember> view;
  for (const std::string& id : ids) view.push_back(Member(id, 0, std::nullopt));
  return view;
}

TEST(PeerView, RandomMembersAreADistinctUniformDrawOfTheSamplableOthers) {
  std::vector<std::string> ids;
  std::vector<ViewMember> view = TenMembers(ids);
  view[3].samplable = false;
  std::map<std::string, int> drawn;
  const int draws = 9000;
  for (int draw = 0; draw < draws; ++draw) {
    std::vector<std::string> picked = RandomMembers(view, "m0", 3, ViewDrawKey(7, draw));
    ASSERT_EQ(picked.size(), 3u);
    EXPECT_EQ(std::set<std::string>(picked.begin(), picked.end()).size(), 3u);
    for (const std::string& p : picked) ++drawn[p];
    EXPECT_EQ(picked, RandomMembers(view, "m0", 3, ViewDrawKey(7, draw))) << "the same key";
  }
  EXPECT_EQ(drawn.count("m0"), 0u) << "the excluded member";
  EXPECT_EQ(drawn.count("m3"), 0u) << "not samplable";
  ASSERT_EQ(drawn.size(), 8u);
  // 3 of the 8 others per draw: 9000 * 3 / 8 = 3375 each; a binomial's sd is about 46.
  for (const auto& [peer, times] : drawn) EXPECT_NEAR(times, 3375, 250) << peer;
  EXPECT_EQ(RandomMembers(view, "m0", 20, 1).size(), 8u) << "fewer when the view has fewer";
}

TEST(PeerView, AnAnswerListsTheBestRankedHalfThenRandomOthers) {
  std::vector<ViewMember> view = {Member("b", 0, 0.9),          Member("c", 0, 0.7),
                                  Member("d", 0, std::nullopt), Member("e", 0, -0.4),
                                  Member("f", 0, 0.8),          Member("g", 0, 0.95)};
  // count 3: the ceil(3/2) = 2 best other than the requester g are b (0.9) and f (0.8); then one
  // of c, d and e at random.
  for (uint64_t draw = 0; draw < 50; ++draw) {
    std::vector<std::string> answer = ShuffleAnswer(view, "g", 3, ViewDrawKey(1, draw));
    ASSERT_EQ(answer.size(), 3u);
    EXPECT_EQ(answer[0], "b");
    EXPECT_EQ(answer[1], "f");
    EXPECT_TRUE(answer[2] == "c" || answer[2] == "d" || answer[2] == "e") << answer[2];
  }
  // count 4: b, f, then two of the rest.
  std::vector<std::string> four = ShuffleAnswer(view, "g", 4, ViewDrawKey(1, 0));
  ASSERT_EQ(four.size(), 4u);
  EXPECT_EQ(four[0], "b");
  EXPECT_EQ(four[1], "f");
  EXPECT_EQ(ShuffleAnswer(view, "g", 10, 1).size(), 5u) << "every other member";
}

}  // namespace
}  // namespace meshlearn::topology
