// Model serving (node/logic/model_server.h): snapshots and held GetModel requests.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "node/logic/model_server.h"
#include "protocol/codec.h"
#include "tests/node/logic/machine_test_support.h"

namespace meshlearn::node::testing {
namespace {

// What a requester receives for `reply`: its frames, decoded with full validation against the
// served layout.
Model Received(const SendReply& reply) {
  DecodeOptions options;
  options.expected_layout = &kLayout;
  Result<Message> decoded = Decode(FramesOf(reply), options);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->envelope, reply.message.envelope);
  return std::get<Model>(decoded->body);
}

TEST(ModelServer, SyncGetModelIsHeldUntilTheSnapshotExistsThenAnswered) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers));
  auto fetches = All<SendRequest>(m->OnComputeDone(Outcome(0), t0));
  // A peer already in round 2 asks for round >= 1, which we have not published yet.
  auto held = m->OnInbound(41, From("a", 9, GetModel{1, true}), t0 + seconds(1));
  EXPECT_TRUE(All<SendReply>(held).empty());
  // Our round 1 runs (its fetches fail fast) and finishes: the held request gets the snapshot.
  for (const SendRequest& f : fetches) {
    m->OnReply(f.request_id, Status::Unavailable("peer gone"), t0 + seconds(2));
  }
  auto replies = All<SendReply>(m->OnComputeDone(Outcome(1), t0 + seconds(3)));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].inbound, 41u);
  EXPECT_EQ(replies[0].message.envelope.request_id, 9u);
  const Model model = Received(replies[0]);
  EXPECT_EQ(model.round, 1);
  EXPECT_EQ(model.weights.view()[3], 1.f);
}

TEST(ModelServer, HeldRequestExpiresWithTimeoutErrorAtTheDeadline) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers));
  m->OnComputeDone(Outcome(0), t0);
  m->OnInbound(7, From("a", 3, GetModel{5, true}), t0);
  EXPECT_TRUE(All<SendReply>(m->OnTick(t0 + seconds(5))).empty());
  auto replies = All<SendReply>(m->OnTick(t0 + seconds(10)));
  ASSERT_EQ(replies.size(), 1u);
  const auto& error = std::get<Error>(replies[0].message.body);
  EXPECT_EQ(error.code, ErrorCode::kTimeout);
  EXPECT_EQ(m->counters().held_requests_expired, 1u);
}

TEST(ModelServer, AsyncGetModelIsAnsweredAtOnceWithTheLatestSnapshot) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers));
  m->OnComputeDone(Outcome(0), t0);
  auto replies = All<SendReply>(m->OnInbound(1, From("a", 3, GetModel{5, false}), t0));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(Received(replies[0]).round, 0);
}

// Before its round 0 ends a node has nothing to serve: an async requester is told so at once
// (Error(unavailable)) instead of waiting for the deadline; a sync one is held as before.
TEST(ModelServer, AsyncGetModelBeforeRoundZeroIsAnsweredAtOnceThatThereIsNoModelYet) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers));
  auto replies = All<SendReply>(m->OnInbound(1, From("a", 3, GetModel{0, false}), t0));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].message.envelope.request_id, 3u);
  EXPECT_EQ(std::get<Error>(replies[0].message.body).code, ErrorCode::kUnavailable);
  EXPECT_TRUE(All<SendReply>(m->OnInbound(2, From("b", 4, GetModel{0, true}), t0)).empty());
  EXPECT_EQ(m->counters().held_requests_expired, 0u);
}

