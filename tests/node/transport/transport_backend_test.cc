// Tests of one transport implementation at a time (ZeroMQ over real loopback TCP sockets, and the
// simulated network on real time), each with a medium of its own: endpoints that cannot be bound or
// parsed, bad CURVE options, and CURVE's allowlist, where who is refused gets nothing. These are
// reliability tests (label `reliability`).
// Deadlines are seconds long and durations are never asserted tightly: the machine is shared.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>

#include "tests/node/transport/transport_test_support.h"

namespace meshlearn::node::testing {
namespace {

// Tests of one implementation at a time, each with a medium of its own.
class TransportBackend : public ::testing::TestWithParam<Backend> {
 protected:
  const TransportFactory start_ = GetParam().medium();
};

TEST_P(TransportBackend, AnAddressInUseIsUnavailableAndNamesTheEndpoint) {
  TransportOptions options;
  options.node_id = "first";
  options.listen_endpoint = "tcp://127.0.0.1:0";
  auto first = start_(options, [](InboundRequest) {});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  options.listen_endpoint = (*first)->bound_endpoint();
  auto second = start_(options, [](InboundRequest) {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(second.status().message().find(options.listen_endpoint), std::string::npos)
      << second.status().ToString();
}

TEST_P(TransportBackend, MalformedEndpointsAndBadCurveOptionsAreInvalidArguments) {
  for (const char* endpoint :
       {"bogus://127.0.0.1:1", "127.0.0.1:5555", "tcp://127.0.0.1:notaport"}) {
    TransportOptions options;
    options.listen_endpoint = endpoint;
    auto transport = start_(options, [](InboundRequest) {});
    ASSERT_FALSE(transport.ok()) << endpoint;
    EXPECT_EQ(transport.status().code(), ErrorCode::kInvalidArgument)
        << transport.status().ToString();
  }
  CurveKeyPair mine = NewKeyPair();
  CurveKeyPair other = NewKeyPair();
  std::vector<std::pair<const char*, CurveOptions>> bad = {
      {"empty", CurveOptions{}},
      {"public key of another pair", {other.public_key, mine.secret_key, {other.public_key}}},
      {"empty allowlist", {mine.public_key, mine.secret_key, {}}},
      {"allowlisted key not Z85", {mine.public_key, mine.secret_key, {"not a key"}}},
  };
  for (const auto& [what, curve] : bad) {
    TransportOptions options;
    options.listen_endpoint = "tcp://127.0.0.1:0";
    options.curve = curve;
    auto transport = start_(options, [](InboundRequest) {});
    ASSERT_FALSE(transport.ok()) << what;
    EXPECT_EQ(transport.status().code(), ErrorCode::kInvalidArgument) << what;
  }
}

// A transport with its own key pair and allowlist that answers Ping with Pong on the I/O thread,
// counting the requests that reach it and remembering the last sender's proven key.
class CurvePeer {
 public:
  CurvePeer(const TransportFactory& start, const std::string& id, const CurveKeyPair& keys,
            std::vector<std::string> allowed, bool curve = true) {
    TransportOptions options;
    options.node_id = id;
    options.listen_endpoint = "tcp://127.0.0.1:0";
    if (curve) options.curve = CurveOptions{keys.public_key, keys.secret_key, std::move(allowed)};
    auto started = start(options, [this, id](InboundRequest r) {
      ++requests_seen;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        last_sender_key_ = r.peer_public_key;
      }
      transport->Reply(r.token, Answer(id, r.frames, nullptr));
    });
    EXPECT_TRUE(started.ok()) << started.status().ToString();
    if (started.ok()) transport = std::move(*started);
  }
  std::string last_sender_key() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_sender_key_;
  }

  std::atomic<int> requests_seen{0};
  std::unique_ptr<Transport> transport;

 private:
  std::mutex mutex_;
  std::string last_sender_key_;
};

TEST_P(TransportBackend, AllowlistedPeersExchangeRequestsBothWaysAndTheServerSeesTheProvenKey) {
  CurveKeyPair alpha_keys = NewKeyPair();
  CurveKeyPair beta_keys = NewKeyPair();
  std::vector<std::string> both = {alpha_keys.public_key, beta_keys.public_key};
  CurvePeer alpha(start_, "alpha", alpha_keys, both);
  CurvePeer beta(start_, "beta", beta_keys, both);
  ASSERT_TRUE(alpha.transport && beta.transport);

  ReplyFuture to_beta =
      SendTo(*alpha.transport, beta.transport->bound_endpoint(), beta_keys.public_key, 1, Ping{11});
  Message reply = ReplyOf(to_beta);
  ASSERT_TRUE(std::holds_alternative<Pong>(reply.body));
  EXPECT_EQ(std::get<Pong>(reply.body).nonce, 11u);
  EXPECT_EQ(beta.last_sender_key(), alpha_keys.public_key);

  ReplyFuture to_alpha = SendTo(*beta.transport, alpha.transport->bound_endpoint(),
                                alpha_keys.public_key, 2, Ping{22});
  reply = ReplyOf(to_alpha);
  ASSERT_TRUE(std::holds_alternative<Pong>(reply.body));
  EXPECT_EQ(std::get<Pong>(reply.body).nonce, 22u);
  EXPECT_EQ(alpha.last_sender_key(), beta_keys.public_key);
  EXPECT_EQ(alpha.transport->Stats().handshakes_refused, 0u);
  EXPECT_EQ(beta.transport->Stats().handshakes_refused, 0u);
}

TEST_P(TransportBackend, AClientWhoseKeyIsNotAllowlistedGetsNoReplyAndReachesNoHandler) {
  CurveKeyPair server_keys = NewKeyPair();
  CurveKeyPair honest_keys = NewKeyPair();
  CurveKeyPair intruder_keys = NewKeyPair();
  CurvePeer server(start_, "server", server_keys, {server_keys.public_key, honest_keys.public_key});
  // The intruder knows and allowlists the server's key, so it does try to connect.
  CurvePeer intruder(start_, "intruder", intruder_keys, {server_keys.public_key});
  CurvePeer honest(start_, "honest", honest_keys, {server_keys.public_key});
  ASSERT_TRUE(server.transport && intruder.transport && honest.transport);
  const std::string& endpoint = server.transport->bound_endpoint();

  Clock::time_point start = Clock::now();
  ReplyFuture refused =
      SendTo(*intruder.transport, endpoint, server_keys.public_key, 1, Ping{1}, seconds(2));
  EXPECT_EQ(ErrorCodeOf(refused), ErrorCode::kTimeout);
  EXPECT_GE(Clock::now() - start, seconds(2));  // nothing came back before the deadline either
  EXPECT_GT(server.transport->Stats().handshakes_refused, 0u);

  ReplyFuture served = SendTo(*honest.transport, endpoint, server_keys.public_key, 2, Ping{2});
  ASSERT_TRUE(std::holds_alternative<Pong>(ReplyOf(served).body));
  EXPECT_EQ(server.requests_seen.load(), 1) << "only the honest request reached the handler";
  EXPECT_EQ(intruder.transport->Stats().bytes_in, 0u);
  EXPECT_EQ(intruder.transport->Stats().replies_received, 0u);
}

TEST_P(TransportBackend, APlainTextClientGetsNothingFromACurveServer) {
  CurveKeyPair server_keys = NewKeyPair();
  CurvePeer server(start_, "server", server_keys, {server_keys.public_key});
  CurvePeer plain(start_, "plain", {}, {}, /*curve=*/false);
  ASSERT_TRUE(server.transport && plain.transport);
  ReplyFuture reply =
      SendTo(*plain.transport, server.transport->bound_endpoint(), "", 1, Ping{1}, seconds(2));
  EXPECT_EQ(ErrorCodeOf(reply), ErrorCode::kTimeout);
  EXPECT_EQ(server.requests_seen.load(), 0);
  EXPECT_EQ(plain.transport->Stats().bytes_in, 0u);
}

TEST_P(TransportBackend, AServerThatCannotProveTheExpectedKeyNeverReceivesTheRequest) {
  CurveKeyPair client_keys = NewKeyPair();
  CurveKeyPair expected = NewKeyPair();
  CurveKeyPair impostor_keys = NewKeyPair();
  // The impostor listens where the client expects `expected` and would even admit the client.
  CurvePeer impostor(start_, "impostor", impostor_keys, {client_keys.public_key});
  CurvePeer client(start_, "client", client_keys, {expected.public_key});
  ASSERT_TRUE(impostor.transport && client.transport);
  ReplyFuture reply = SendTo(*client.transport, impostor.transport->bound_endpoint(),
                             expected.public_key, 1, Ping{1}, seconds(2));
  EXPECT_EQ(ErrorCodeOf(reply), ErrorCode::kTimeout);
  EXPECT_EQ(impostor.requests_seen.load(), 0);
}

TEST_P(TransportBackend, ARequestToAKeyOffTheAllowlistOrWithoutAKeyFailsBeforeAnythingIsSent) {
  CurveKeyPair client_keys = NewKeyPair();
  CurveKeyPair stranger = NewKeyPair();
  CurvePeer server(start_, "server", stranger, {client_keys.public_key});
  CurvePeer client(start_, "client", client_keys, {client_keys.public_key});
  ASSERT_TRUE(server.transport && client.transport);
  const std::string& endpoint = server.transport->bound_endpoint();
  ReplyFuture off_list = SendTo(*client.transport, endpoint, stranger.public_key, 1, Ping{1});
  ReplyFuture no_key = SendTo(*client.transport, endpoint, "", 2, Ping{2});
  ReplyFuture bad_key = SendTo(*client.transport, endpoint, "0123", 3, Ping{3});
  EXPECT_EQ(ErrorCodeOf(off_list), ErrorCode::kRefused);
  EXPECT_EQ(ErrorCodeOf(no_key), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeOf(bad_key), ErrorCode::kInvalidArgument);
  EXPECT_EQ(client.transport->Stats().requests_sent, 0u);
  EXPECT_EQ(client.transport->Stats().open_connections, 0u);
  EXPECT_EQ(server.requests_seen.load(), 0);
}

// The message of a request that failed, or "" when it was answered.
std::string FailureOf(ReplyFuture& future) {
  Result<std::vector<Frame>> result = future.get();
  return result.ok() ? "" : result.status().ToString();
}

// ZeroMQ only: a request that times out says why its connection carried no reply, from the
// connection's monitor events (node/transport/link_watch.h). The simulated network has no TCP to
// explain.
TEST(ZeroMqLinkWords, AClosedPortIsNamedAsNothingAcceptingTcpConnections) {
  CurvePeer client(kZeroMq.medium(), "client", {}, {}, /*curve=*/false);
  ASSERT_TRUE(client.transport);
  // A port just bound and closed again: nothing listens there.
  std::string closed;
  {
    CurvePeer gone(kZeroMq.medium(), "gone", {}, {}, /*curve=*/false);
    ASSERT_TRUE(gone.transport);
    closed = gone.transport->bound_endpoint();
  }
  ReplyFuture reply = SendTo(*client.transport, closed, "", 1, Ping{1}, seconds(2));
  std::string failure = FailureOf(reply);
  EXPECT_EQ(failure.rfind("timeout: no reply from " + closed, 0), 0u) << failure;
  EXPECT_NE(failure.find("nothing accepts TCP connections at " + closed.substr(6)),
            std::string::npos)
      << failure;
}

TEST(ZeroMqLinkWords, AKeyOffTheServersAllowlistIsNamedAsRefusedByItsAllowlist) {
  CurveKeyPair server_keys = NewKeyPair();
  CurveKeyPair client_keys = NewKeyPair();
  CurvePeer server(kZeroMq.medium(), "server", server_keys, {server_keys.public_key});
  CurvePeer client(kZeroMq.medium(), "client", client_keys, {server_keys.public_key});
  ASSERT_TRUE(server.transport && client.transport);
  ReplyFuture reply = SendTo(*client.transport, server.transport->bound_endpoint(),
                             server_keys.public_key, 1, Ping{1}, seconds(2));
  std::string failure = FailureOf(reply);
  EXPECT_NE(failure.find("refused this node's CURVE public key " + client_keys.public_key +
                         " (ZAP status 400)"),
            std::string::npos)
      << failure;
}

TEST(ZeroMqLinkWords, AWrongServerKeyIsNamedAsNotItsKey) {
  CurveKeyPair server_keys = NewKeyPair();
  CurveKeyPair client_keys = NewKeyPair();
  CurveKeyPair wrong = NewKeyPair();
  CurvePeer server(kZeroMq.medium(), "server", server_keys, {client_keys.public_key});
  CurvePeer client(kZeroMq.medium(), "client", client_keys, {wrong.public_key});
  ASSERT_TRUE(server.transport && client.transport);
  ReplyFuture reply = SendTo(*client.transport, server.transport->bound_endpoint(),
                             wrong.public_key, 1, Ping{1}, seconds(2));
  std::string failure = FailureOf(reply);
  EXPECT_NE(failure.find("the public key this node holds for it is not its key"), std::string::npos)
      << failure;
}

TEST(ZeroMqLinkWords, CurveAgainstPlainTextIsNamedFromEitherSide) {
  CurveKeyPair server_keys = NewKeyPair();
  CurveKeyPair client_keys = NewKeyPair();
  CurvePeer curve_server(kZeroMq.medium(), "server", server_keys, {client_keys.public_key});
  CurvePeer plain_server(kZeroMq.medium(), "plain-server", {}, {}, /*curve=*/false);
  CurvePeer plain_client(kZeroMq.medium(), "plain", {}, {}, /*curve=*/false);
  CurvePeer curve_client(kZeroMq.medium(), "client", client_keys, {server_keys.public_key});
  ASSERT_TRUE(curve_server.transport && plain_server.transport && plain_client.transport &&
              curve_client.transport);
  ReplyFuture plain_to_curve =
      SendTo(*plain_client.transport, curve_server.transport->bound_endpoint(), "", 1, Ping{1},
             seconds(2));
  std::string failure = FailureOf(plain_to_curve);
  EXPECT_NE(failure.find("requires CURVE ([security]) and this node speaks plain text"),
            std::string::npos)
      << failure;
  ReplyFuture curve_to_plain =
      SendTo(*curve_client.transport, plain_server.transport->bound_endpoint(),
             server_keys.public_key, 2, Ping{2}, seconds(2));
  failure = FailureOf(curve_to_plain);
  EXPECT_NE(failure.find("speaks plain text and this node CURVE"), std::string::npos) << failure;
}

TEST(ZeroMqLinkWords, AWorkingConnectionAddsNoWordsToItsAnswer) {
  CurvePeer server(kZeroMq.medium(), "server", {}, {}, /*curve=*/false);
  CurvePeer client(kZeroMq.medium(), "client", {}, {}, /*curve=*/false);
  ASSERT_TRUE(server.transport && client.transport);
  ReplyFuture reply =
      SendTo(*client.transport, server.transport->bound_endpoint(), "", 1, Ping{5}, seconds(5));
  EXPECT_EQ(FailureOf(reply), "");
}

INSTANTIATE_TEST_SUITE_P(EveryTransport, TransportBackend, ::testing::Values(kZeroMq, kSimulated),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace meshlearn::node::testing
