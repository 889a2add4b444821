// The router of the node state machine (node/logic/state_machine.h): replies go to the part that
// sent the request, inbound requests to the part that serves them.
#include <gtest/gtest.h>

#include <memory>

#include <spdlog/sinks/ringbuffer_sink.h>

#include "node/logic/requests.h"
#include "tests/node/logic/machine_test_support.h"

namespace meshlearn::node::testing {
namespace {

TEST(StateMachine, UndecodableInboundIsAnsweredWithItsErrorAndCounted) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  for (int i = 0; i < 3; ++i) {
    auto replies = All<SendReply>(m->OnInboundRejected(
        10 + i, "bad", 70 + i, Status::NonFinite("Model.weights: value #3 is NaN"), {}));
    ASSERT_EQ(replies.size(), 1u);
    EXPECT_EQ(std::get<Error>(replies[0].message.body).code, ErrorCode::kNonFinite);
    EXPECT_EQ(replies[0].message.envelope.request_id, 70u + i);  // the requester can match it
  }
  EXPECT_EQ(m->counters().rejected_inbound, 3u);
  EXPECT_EQ(m->counters().rejected_by_code.at("non_finite"), 3u);
}

TEST(StateMachine, PingIsAnsweredWithItsNonceAndARequestNoPartServesIsRefused) {
  auto m = MakeMachine(MachineConfig("me", kPeers));
  Ping ping;
  ping.nonce = 99;
  auto pongs = All<SendReply>(m->OnInbound(1, From("a", 5, ping), {}));
  ASSERT_EQ(pongs.size(), 1u);
  EXPECT_EQ(std::get<Pong>(pongs[0].message.body).nonce, 99u);
  EXPECT_EQ(pongs[0].message.envelope.request_id, 5u);

  auto refused = All<SendReply>(m->OnInbound(2, From("a", 6, PeerModelAt(0)), {}));
  ASSERT_EQ(refused.size(), 1u);
  const auto& error = std::get<Error>(refused[0].message.body);
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(error.text.find("not a request this node serves"), std::string::npos) << error.text;
  EXPECT_EQ(m->counters().rejected_by_code.at("invalid_argument"), 1u);
}

TEST(StateMachine, RepliesNobodyWaitsForAreDroppedAndUndecodableRepliesAreCounted) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers));
  auto fetches = Requests(m->OnComputeDone(Outcome(0), t0), MessageType::kGetModel);
  ASSERT_EQ(fetches.size(), 2u);
  // An id nobody sent, and a reply that failed to decode: neither closes the fetch.
  EXPECT_TRUE(m->OnReply(12345, From("a", 12345, PeerModelAt(0)), t0).empty());
  EXPECT_TRUE(
      All<StartCompute>(m->OnReply(fetches[0].request_id, Status::Malformed("bad bytes"), t0))
          .empty());
  EXPECT_EQ(m->counters().rejected_replies, 1u);
  // A timeout or a disconnection is not a rejected reply.
  auto compute = All<StartCompute>(
      m->OnReply(fetches[1].request_id, Status::Timeout("deadline"), t0 + seconds(10)));
  ASSERT_EQ(compute.size(), 1u);
  EXPECT_TRUE(compute[0].job.peers.empty());
  EXPECT_EQ(m->counters().rejected_replies, 1u);
  // A second reply to a request already answered is dropped.
  EXPECT_TRUE(m->OnReply(fetches[1].request_id, From("b", 1, PeerModelAt(0)), t0).empty());
}

TEST(RequestBook, IdsAreFreshOwnersAnsweredOnceAndRefusalsCountedAndRateLimitedInTheLog) {
  auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
  auto log = std::make_shared<spdlog::logger>("test", sink);
  RequestBook book("me", log);
  topology::PeerEntry peer;
  peer.id = "a";
  peer.endpoint = "tcp://127.0.0.1:2";
  SendRequest first = book.Open(Part::kRounds, peer, Ping{}, TimePoint{});
  SendRequest second = book.Open(Part::kEmd, PeerInfo{"w", "tcp://127.0.0.1:9", ""}, Ping{}, {});
  EXPECT_NE(first.request_id, second.request_id);
  EXPECT_EQ(first.message.envelope.request_id, first.request_id);
  EXPECT_EQ(first.message.envelope.sender, "me");
  EXPECT_EQ(second.endpoint, "tcp://127.0.0.1:9");
  EXPECT_EQ(book.Close(first.request_id), Part::kRounds);
  EXPECT_EQ(book.Close(first.request_id), std::nullopt);
  book.Forget(second.request_id);
  EXPECT_EQ(book.Close(second.request_id), std::nullopt);

  book.set_round(4);
  EXPECT_EQ(book.Reply(7, Pong{}).envelope.round, 4);
  TimePoint t0{};
  for (int i = 0; i < 3; ++i) {
    SendReply reply = book.Reject(i, "bad", 10, Status::TooLarge("huge"), t0 + seconds(i));
    EXPECT_EQ(std::get<Error>(reply.message.body).code, ErrorCode::kTooLarge);
  }
  book.Reject(9, "bad", 10, Status::TooLarge("huge"), t0 + seconds(61));
  EXPECT_EQ(book.rejections().total, 4u);
  EXPECT_EQ(book.rejections().by_code.at("too_large"), 4u);
  EXPECT_EQ(sink->last_formatted().size(), 2u) << "one line per peer per minute";
}

}  // namespace
}  // namespace meshlearn::node::testing