// A node serves the update of the snapshot it sends, and only to requesters that ask for it, also
// when the request was held until that snapshot existed.
TEST(ModelServer, LocalUpdateIsServedWithItsSnapshotOnlyWhenAskedFor) {
  TimePoint t0{};
  auto m = AdmittedMachine(MachineConfig("me", kPeers));
  RoundOutcome round0 = Outcome(0);
  round0.published_update = FloatArray::Own({0.5f, 0.f, -1.f, 2.f});
  auto fetches = All<SendRequest>(m->OnComputeDone(round0, t0));

  auto asked = All<SendReply>(m->OnInbound(1, From("a", 3, GetModel{0, false, true}), t0));
  ASSERT_EQ(asked.size(), 1u);
  const Model model = Received(asked[0]);
  ASSERT_TRUE(model.update.has_value());
  EXPECT_EQ(*model.update, *round0.published_update);
  auto plain = All<SendReply>(m->OnInbound(2, From("b", 4, GetModel{0, false}), t0));
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_FALSE(Received(plain[0]).update.has_value());

  // Held until round 1 is published: the reply carries round 1's update.
  EXPECT_TRUE(All<SendReply>(m->OnInbound(5, From("c", 6, GetModel{1, true, true}), t0)).empty());
  for (const SendRequest& f : fetches) {
    m->OnReply(f.request_id, Status::Unavailable("peer gone"), t0 + seconds(1));
  }
  RoundOutcome round1 = Outcome(1);
  round1.published_update = FloatArray::Own({-0.5f, 0.25f, 0.f, 3.f});
  auto held = All<SendReply>(m->OnComputeDone(round1, t0 + seconds(2)));
  ASSERT_EQ(held.size(), 1u);
  const Model held_model = Received(held[0]);
  EXPECT_EQ(held_model.round, 1);
  ASSERT_TRUE(held_model.update.has_value());
  EXPECT_EQ(*held_model.update, *round1.published_update);
}

TEST(ModelServer, SyncRequestForAnOlderRoundGetsThatRoundsSnapshot) {
  auto config = MachineConfig("me", {}, 10);
  auto m = MakeMachine(config);
  TimePoint t0{};
  m->Start(t0);
  for (int r = 0; r <= 3; ++r) m->OnComputeDone(Outcome(r), t0);
  // A lagging peer in round 2 asks for round >= 1: it gets round 1, not our latest (3).
  auto sync = All<SendReply>(m->OnInbound(1, From("a", 1, GetModel{1, true}), t0));
  ASSERT_EQ(sync.size(), 1u);
  EXPECT_EQ(Received(sync[0]).round, 1);
  auto async = All<SendReply>(m->OnInbound(2, From("a", 2, GetModel{1, false}), t0));
  ASSERT_EQ(async.size(), 1u);
  EXPECT_EQ(Received(async[0]).round, 3);
}

// The part alone, without the router: a budget for two snapshots still keeps the last four.
TEST(ModelServer, KeepsAtLeastTheLastFourSnapshotsAndRoundZeroForTheEmbeddingWhileItIsKept) {
  RequestBook requests("me", QuietLogger());
  const size_t one_snapshot = kLayout.total_floats() * sizeof(float);
  ModelServer server(ServingConfig{kLayout, 50, seconds(10), 2 * one_snapshot}, requests);
  EXPECT_FALSE(server.HavePublished());
  EXPECT_EQ(server.RoundZeroWeights().size(), 0u);
  for (int round = 0; round <= 4; ++round) {
    server.Publish(Snapshot{round, Outcome(round).published_weights, false, {}, std::nullopt});
    // While round 0 is kept, φ is round 0's model; afterwards the oldest kept one.
    EXPECT_EQ(server.RoundZeroWeights().view()[3], round < 4 ? 0.f : 1.f) << round;
  }
  EXPECT_EQ(server.Latest().round, 4);
  Actions out;
  server.OnGetModel(1, From("a", 2, Ping{}).envelope, GetModel{0, true}, {}, false, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Received(std::get<SendReply>(out[0])).round, 1)
      << "the oldest kept snapshot of round >= 0";
}

// Within the budget every round is kept: a peer that lags by many rounds (a slow start on a
// loaded host) still gets exactly the round it asks for in sync mode.
TEST(ModelServer, KeepsEveryRoundThatFitsTheBudgetForALaggingPeer) {
  RequestBook requests("me", QuietLogger());
  const size_t one_snapshot = kLayout.total_floats() * sizeof(float);
  ModelServer server(ServingConfig{kLayout, 50, seconds(10), 20 * one_snapshot}, requests);
  for (int round = 0; round <= 29; ++round) {
    server.Publish(Snapshot{round, Outcome(round).published_weights, false, {}, std::nullopt});
  }
  auto served = [&](int64_t min_round) {
    Actions out;
    server.OnGetModel(1, From("a", 2, Ping{}).envelope, GetModel{min_round, true}, {}, false, out);
    return Received(std::get<SendReply>(out.at(0))).round;
  };
  EXPECT_EQ(served(12), 12) << "a peer 17 rounds behind gets the round it asked for";
  EXPECT_EQ(served(10), 10) << "the oldest round that fits the budget of 20 snapshots";
  EXPECT_EQ(served(9), 10) << "round 9 is beyond the budget: the oldest kept one";
}

