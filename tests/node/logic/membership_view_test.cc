// The bounded view of membership (node/logic/membership.h, "Bounded view"), hand-worked through
// the state machine with scripted messages: the shuffle's targets round by round, its lists and
// answers, whom a newcomer replaces, one source's share, and a two-hop estimate bringing a peer in
// through its witness.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "node/logic/membership.h"
#include "tests/node/logic/machine_test_support.h"

namespace meshlearn::node::testing {
namespace {

// Node "me" with a view of `view_size`, shuffles of 3 entries and `peers`, 6 rounds.
StateMachineConfig ViewConfig(size_t view_size, std::vector<PeerAddress> peers) {
  StateMachineConfig c = MachineConfig("me", std::move(peers), 6);
  c.membership.view_size = view_size;
  c.membership.shuffle_length = 3;
  c.membership.view_seed = 11;
  return c;
}

const std::vector<PeerAddress> kFour = {{"a", "tcp://127.0.0.1:2"},
                                        {"b", "tcp://127.0.0.1:3"},
                                        {"c", "tcp://127.0.0.1:4"},
                                        {"d", "tcp://127.0.0.1:5"}};

std::vector<std::string> Ids(const PeerList& list) {
  std::vector<std::string> ids;
  for (const PeerInfo& p : list.peers) ids.push_back(p.id);
  return ids;
}

// Completes round `round`, which `actions` began (its fetches answered with models of the round
// before, no scores), and returns the next round's actions.
Actions NextRound(NodeStateMachine& m, const Actions& actions, int64_t round, TimePoint now) {
  for (const SendRequest& r : Requests(actions, MessageType::kGetModel)) {
    m.OnReply(r.request_id, From(r.peer, r.request_id, PeerModelAt(round - 1)), now);
  }
  return m.OnComputeDone(Outcome(round), now);
}

// Verifies `id` at `endpoint` after its Hello: greeted back from the next tick, and answering.
void Verify(NodeStateMachine& m, const std::string& id, const std::string& endpoint,
            TimePoint now) {
  m.OnInbound(1, From(id, 1, Hello{endpoint, "linear/1/4/5", "cos_weights", "", 3}), now);
  for (const SendRequest& r : Requests(m.OnTick(now), MessageType::kHello)) {
    m.OnReply(r.request_id, From(r.peer, 2, AckFor(r.endpoint)), now);
  }
}

TEST(MembershipView, AViewWithRoomGossipsAsFullMembership) {
  auto m = AdmittedMachine(ViewConfig(4, {kFour[0], kFour[1], kFour[2]}));
  auto lists = Requests(m->OnComputeDone(Outcome(0), {}), MessageType::kPeerList);
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_EQ(Ids(std::get<PeerList>(lists[0].message.body)),
            (std::vector<std::string>{"me", "a", "b", "c"}))
      << "3 of 4 places taken: the whole view, as without a bound";
}

TEST(MembershipView, ShufflesGoToTheOldestMemberRoundByRound) {
  TimePoint t0{};
  auto m = AdmittedMachine(ViewConfig(3, {kFour[0], kFour[1], kFour[2]}));
  // Ages after round 1's step: a, b, c all 1; the oldest, smallest id is a (then 0).
  // Round 2: a 1, b 2, c 2 -> b. Round 3: a 2, b 1, c 3 -> c. Round 4: a 3, b 2, c 1 -> a.
  const std::vector<std::string> expected = {"a", "b", "c", "a"};
  Actions actions = m->OnComputeDone(Outcome(0), t0);
  for (size_t round = 1; round <= expected.size(); ++round) {
    auto lists = Requests(actions, MessageType::kPeerList);
    ASSERT_EQ(lists.size(), 1u) << "round " << round;
    EXPECT_EQ(lists[0].peer, expected[round - 1]) << "round " << round;
    // The list: the node itself first, then shuffle_length - 1 = 2 others, never the target.
    std::vector<std::string> ids = Ids(std::get<PeerList>(lists[0].message.body));
    ASSERT_EQ(ids.size(), 3u);
    EXPECT_EQ(ids[0], "me");
    std::set<std::string> others(ids.begin() + 1, ids.end());
    std::set<std::string> rest = {"a", "b", "c"};
    rest.erase(expected[round - 1]);
    EXPECT_EQ(others, rest) << "round " << round;
    actions = NextRound(*m, actions, static_cast<int64_t>(round), t0);
  }
}

TEST(MembershipView, AFullViewAnswersAShuffleWithShuffleLengthEntries) {
  TimePoint t0{};
  auto m = AdmittedMachine(ViewConfig(4, kFour));
  auto replies =
      All<SendReply>(m->OnInbound(1, From("a", 4, PeerList{{{"a", "tcp://127.0.0.1:2", ""}}}), t0));
  ASSERT_EQ(replies.size(), 1u);
  std::vector<std::string> ids = Ids(std::get<PeerList>(replies[0].message.body));
  ASSERT_EQ(ids.size(), 3u) << "itself and 2 of b, c, d; not the whole view";
  EXPECT_EQ(ids[0], "me");
  // Every member unscored: the best-ranked half is the smallest id other than the requester.
  EXPECT_EQ(ids[1], "b");
  EXPECT_TRUE(ids[2] == "c" || ids[2] == "d") << ids[2];
}

// The ids n0..n99 ordered by their key hash in a view of ViewConfig's seed.
std::vector<std::string> ByHash() {
  const uint64_t key = topology::ViewHashKey(11);
  std::vector<std::string> ids;
  for (int k = 0; k < 100; ++k) ids.push_back("n" + std::to_string(k));
  std::sort(ids.begin(), ids.end(), [&](const std::string& a, const std::string& b) {
    return topology::MemberHash(a, key) < topology::MemberHash(b, key);
  });
  return ids;
}

TEST(MembershipView, AnUnscoredNewcomerReplacesTheMemberOfLargestHashWhenItsIsSmaller) {
  TimePoint t0{};
  auto m = AdmittedMachine(ViewConfig(3, {kFour[0], kFour[1], kFour[2]}));
  const uint64_t key = topology::ViewHashKey(11);
  std::string largest = "a";
  for (const std::string peer : {"b", "c"}) {
    if (topology::MemberHash(peer, key) > topology::MemberHash(largest, key)) largest = peer;
  }
  const std::vector<std::string> ids = ByHash();
  // ids.back() hashes above a, b and c with near certainty (checked): it is not admitted...
  ASSERT_GT(topology::MemberHash(ids.back(), key), topology::MemberHash(largest, key));
  Verify(*m, ids.back(), "tcp://127.0.0.9:8", t0);
  EXPECT_FALSE(m->sampler().HasPeer(ids.back()));
  EXPECT_EQ(m->peers().Find(ids.back()), nullptr) << "forgotten";
  // ...and ids.front() hashes below them: it takes the place of the largest.
  ASSERT_LT(topology::MemberHash(ids.front(), key), topology::MemberHash(largest, key));
  Verify(*m, ids.front(), "tcp://127.0.0.9:9", t0);
  EXPECT_TRUE(m->sampler().HasPeer(ids.front()));
  EXPECT_FALSE(m->sampler().HasPeer(largest));
  EXPECT_EQ(m->peers().Find(largest), nullptr);
  EXPECT_EQ(m->peers().verified(), 3u);
  EXPECT_EQ(m->sampler().Records().size(), 3u);
}

TEST(MembershipView, OneSourceFillsAtMostAQuarterOfAFullView) {
  TimePoint t0{};
  auto m = AdmittedMachine(ViewConfig(4, kFour));
  const std::vector<std::string> ids = ByHash();  // the first two hash below a, b, c and d
  m->OnInbound(
      1,
      From("a", 4,
           PeerList{{{ids[0], "tcp://127.0.0.8:1", ""}, {ids[1], "tcp://127.0.0.8:2", ""}}}),
      t0);
  for (const SendRequest& r : Requests(m->OnTick(t0), MessageType::kHello)) {
    m->OnReply(r.request_id, From(r.peer, 2, AckFor(r.endpoint)), t0);
  }
  // The first took a member's place; the second, also told by a, finds a's share of
  // ceil(4 / 4) = 1 taken.
  EXPECT_EQ(m->sampler().HasPeer(ids[0]) + m->sampler().HasPeer(ids[1]), 1);
  EXPECT_EQ(m->peers().verified(), 4u);
}

TEST(MembershipView, AFullViewDoesNotGreetCandidatesThatCouldNotEnterIt) {
  TimePoint t0{};
  auto m = AdmittedMachine(ViewConfig(3, {kFour[0], kFour[1], kFour[2]}));
  const std::vector<std::string> ids = ByHash();
  m->OnInbound(1, From("a", 4, PeerList{{{ids.back(), "tcp://127.0.0.8:1", ""}}}), t0);
  EXPECT_EQ(m->peers().Find(ids.back()), nullptr) << "its hash is above every member's";
  EXPECT_TRUE(Requests(m->OnTick(t0), MessageType::kHello).empty());
}

TEST(MembershipView, ATwoHopEstimateBringsAPeerInThroughItsWitness) {
  TimePoint t0{};
  auto m = AdmittedMachine(ViewConfig(3, {kFour[0], kFour[1], kFour[2]}));
  Actions round1 = m->OnComputeDone(Outcome(0), t0);
  auto fetches = Requests(round1, MessageType::kGetModel);
  ASSERT_EQ(fetches.size(), 2u);
  // Round 2's oldest member will be b (a 1, b 2, c 2); the witness is a sampled peer other than b.
  const std::string witness = fetches[0].peer != "b" ? fetches[0].peer : fetches[1].peer;
  const std::string other = fetches[0].peer == witness ? fetches[1].peer : fetches[0].peer;
  for (const SendRequest& r : fetches) {
    Model model = PeerModelAt(0);
    model.score_row = {{"k", 0.8}};
    m->OnReply(r.request_id, From(r.peer, r.request_id, model), t0);
  }
  Actions round2 = m->OnComputeDone(
      Outcome(1, {{witness, 0.9, Status::Ok(), false}, {other, 0.4, Status::Ok(), false}}), t0);
  ASSERT_EQ(m->sampler().outside_estimates().size(), 1u);
  EXPECT_EQ(m->sampler().outside_estimates()[0].witness, witness);
  auto lists = Requests(round2, MessageType::kPeerList);
  ASSERT_EQ(lists.size(), 1u);
  EXPECT_EQ(lists[0].peer, witness) << "the witness knows k's address; b would be the oldest";
  // The witness answers with k among the peers it ranks highest; k is greeted and, vouched for at
  // 0.8, takes the place of the view's unscored member.
  m->OnReply(lists[0].request_id,
             From(witness, lists[0].request_id,
                  PeerList{{{witness, "tcp://127.0.0.1:2", ""}, {"k", "tcp://127.0.0.7:7", ""}}}),
             t0);
  for (const SendRequest& r : Requests(m->OnTick(t0), MessageType::kHello)) {
    m->OnReply(r.request_id, From(r.peer, 2, AckFor(r.endpoint)), t0);
  }
  const topology::PeerRecord* k = m->sampler().Find("k");
  ASSERT_NE(k, nullptr);
  ASSERT_TRUE(k->score.has_value());
  EXPECT_DOUBLE_EQ(*k->score, 0.8);
  EXPECT_FALSE(k->sampled_directly);
  EXPECT_TRUE(m->sampler().HasPeer(witness));
  EXPECT_TRUE(m->sampler().HasPeer(other)) << "0.4 ranks above the unscored third member";
  EXPECT_EQ(m->sampler().Records().size(), 3u);
}

}  // namespace
}  // namespace meshlearn::node::testing
