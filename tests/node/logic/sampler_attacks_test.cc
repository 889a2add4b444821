// The sampler attacks (node/logic/sampler_attacks.h), against hand-worked rows and lists, and
// what an attacking node's replies carry (issue 47).
#include "node/logic/sampler_attacks.h"

#include <gtest/gtest.h>

#include "tests/node/logic/machine_test_support.h"

namespace meshlearn::node::testing {
namespace {

TEST(ScoreLie, PromotesTheAlliesAboveEveryHonestScoreAndDemotesTheRest) {
  // The largest |s| is 0.9, so h = 1.8: allies d and e get 1.8 (d replaces its honest 0.3; the
  // liar itself, a, is left out), b and c get 1.8e-6 (c's negative score turns positive).
  const topology::ScoreRow honest = {{"b", 0.9}, {"c", -0.5}, {"d", 0.3}};
  const topology::ScoreRow lie = LyingScoreRow(honest, {"e", "a", "d"}, "a");
  ASSERT_EQ(lie.size(), 4u);
  const std::vector<std::string> order = {"b", "c", "d", "e"};
  const std::vector<double> scores = {1.8e-6, 1.8e-6, 1.8, 1.8};
  for (size_t k = 0; k < lie.size(); ++k) {
    EXPECT_EQ(lie[k].peer, order[k]);
    EXPECT_DOUBLE_EQ(lie[k].score, scores[k]) << order[k];
  }
  // With nothing scored yet, the allies get 1.
  const topology::ScoreRow first = LyingScoreRow({}, {"x"}, "a");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].score, 1);
}

TEST(Sybil, MadeUpIdentitiesAreValidIdsAtTheAttackerOrNowhere) {
  const std::vector<PeerInfo> self =
      SybilIdentities("n7", "tcp://127.0.0.1:5", 3, SybilAddress::kSelf);
  ASSERT_EQ(self.size(), 3u);
  EXPECT_EQ(self[0].id, "n7.sybil0");
  EXPECT_EQ(self[2].id, "n7.sybil2");
  EXPECT_EQ(self[1].endpoint, "tcp://127.0.0.1:5");
  const std::vector<PeerInfo> nowhere =
      SybilIdentities(std::string(64, 'n'), "tcp://h:1", 2, SybilAddress::kNowhere);
  EXPECT_EQ(nowhere[1].id, std::string(48, 'n') + ".sybil1");  // within the 64-character rule
  EXPECT_EQ(nowhere[1].endpoint, "tcp://192.0.2.1:1025");
}

// A sybil's PeerList lists its real peers first, then its made-up identities.
TEST(Sybil, ItsPeerListAnnouncesTheMadeUpIdentitiesAfterItsPeers) {
  StateMachineConfig config = MachineConfig("me", {{"a", "tcp://127.0.0.1:2"}});
  config.membership.sybils = SybilIdentities("me", "tcp://127.0.0.1:1", 2, SybilAddress::kSelf);
  auto m = AdmittedMachine(config);
  auto replies = All<SendReply>(m->OnInbound(1, From("a", 4, PeerList{}), TimePoint{}));
  ASSERT_EQ(replies.size(), 1u);
  std::vector<std::string> ids;
  for (const PeerInfo& p : std::get<PeerList>(replies[0].message.body).peers) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"me", "a", "me.sybil0", "me.sybil1"}));
}

}  // namespace
}  // namespace meshlearn::node::testing