// Every requester of a round gets the same bytes after its own envelope: the snapshot's Model
// body, encoded once and shared (its weights zero-copy), also when the request was held.
TEST(ModelServer, RequestersOfOneSnapshotGetIdenticalBodyBytesEncodedOnce) {
  RequestBook requests("me", QuietLogger());
  ModelServer server(ServingConfig{kLayout, 50, seconds(10)}, requests);
  const FloatArray weights = FloatArray::Own({1.f, 2.f, 3.f, 4.f});
  server.Publish(Snapshot{0, weights, false, {{"a", 0.25}}, std::nullopt});
  Actions out;
  server.OnGetModel(1, From("a", 7, Ping{}).envelope, GetModel{0, false}, {}, false, out);
  server.OnGetModel(2, From("b", 9, Ping{}).envelope, GetModel{0, true}, {}, false, out);
  server.OnGetModel(3, From("c", 4, Ping{}).envelope, GetModel{1, true}, {}, false, out);  // held
  server.Publish(Snapshot{1, FloatArray::Own({5.f, 6.f, 7.f, 8.f}), false, {}, std::nullopt});
  server.AnswerHeld({}, false, false, out);
  server.OnGetModel(4, From("d", 5, Ping{}).envelope, GetModel{1, true}, {}, false, out);
  ASSERT_EQ(out.size(), 4u);
  const auto& a = std::get<SendReply>(out[0]);
  const auto& b = std::get<SendReply>(out[1]);
  const auto& c = std::get<SendReply>(out[2]);
  const auto& d = std::get<SendReply>(out[3]);

  std::vector<Frame> to_a = FramesOf(a);
  std::vector<Frame> to_b = FramesOf(b);
  ASSERT_EQ(to_a.size(), 3u);
  ASSERT_EQ(to_b.size(), 3u);
  EXPECT_FALSE(to_a[0] == to_b[0]) << "each reply has its own envelope (request id)";
  EXPECT_EQ(to_a[1], to_b[1]);
  EXPECT_EQ(to_a[2], to_b[2]);
  EXPECT_EQ(to_a[1].data(), to_b[1].data()) << "one encoding, shared by both replies";
  EXPECT_EQ(to_a[2].data(), reinterpret_cast<const uint8_t*>(weights.view().data()))
      << "the weights are sent from the snapshot itself";
  EXPECT_EQ(Received(a).weights, weights);
  EXPECT_EQ(Received(b).round, 0);

  std::vector<Frame> to_c = FramesOf(c);
  std::vector<Frame> to_d = FramesOf(d);
  EXPECT_EQ(to_c[1].data(), to_d[1].data()) << "the held request shares round 1's encoding";
  EXPECT_EQ(Received(c).round, 1);
  EXPECT_EQ(Received(d).weights, FloatArray::Own({5.f, 6.f, 7.f, 8.f}));
}

// A new snapshot is encoded anew: a requester never gets the bytes of an older model, and the
// encoding with the update is a separate one from the encoding without it.
TEST(ModelServer, ANewSnapshotIsEncodedAnewAndTheUpdateHasItsOwnEncoding) {
  RequestBook requests("me", QuietLogger());
  ModelServer server(ServingConfig{kLayout, 50, seconds(10)}, requests);
  auto serve = [&](bool with_update) {
    Actions out;
    server.OnGetModel(1, From("a", 2, Ping{}).envelope, GetModel{0, false, with_update}, {}, false,
                      out);
    return std::get<SendReply>(out.at(0));
  };
  server.Publish(Snapshot{
      0, FloatArray::Own({1.f, 1.f, 1.f, 1.f}), false, {}, FloatArray::Own({0.f, 0.f, 0.f, 1.f})});
  SendReply first = serve(false);
  SendReply first_with_update = serve(true);
  EXPECT_NE(first.encoded_body, first_with_update.encoded_body);
  EXPECT_FALSE(Received(first).update.has_value());
  ASSERT_TRUE(Received(first_with_update).update.has_value());
  EXPECT_EQ(*Received(first_with_update).update, FloatArray::Own({0.f, 0.f, 0.f, 1.f}));

  server.Publish(Snapshot{1,
                          FloatArray::Own({2.f, 2.f, 2.f, 2.f}),
                          true,
                          {{"b", 0.5}},
                          FloatArray::Own({1.f, 1.f, 1.f, 1.f})});
  SendReply second = serve(false);
  SendReply second_with_update = serve(true);
  EXPECT_NE(second.encoded_body, first.encoded_body);
  const Model received = Received(second);
  EXPECT_EQ(received.round, 1);
  EXPECT_TRUE(received.early_stopped);
  EXPECT_EQ(received.weights, FloatArray::Own({2.f, 2.f, 2.f, 2.f}));
  ASSERT_EQ(received.score_row.size(), 1u);
  EXPECT_EQ(received.score_row[0].peer, "b");
  EXPECT_EQ(*Received(second_with_update).update, FloatArray::Own({1.f, 1.f, 1.f, 1.f}));
  // Each reply's bytes are those of the message it stands for: its envelope and the Model it
  // carries, encoded whole.
  for (const SendReply* reply : {&first, &first_with_update, &second, &second_with_update}) {
    std::vector<Frame> sent = FramesOf(*reply);
    std::vector<Frame> whole = Encode(Message{reply->message.envelope, Received(*reply)});
    ASSERT_EQ(sent.size(), whole.size());
    for (size_t i = 0; i < sent.size(); ++i) EXPECT_EQ(sent[i], whole[i]) << "frame " << i;
  }
}

