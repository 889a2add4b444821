// A hostile peer against a running node of a mesh of real nodes in one test process over loopback
// TCP: a reliability test (label `reliability`).
#include <gtest/gtest.h>

#include <future>
#include <limits>
#include <map>
#include <string>

#include "node/transport/zmq_transport.h"
#include "protocol/codec.h"
#include "tests/node/host/mesh_test_support.h"

namespace meshlearn::node::testing {
namespace {

// A hostile peer against a running node of a mesh (issue 8, "Hostile peers"): malformed,
// oversized, wrong-layout, NaN and wrong-version messages each get an Error with their code, are
// counted in /status by code, and never crash the node, which keeps serving and finishes.
TEST(Mesh, HostileMessagesAreRejectedCountedAndTheNodeKeepsServing) {
  SyntheticMesh mesh("hostile", 1, 3, 13);
  mesh.configs()[0].round.min_round_s = 0.1;
  mesh.configs()[0].round.max_message_bytes = 1 << 20;
  std::map<std::string, ErrorCode> replies;  // what each hostile message got back
  std::string status;
  bool served_after = false;
  mesh.Run(20, [&](Node& node) {
    TransportOptions options;
    options.node_id = "hostile";
    options.listen_endpoint = "tcp://127.0.0.1:0";
    auto client = StartZmqTransport(options, [](InboundRequest) {});
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    uint64_t next_id = 0;
    // Sends `frames` as request `id` and waits for the answer.
    auto ask = [&](std::vector<Frame> frames, uint64_t id) -> Result<Message> {
      std::promise<Result<std::vector<Frame>>> promise;
      auto future = promise.get_future();
      (*client)->Request(
          node.endpoint(), id, std::move(frames),
          std::chrono::steady_clock::now() + std::chrono::seconds(10),
          [&promise](Result<std::vector<Frame>> r) { promise.set_value(std::move(r)); });
      auto frames_back = future.get();
      if (!frames_back.ok()) return frames_back.status();
      return Decode(*frames_back, {});
    };
    // Encodes `body` as the next request and asks.
    auto send = [&](Body body) {
      uint64_t id = ++next_id;
      return ask(Encode(MakeMessage("hostile", id, 0, std::move(body))), id);
    };
    auto error_of = [](const Result<Message>& reply) {
      if (!reply.ok()) return reply.status().code();
      const auto* error = std::get_if<Error>(&reply->body);
      return error ? error->code : ErrorCode::kOk;
    };
    // A valid request first, held until the node has a model (an async node without one answers
    // at once that it has none): its Model reply tells the node's layout.
    auto model = send(GetModel{0, true});
    ASSERT_TRUE(model.ok() && std::holds_alternative<Model>(model->body));
    const ParamLayout layout = std::get<Model>(model->body).layout;

    // Malformed: an envelope that decodes, a body that is not msgpack.
    uint64_t id = ++next_id;
    std::vector<Frame> malformed = Encode(MakeMessage("hostile", id, 0, Ping{1}));
    malformed[1] = Frame(std::vector<uint8_t>{0xc1, 0xc1});
    replies["malformed"] = error_of(ask(std::move(malformed), id));
    // Wrong version: a peer that speaks only version 99. Our own Transport refuses to send such a
    // request, so it goes through a bare ZeroMQ DEALER, as another implementation would send it.
    {
      Message future_peer = MakeMessage("hostile", 1, 0, Ping{2});
      future_peer.envelope.protocol_version = future_peer.envelope.min_version = 99;
      std::optional<std::vector<Frame>> reply = AskRaw(node.endpoint(), Encode(future_peer));
      ASSERT_TRUE(reply.has_value()) << "no reply to the version-99 Ping";
      replies["version"] = error_of(Decode(*reply, {}));
    }
    // Wrong layout: a model of another shape.
    EmbedRequest wrong;
    wrong.layout = MakeContiguousLayout({{"w", {3}}});
    wrong.weights = FloatArray::Own({1, 2, 3});
    replies["layout"] = error_of(send(wrong));
    // NaN: the right layout, one NaN weight.
    EmbedRequest nan;
    nan.layout = layout;
    std::vector<float> weights(layout.total_floats(), 0.5f);
    weights[0] = std::numeric_limits<float>::quiet_NaN();
    nan.weights = FloatArray::Own(std::move(weights));
    replies["nan"] = error_of(send(nan));
    // Oversized: 1.5 MiB in all against the node's 1 MiB max_message_bytes (each frame below it).
    EmbedRequest big;
    big.layout = MakeContiguousLayout({{"w", {200000}}});
    big.weights = FloatArray::Own(std::vector<float>(200000, 1.f));
    id = ++next_id;
    std::vector<Frame> oversized = Encode(MakeMessage("hostile", id, 0, big));
    oversized[1] = Frame(std::vector<uint8_t>(700000, 0x90));
    replies["oversized"] = error_of(ask(std::move(oversized), id));

    auto again = send(GetModel{0, false});
    served_after = again.ok() && std::holds_alternative<Model>(again->body);
    // /status is rebuilt twice a second: wait until it counts the last rejection.
    EXPECT_TRUE(WaitUntil([&] {
      status = node.StatusJson();
      return status.find("\"too_large\":1") != std::string::npos;
    })) << "the rejections never showed in /status: "
        << status;
  });
  EXPECT_EQ(replies["malformed"], ErrorCode::kMalformed);
  EXPECT_EQ(replies["version"], ErrorCode::kUnsupportedVersion);
  EXPECT_EQ(replies["layout"], ErrorCode::kLayoutMismatch);
  EXPECT_EQ(replies["nan"], ErrorCode::kNonFinite);
  EXPECT_EQ(replies["oversized"], ErrorCode::kTooLarge);
  EXPECT_TRUE(served_after) << "the node stopped serving after the hostile messages";
  for (const char* code :
       {"malformed", "unsupported_version", "layout_mismatch", "non_finite", "too_large"}) {
    EXPECT_NE(status.find(std::string("\"") + code + "\":1"), std::string::npos)
        << code << " not counted: " << status;
  }
  // The attacked node still completed every round.
  EXPECT_EQ(mesh.Rounds(mesh.configs()[0]).size(), 21u);
}

}  // namespace
}  // namespace meshlearn::node::testing
