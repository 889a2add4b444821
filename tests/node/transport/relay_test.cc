// node/transport/relay.h over real loopback sockets: a relayed node served through a relay, with
// CURVE end to end (the relay sees only ciphertext), a large model carried whole, and the relay's
// budgets (relayed nodes, circuits) refusing what is over them with words.
#include "node/transport/relay.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>

#include "node/transport/zmq_transport.h"
#include "tests/node/transport/transport_test_support.h"

namespace meshlearn::node::testing {
namespace {

// A ZeroMQ transport answering Ping and GetModel (with `model`), remembering the last sender's
// proven key: the relayed node's own listen socket.
class Server {
 public:
  Server(const std::string& id, std::optional<CurveOptions> curve, const Message* model = nullptr) {
    TransportOptions options;
    options.node_id = id;
    options.listen_endpoint = "tcp://127.0.0.1:0";
    options.curve = std::move(curve);
    auto started = StartZmqTransport(options, [this, id, model](InboundRequest r) {
      last_key = r.peer_public_key;
      ++requests;
      transport->Reply(r.token, Answer(id, r.frames, model));
    });
    EXPECT_TRUE(started.ok()) << started.status().ToString();
    if (started.ok()) transport = std::move(*started);
  }
  std::unique_ptr<Transport> transport;
  std::string last_key;  // written on the I/O thread before the reply is sent
  std::atomic<int> requests{0};
};

std::unique_ptr<Transport> Client(const std::string& id, std::optional<CurveOptions> curve) {
  TransportOptions options;
  options.node_id = id;
  options.listen_endpoint = "tcp://127.0.0.1:0";
  options.curve = std::move(curve);
  auto started = StartZmqTransport(options, [](InboundRequest) {});
  EXPECT_TRUE(started.ok()) << started.status().ToString();
  return started.ok() ? std::move(*started) : nullptr;
}

std::unique_ptr<RelayServer> Relay(size_t max_clients = 16, size_t max_circuits = 64) {
  RelayServerOptions options;
  options.control_endpoint = "tcp://127.0.0.1:0";
  options.bind_host = "127.0.0.1";
  options.public_host = "127.0.0.1";
  options.max_clients = max_clients;
  options.max_circuits = max_circuits;
  auto relay = StartRelayServer(options);
  EXPECT_TRUE(relay.ok()) << relay.status().ToString();
  return relay.ok() ? std::move(*relay) : nullptr;
}

Result<std::unique_ptr<RelayClient>> Register(const RelayServer& relay, const std::string& id,
                                              const std::string& local_endpoint) {
  RelayClientOptions options;
  options.node_id = id;
  options.relay_endpoint = relay.control_endpoint();
  options.local_endpoint = local_endpoint;
  return StartRelayClient(options, std::chrono::seconds(10));
}

TEST(Relay, ARelayedNodeIsReachedThroughItsRelayWithCurveEndToEnd) {
  CurveKeyPair relayed_keys = NewKeyPair();
  CurveKeyPair requester_keys = NewKeyPair();
  std::vector<std::string> both = {relayed_keys.public_key, requester_keys.public_key};
  Message model = OneMillionParameterModel();
  Server relayed("relayed", CurveOptions{relayed_keys.public_key, relayed_keys.secret_key, both},
                 &model);
  auto requester =
      Client("requester", CurveOptions{requester_keys.public_key, requester_keys.secret_key, both});
  auto relay = Relay();
  ASSERT_TRUE(relayed.transport && requester && relay);
  auto link = Register(*relay, "relayed", relayed.transport->bound_endpoint());
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  const std::string& endpoint = (*link)->relayed_endpoint();
  EXPECT_NE(endpoint, relayed.transport->bound_endpoint());
  EXPECT_EQ(endpoint.rfind("tcp://127.0.0.1:", 0), 0u) << endpoint;

  ReplyFuture pong = SendTo(*requester, endpoint, relayed_keys.public_key, 1, Ping{42});
  Message reply = ReplyOf(pong);
  ASSERT_TRUE(std::holds_alternative<Pong>(reply.body));
  EXPECT_EQ(std::get<Pong>(reply.body).nonce, 42u);
  // The handshake ran end to end: the relayed node saw the requester's own key.
  EXPECT_EQ(relayed.last_key, requester_keys.public_key);

  ReplyFuture fetched = SendTo(*requester, endpoint, relayed_keys.public_key, 2, GetModel{});
  Message got = ReplyOf(fetched);
  ASSERT_TRUE(std::holds_alternative<Model>(got.body));
  const auto& sent = std::get<Model>(model.body).weights;
  const auto& received = std::get<Model>(got.body).weights;
  ASSERT_EQ(received.size(), sent.size());
  EXPECT_EQ(0, std::memcmp(received.view().data(), sent.view().data(), sent.size() * sizeof(float)))
      << "4 MB carried whole, bit for bit";
  RelayStats stats = relay->Stats();
  EXPECT_EQ(stats.clients, 1u);
  EXPECT_GT(stats.bytes_relayed, sent.size() * sizeof(float));
  EXPECT_EQ(stats.circuits_cut, 0u);
}

TEST(Relay, AFullRelayRefusesAnotherNodeAndSaysWhy) {
  auto relay = Relay(/*max_clients=*/1);
  Server first("first", std::nullopt);
  Server second("second", std::nullopt);
  ASSERT_TRUE(relay && first.transport && second.transport);
  auto admitted = Register(*relay, "first", first.transport->bound_endpoint());
  ASSERT_TRUE(admitted.ok()) << admitted.status().ToString();
  auto refused = Register(*relay, "second", second.transport->bound_endpoint());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kRefused);
  EXPECT_NE(refused.status().message().find("the relay is full: 1 relayed nodes is its limit"),
            std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(relay->Stats().clients_refused, 1u);
  // The same node registering again keeps its port.
  auto again = Register(*relay, "first", first.transport->bound_endpoint());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->relayed_endpoint(), (*admitted)->relayed_endpoint());
}

TEST(Relay, ConnectionsAboveTheCircuitBudgetAreClosedAndTheOthersServed) {
  auto relay = Relay(16, /*max_circuits=*/1);
  Server relayed("relayed", std::nullopt);
  auto first = Client("one", std::nullopt);
  auto second = Client("two", std::nullopt);
  ASSERT_TRUE(relay && relayed.transport && first && second);
  auto link = Register(*relay, "relayed", relayed.transport->bound_endpoint());
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  const std::string& endpoint = (*link)->relayed_endpoint();
  ReplyFuture served = SendTo(*first, endpoint, "", 1, Ping{1});
  ASSERT_TRUE(std::holds_alternative<Pong>(ReplyOf(served).body));
  // The first requester's connection stays open: a second one is over the budget.
  ReplyFuture over = SendTo(*second, endpoint, "", 2, Ping{2}, seconds(2));
  EXPECT_EQ(ErrorCodeOf(over), ErrorCode::kTimeout);
  EXPECT_GE(relay->Stats().circuits_refused, 1u);
  ReplyFuture still = SendTo(*first, endpoint, "", 3, Ping{3});
  EXPECT_TRUE(std::holds_alternative<Pong>(ReplyOf(still).body));
}

TEST(Relay, ARelayThatDoesNotAnswerIsNamedWithTheConnectionsWords) {
  Server relayed("relayed", std::nullopt);
  ASSERT_TRUE(relayed.transport);
  std::string closed;
  {
    auto gone = Client("gone", std::nullopt);
    ASSERT_TRUE(gone);
    closed = gone->bound_endpoint();
  }
  RelayClientOptions options;
  options.node_id = "relayed";
  options.relay_endpoint = closed;
  options.local_endpoint = relayed.transport->bound_endpoint();
  auto link = StartRelayClient(options, std::chrono::seconds(2));
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(link.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(link.status().message().find("did not answer this node's registration in time: "
                                         "nothing accepts TCP connections at " +
                                         closed.substr(6)),
            std::string::npos)
      << link.status().ToString();
}

}  // namespace
}  // namespace meshlearn::node::testing