// --- Compressed models (PROTOCOL.md, "Compressed models") ---------------------------------------

// A server of node "me" whose codec is `codec` (int8 in blocks of 64), publishing weights
// {0.1, -2, 3.3, 127} of round 0.
struct CompressingServer {
  explicit CompressingServer(CompressionCodec codec) {
    ServingConfig config{kLayout, 50, seconds(10)};
    config.compression.codec = codec;
    config.compression.block_size = 64;
    config.compression.topk_fraction = 0.5;
    config.shared_initial = FloatArray::Own({0.f, 0.f, 0.f, 0.f});
    server = std::make_unique<ModelServer>(config, requests);
    server->Publish(Snapshot{0, weights, false, {{"a", 0.25}}, std::nullopt});
  }
  SendReply Serve(const GetModel& get) {
    Actions out;
    server->OnGetModel(1, From("a", 7, Ping{}).envelope, get, {}, false, out);
    return std::get<SendReply>(out.at(0));
  }
  RequestBook requests{"me", QuietLogger()};
  std::unique_ptr<ModelServer> server;
  FloatArray weights = FloatArray::Own({0.1f, -2.f, 3.3f, 127.f});
};

GetModel Accepting(std::vector<CompressionCodec> codecs) {
  GetModel get{0, false};
  get.accepts = std::move(codecs);
  return get;
}

// A version-2 requester sends no accepts: a node whose codec is int8 answers it with exactly the
// bytes a node without compression sends. A version-3 requester accepting int8 gets an int8 blob,
// a quarter of the floats' size plus the header and a scale, and decodes it within half a step.
TEST(ModelServerCompression, Version2RequesterGetsTheSameFloatBytesAndVersion3GetsInt8) {
  CompressingServer int8(CompressionCodec::kInt8);
  CompressingServer none(CompressionCodec::kNone);
  std::vector<Frame> v2_from_int8 = FramesOf(int8.Serve(GetModel{0, false}));
  std::vector<Frame> v2_from_none = FramesOf(none.Serve(GetModel{0, false}));
  ASSERT_EQ(v2_from_int8.size(), v2_from_none.size());
  for (size_t i = 0; i < v2_from_int8.size(); ++i) {
    EXPECT_EQ(v2_from_int8[i], v2_from_none[i]) << "frame " << i;
  }
  EXPECT_EQ(v2_from_int8[2].size(), 4u * sizeof(float));
  EXPECT_EQ(Received(int8.Serve(GetModel{0, false})).weights, int8.weights);

  SendReply v3 = int8.Serve(Accepting({CompressionCodec::kFp16, CompressionCodec::kInt8}));
  std::vector<Frame> frames = FramesOf(v3);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[2].size(), 8u + 4u + 4u) << "header, one scale, four int8 values";
  EXPECT_EQ(frames[2].bytes()[0], static_cast<uint8_t>(CompressionCodec::kInt8));
  const Model received = Received(v3);
  EXPECT_EQ(received.encoding.codec, CompressionCodec::kInt8);
  EXPECT_EQ(received.encoding.block_size, 64u);
  const float half_step = 127.f / 127.f / 2.f;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(received.weights.view()[i], int8.weights.view()[i], half_step) << i;
  }
  EXPECT_NE(received.weights, int8.weights) << "0.1 and 3.3 are not on the int8 grid";
}

