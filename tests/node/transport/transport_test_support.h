#pragma once
// Helpers for the transport tests (transport_contract_test.cc, transport_backend_test.cc): requests
// sent and awaited, replies decoded, a server's answers, held requests, and the two
// implementations a test runs over (ZeroMQ on loopback TCP, the simulated network on real time).

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "node/transport/curve_keys.h"
#include "node/transport/simulated_network.h"
#include "node/transport/transport.h"
#include "node/transport/zmq_transport.h"
#include "protocol/codec.h"
#include "protocol/messages.h"

namespace meshlearn::node::testing {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ReplyFuture = std::future<Result<std::vector<Frame>>>;

// Waits until `condition` holds, at most `limit`; returns whether it held.
inline bool WaitFor(const std::function<bool()>& condition, Clock::duration limit = seconds(30)) {
  Clock::time_point give_up = Clock::now() + limit;
  while (!condition()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

// Sends `body` as request `request_id` to the server at `endpoint` whose CURVE key is
// `server_key` ("" in plain text) and returns the future reply.
inline ReplyFuture SendTo(Transport& client, const std::string& endpoint,
                          const std::string& server_key, uint64_t request_id, Body body,
                          Clock::duration timeout = seconds(20)) {
  auto promise = std::make_shared<std::promise<Result<std::vector<Frame>>>>();
  ReplyFuture future = promise->get_future();
  client.Request(
      endpoint, request_id, Encode(MakeMessage("client", request_id, 0, std::move(body))),
      Clock::now() + timeout,
      [promise](Result<std::vector<Frame>> reply) { promise->set_value(std::move(reply)); },
      server_key);
  return future;
}

// A fresh CURVE key pair; fails the test when libzmq cannot make one.
inline CurveKeyPair NewKeyPair() {
  auto pair = GenerateCurveKeyPair();
  EXPECT_TRUE(pair.ok()) << pair.status().ToString();
  return pair.ok() ? *pair : CurveKeyPair{};
}

// The decoded reply of `future`; fails the test when there is none.
inline Message ReplyOf(ReplyFuture& future) {
  EXPECT_EQ(future.wait_for(seconds(60)), std::future_status::ready);
  Result<std::vector<Frame>> frames = future.get();
  EXPECT_TRUE(frames.ok()) << frames.status().ToString();
  if (!frames.ok()) return {};
  Result<Message> message = Decode(*frames);
  EXPECT_TRUE(message.ok()) << message.status().ToString();
  return message.ok() ? *message : Message{};
}

inline ErrorCode ErrorCodeOf(ReplyFuture& future) {
  EXPECT_EQ(future.wait_for(seconds(60)), std::future_status::ready);
  return future.get().status().code();
}

// Inbound requests a test decides to answer later.
class HeldRequests {
 public:
  void Hold(InboundRequest request) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_.push_back(std::move(request));
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_.size();
  }
  std::vector<InboundRequest> Take() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::move(held_);
  }

 private:
  std::mutex mutex_;
  std::vector<InboundRequest> held_;
};

// Answers Ping with Pong (same nonce) and GetModel with `model` (if set), on the I/O thread.
inline std::vector<Frame> Answer(const std::string& node_id, const std::vector<Frame>& request,
                                 const Message* model) {
  Result<Message> decoded = Decode(request);
  if (!decoded.ok()) {  // the envelope alone still addresses the Error reply
    Result<Envelope> envelope = DecodeEnvelope(request[0]);
    uint64_t request_id = envelope.ok() ? envelope->request_id : 0;
    return Encode(MakeMessage(node_id, request_id, 0, Error{decoded.status().code(), "bad"}));
  }
  uint64_t request_id = decoded->envelope.request_id;
  if (auto* ping = std::get_if<Ping>(&decoded->body)) {
    Pong pong;
    pong.nonce = ping->nonce;
    return Encode(MakeMessage(node_id, request_id, 0, pong));
  }
  if (std::holds_alternative<GetModel>(decoded->body) && model) {
    Message reply = *model;  // shares the weights
    reply.envelope.request_id = request_id;
    return Encode(reply);
  }
  return Encode(MakeMessage(node_id, request_id, 0, Error{ErrorCode::kRefused, "unexpected"}));
}

inline Message OneMillionParameterModel() {
  Model model;
  model.round = 4;
  model.train_size = 500;
  model.layout = MakeContiguousLayout({{"fc1.weight", {1000, 999}}, {"fc1.bias", {1000}}});
  std::vector<float> weights(model.layout.total_floats());
  uint32_t state = 12345;
  for (float& w : weights) {  // every bit pattern class but NaN/Inf: tiny, negative, large
    state = state * 1664525u + 1013904223u;
    w = static_cast<float>(static_cast<int32_t>(state)) * 1e-7f;
  }
  model.weights = FloatArray::Own(std::move(weights));
  model.score_row = {{"node-1", 0.25}, {"node-2", -1.5}};
  return MakeMessage("server", 0, 4, std::move(model));
}

// A transport implementation: how a test starts its transports. Each call of `medium` gives a
// factory of transports that can reach each other (one simulated medium per test).
struct Backend {
  const char* name;
  TransportFactory (*medium)();
};
inline const Backend kZeroMq{"ZeroMq", [] { return TransportFactory(StartZmqTransport); }};
inline const Backend kSimulated{"Simulated", [] { return SimulatedNetwork().Factory(); }};
inline void PrintTo(const Backend& backend, std::ostream* out) { *out << backend.name; }

}  // namespace meshlearn::node::testing
