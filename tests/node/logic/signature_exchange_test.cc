// FLT's data signatures (node/logic/signature_exchange.h).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "tests/node/logic/machine_test_support.h"

namespace meshlearn::node::testing {
namespace {

// A node with signatures on: its own signature is the single centroid (0, 0), threshold 1; it
// samples every peer each round.
std::unique_ptr<NodeStateMachine> SignatureMachine(topology::SamplerKind sampler) {
  auto config = MachineConfig("me", kPeers, 5);
  config.rounds.peers_per_round = 3;
  config.signatures.enabled = true;
  config.signatures.own = {1, 2, FloatArray::Own({0, 0})};
  config.signatures.threshold = 1.0;
  config.signatures.cluster_sampler = sampler == topology::SamplerKind::kCentroidCluster;
  config.signatures.metric = sampler == topology::SamplerKind::kDac;
  return MakeMachine(config, sampler);
}

Signature SignatureAt(float x) { return {1, 2, FloatArray::Own({x, 0})}; }

TEST(SignatureExchange, EveryPeerIsAskedOnceAndTheNodeSamplesWithinItsSingleLinkageCluster) {
  auto m = SignatureMachine(topology::SamplerKind::kCentroidCluster);
  StartAndAdmitAll(*m, {});
  auto round1 = m->OnComputeDone(Outcome(0), {});
  auto asked = Requests(round1, MessageType::kGetSignature);
  ASSERT_EQ(asked.size(), 3u);
  // a is 0.5 from us; b is 1.2 from us but 0.7 from a (single linkage chains it); c is far.
  const std::map<std::string, float> at = {{"a", 0.5f}, {"b", 1.2f}, {"c", 10.f}};
  for (const SendRequest& r : asked) {
    m->OnReply(r.request_id, From(r.peer, r.request_id, SignatureAt(at.at(r.peer))), {});
  }
  std::vector<SignatureRow> rows = m->SignatureRows();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].peer, "a");
  EXPECT_NEAR(rows[0].distance, 0.5, 1e-6);
  EXPECT_TRUE(rows[0].related);
  EXPECT_NEAR(rows[1].distance, 1.2, 1e-6);
  EXPECT_FALSE(rows[1].related);
  EXPECT_NEAR(rows[2].distance, 10, 1e-5);
  EXPECT_DOUBLE_EQ(m->sampler().Find("a")->probability, 0.5);
  EXPECT_DOUBLE_EQ(m->sampler().Find("b")->probability, 0.5);
  EXPECT_DOUBLE_EQ(m->sampler().Find("c")->probability, 0.0);

  // Round 1's record carries the clusters (for cluster.csv); round 2 asks nobody again and
  // fetches only from the cluster.
  auto jobs = All<StartCompute>(AnswerFetches(*m, round1));
  ASSERT_EQ(jobs.size(), 1u);
  for (const PeerModel& peer : jobs[0].job.peers) {
    EXPECT_FALSE(peer.exchanged_score.has_value()) << "metric is not centroid: " << peer.peer;
  }
  auto round2 = m->OnComputeDone(Outcome(1), {});
  auto completed = All<RoundCompleted>(round2);
  ASSERT_EQ(completed.size(), 1u);
  std::map<std::string, int> label;
  for (const auto& [id, l] : completed[0].record.outcome.cluster_partition) label[id] = l;
  ASSERT_EQ(label.size(), 4u);
  EXPECT_EQ(label["me"], label["a"]);
  EXPECT_EQ(label["me"], label["b"]);
  EXPECT_NE(label["me"], label["c"]);
  EXPECT_TRUE(Requests(round2, MessageType::kGetSignature).empty());
  for (const SendRequest& r : Requests(round2, MessageType::kGetModel)) EXPECT_NE(r.peer, "c");
}

TEST(SignatureExchange, APeerThatAnsweredWithAnErrorIsNotAskedAgainButOneThatTimedOutIs) {
  auto m = SignatureMachine(topology::SamplerKind::kCentroidCluster);
  StartAndAdmitAll(*m, {});
  auto round1 = m->OnComputeDone(Outcome(0), {});
  for (const SendRequest& r : Requests(round1, MessageType::kGetSignature)) {
    if (r.peer == "a") {
      m->OnReply(r.request_id, From("a", r.request_id, Error{ErrorCode::kUnknownType, "15"}), {});
    } else if (r.peer == "b") {
      m->OnReply(r.request_id, Status::Timeout("no answer"), {});
    } else {
      // Another width than ours: unusable, and it will not change.
      m->OnReply(r.request_id, From("c", r.request_id, Signature{1, 3, FloatArray::Own({1, 2, 3})}),
                 {});
    }
  }
  EXPECT_TRUE(m->SignatureRows().empty());
  AnswerFetches(*m, round1);
  std::vector<std::string> asked;
  for (const SendRequest& r :
       Requests(m->OnComputeDone(Outcome(1), {}), MessageType::kGetSignature)) {
    asked.push_back(r.peer);
  }
  EXPECT_EQ(asked, std::vector<std::string>{"b"});
}

TEST(SignatureExchange, ItsSignatureIsServedAndANodeWithoutSignaturesRefuses) {
  auto m = SignatureMachine(topology::SamplerKind::kCentroidCluster);
  auto replies = All<SendReply>(m->OnInbound(5, From("a", 9, GetSignature{}), {}));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].message.envelope.request_id, 9u);
  EXPECT_EQ(std::get<Signature>(replies[0].message.body), SignatureAt(0));

  auto plain = MakeMachine(MachineConfig("me", kPeers));
  replies = All<SendReply>(plain->OnInbound(5, From("a", 9, GetSignature{}), {}));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(std::get<Error>(replies[0].message.body).code, ErrorCode::kUnavailable);
}

// One route for the exchanged score: the exchange computes s = -D once, sets it in the sampler,
// and the rounds hand the same s to the learner with the peer's model.
TEST(SignatureExchange, TheCentroidMetricScoresMinusTheDistanceAndTheLearnerGetsThatScore) {
  auto m = SignatureMachine(topology::SamplerKind::kDac);
  StartAndAdmitAll(*m, {});
  auto round1 = m->OnComputeDone(Outcome(0), {});
  for (const SendRequest& r : Requests(round1, MessageType::kGetSignature)) {
    if (r.peer == "a") m->OnReply(r.request_id, From("a", r.request_id, SignatureAt(0.25f)), {});
  }
  EXPECT_NEAR(*m->sampler().Find("a")->score, -0.25, 1e-6);
  EXPECT_FALSE(m->sampler().Find("b")->score.has_value());
  auto jobs = All<StartCompute>(AnswerFetches(*m, round1));
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(jobs[0].job.peers.size(), 3u);
  for (const PeerModel& peer : jobs[0].job.peers) {
    if (peer.peer == "a") {
      ASSERT_TRUE(peer.exchanged_score.has_value());
      EXPECT_EQ(*peer.exchanged_score, *m->sampler().Find("a")->score);
      EXPECT_NEAR(*peer.exchanged_score, -0.25, 1e-6);
    } else {
      EXPECT_FALSE(peer.exchanged_score.has_value()) << peer.peer;
    }
  }
}

}  // namespace
}  // namespace meshlearn::node::testing