// A requester that does not accept the node's codec gets float32; a node without a codec sends
// float32 to everyone.
TEST(ModelServerCompression, RequesterThatDoesNotAcceptTheCodecGetsFloat32) {
  CompressingServer int8(CompressionCodec::kInt8);
  const Model only_fp16 = Received(int8.Serve(Accepting({CompressionCodec::kFp16})));
  EXPECT_EQ(only_fp16.encoding.codec, CompressionCodec::kNone);
  EXPECT_EQ(only_fp16.weights, int8.weights);
  CompressingServer none(CompressionCodec::kNone);
  const Model plain = Received(none.Serve(Accepting({CompressionCodec::kInt8})));
  EXPECT_EQ(plain.encoding.codec, CompressionCodec::kNone);
  EXPECT_EQ(plain.weights, none.weights);
  CompressingServer fp16(CompressionCodec::kFp16);
  SendReply half = fp16.Serve(Accepting({CompressionCodec::kFp16, CompressionCodec::kInt8}));
  EXPECT_EQ(FramesOf(half)[2].size(), 8u + 4u * 2u);
  EXPECT_EQ(Received(half).encoding.codec, CompressionCodec::kFp16);
}

// The compressed body is encoded once per snapshot and shared by every requester that accepts
// it, apart from the float32 body of the others.
TEST(ModelServerCompression, EachCodecIsEncodedOncePerSnapshot) {
  CompressingServer int8(CompressionCodec::kInt8);
  SendReply first = int8.Serve(Accepting({CompressionCodec::kInt8}));
  SendReply second = int8.Serve(Accepting({CompressionCodec::kFp16, CompressionCodec::kInt8}));
  SendReply plain = int8.Serve(GetModel{0, false});
  EXPECT_EQ(first.encoded_body, second.encoded_body);
  EXPECT_NE(first.encoded_body, plain.encoded_body);
  EXPECT_EQ(FramesOf(first)[2].data(), FramesOf(second)[2].data());
}

// Top-k (PROTOCOL.md "Top-k update chains"): a requester that accepts topk and says what it holds
// gets the chain from there, encoded once per snapshot and starting round; one that does not say
// gets float32. The chain rebuilds the owner's estimate, which holds the largest half of the
// change from the shared initial model.
TEST(ModelServerCompression, TopKRequestersGetTheChainFromWhatTheyHold) {
  CompressingServer topk(CompressionCodec::kTopK);
  GetModel get =
      Accepting({CompressionCodec::kFp16, CompressionCodec::kInt8, CompressionCodec::kTopK});
  const Model no_estimate = Received(topk.Serve(get));
  EXPECT_EQ(no_estimate.encoding.codec, CompressionCodec::kNone);
  EXPECT_EQ(no_estimate.weights, topk.weights);
  get.estimate = HeldEstimate{};
  SendReply first = topk.Serve(get);
  SendReply second = topk.Serve(get);
  EXPECT_EQ(first.encoded_body, second.encoded_body);
  const Model chained = Received(first);
  EXPECT_EQ(chained.encoding.codec, CompressionCodec::kTopK);
  ASSERT_TRUE(chained.chain.has_value());
  EXPECT_FALSE(chained.chain->base);
  EXPECT_EQ(chained.chain->updates.size(), 1u);
  PeerEstimates requester(FloatArray::Own({0.f, 0.f, 0.f, 0.f}), 4);
  auto estimate = requester.Apply("me", *chained.chain);
  ASSERT_TRUE(estimate.ok()) << estimate.status().ToString();
  EXPECT_EQ(estimate->view()[0], 0.f) << "0.1 is among the smaller half";
  EXPECT_NEAR(estimate->view()[3], 127.f, 1e-4);
  EXPECT_EQ(topk.server->whole_estimates_sent(), 0u);
  get.estimate = HeldEstimate{7, 3};  // another lineage: the newest estimate whole, no update
  const Model based = Received(topk.Serve(get));
  EXPECT_EQ(topk.server->whole_estimates_sent(), 1u);
  ASSERT_TRUE(based.chain && based.chain->base);
  EXPECT_EQ(*based.chain->base, *estimate);
  EXPECT_TRUE(based.chain->updates.empty());
  EXPECT_EQ(based.chain->from_round, based.chain->to_round);
}

}  // namespace
}  // namespace meshlearn::node::testing
