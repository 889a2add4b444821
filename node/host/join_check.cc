#include "node/host/join_check.h"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "node/host/node_host.h"
#include "node/host/relays.h"
#include "node/learner/learner_factory.h"
#include "node/transport/endpoint.h"
#include "node/transport/zmq_transport.h"
#include "protocol/codec.h"
#include "protocol/messages.h"
#include "protocol/version.h"

namespace meshlearn::node {
namespace {

using Clock = std::chrono::steady_clock;

// What the check answers every request with: it is not a running node.
constexpr const char* kNotRunning =
    "this node is only checking its join (meshlearn-node --check-join); it is not running";

bool IsLoopback(const std::string& host) {
  return host.rfind("127.", 0) == 0 || host == "localhost" || host == "[::1]";
}

// The Hellos that reached the check (peers greeting this node back), by sender id.
class DialBacks {
 public:
  void Record(const std::string& sender) {
    std::lock_guard<std::mutex> lock(mutex_);
    seen_[sender] = true;
    changed_.notify_all();
  }
  // Waits until `sender` greeted this node, at most until `until`.
  bool WaitFor(const std::string& sender, Clock::time_point until) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_until(lock, until, [&] { return seen_.count(sender) > 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, bool> seen_;
};

// One request and its outcome, sent over `transport` and waited for.
class Requester {
 public:
  Requester(Transport& transport, const NodeConfig& config, const Limits& limits,
            std::chrono::milliseconds deadline)
      : transport_(transport), config_(config), limits_(limits), deadline_(deadline) {}

  // Sends `body` to `endpoint` (whose CURVE key is `key`) and waits for its answer: the decoded
  // reply, or why there is none (the transport's words, or the decoder's).
  Result<Message> Ask(const std::string& endpoint, const std::string& key, Body body) {
    Message message = MakeMessage(config_.id, next_request_id_, -1, std::move(body));
    message.envelope.protocol_version = config_.round.ProtocolVersion();
    auto promise = std::make_shared<std::promise<Result<std::vector<Frame>>>>();
    auto answer = promise->get_future();
    transport_.Request(
        endpoint, next_request_id_++, Encode(message), Clock::now() + deadline_,
        [promise](Result<std::vector<Frame>> reply) { promise->set_value(std::move(reply)); }, key);
    Result<std::vector<Frame>> frames = answer.get();  // the transport answers by the deadline
    if (!frames.ok()) return frames.status();
    DecodeOptions options;
    options.limits = limits_;
    return Decode(*frames, options);
  }

 private:
  Transport& transport_;
  const NodeConfig& config_;
  const Limits limits_;
  const std::chrono::milliseconds deadline_;
  uint64_t next_request_id_ = 1;
};

// An Error answer to our Hello, in words.
std::string RefusalWords(const Error& error) {
  switch (error.code) {
    case ErrorCode::kUnsupportedVersion:
      return "it refused our protocol version: " + error.text + " (this build speaks " +
             std::to_string(kMinProtocolVersion) + ".." + std::to_string(kProtocolVersion) +
             "; a node with an older or newer build cannot talk to it)";
    case ErrorCode::kRefused:
      return "it refused this node: " + error.text;
    case ErrorCode::kUnknownSender:
      return "it refused our id or key: " + error.text;
    case ErrorCode::kInvalidArgument:
      return "it refused our Hello: " + error.text;
    case ErrorCode::kUnavailable:
      return "it cannot take peers now: " + error.text;
    default:
      return std::string("it answered Error(") + ErrorCodeName(error.code) + "): " + error.text;
  }
}

// A reply that is not a HelloAck, or no reply, in words.
std::string NoAckWords(const Result<Message>& reply) {
  if (!reply.ok()) {
    if (reply.status().code() == ErrorCode::kUnsupportedVersion) {
      return "its answer is in a protocol version this build cannot read: " +
             reply.status().message();
    }
    if (reply.status().code() == ErrorCode::kRefused) {
      return "this node refuses to greet it: " + reply.status().message();
    }
    return reply.status().message();
  }
  if (const auto* error = std::get_if<Error>(&reply->body)) return RefusalWords(*error);
  return std::string("it answered our Hello with a ") +
         std::string(MessageTypeName(reply->envelope.type)) + ", not a HelloAck";
}

// Checks one configured peer (steps 1-3 of the header); the dial-back is waited for later.
// Returns the protocol version the peer announced, or 0 when it did not answer as itself.
uint16_t CheckPeer(Requester& requester, const Hello& hello, PeerJoinCheck& out) {
  const PeerAddress& peer = out.peer;
  Result<Message> reply = requester.Ask(peer.endpoint, peer.public_key, hello);
  const auto* ack = reply.ok() ? std::get_if<HelloAck>(&reply->body) : nullptr;
  if (!ack) {
    out.findings.push_back(NoAckWords(reply));
    return 0;
  }
  const Envelope& envelope = reply->envelope;
  if (envelope.sender != peer.id) {
    out.findings.push_back("the node at " + peer.endpoint + " answers as '" + envelope.sender +
                           "', not '" + peer.id +
                           "': the [[peers]] entry names the wrong node, or another node took "
                           "its address");
    return 0;
  }
  if (ack->architecture_id != hello.architecture_id) {
    out.findings.push_back("its model architecture '" + ack->architecture_id +
                           "' differs from ours '" + hello.architecture_id +
                           "': the two nodes cannot exchange models (give both the same [model] "
                           "and data)");
    return 0;
  }
  out.findings.push_back("answered our Hello as " + peer.id + " (protocol version " +
                         std::to_string(envelope.protocol_version) + ", architecture " +
                         ack->architecture_id + ", metric " + ack->metric + ")");
  if (ack->metric != hello.metric) {
    out.findings.push_back("note: it scores peers with metric " + ack->metric +
                           ", this node with " + hello.metric);
  }
  out.ok = true;
  if (ack->listen_endpoint != peer.endpoint) {
    // Where the peers that learn of it by gossip will dial it.
    Result<Message> pong = requester.Ask(ack->listen_endpoint, peer.public_key, Ping{1});
    if (pong.ok() && std::holds_alternative<Pong>(pong->body)) {
      out.findings.push_back("answers at the endpoint it advertises, " + ack->listen_endpoint +
                             ", too");
    } else {
      out.ok = false;
      out.findings.push_back(
          "it advertises itself at " + ack->listen_endpoint + ", where it does not answer (" +
          NoAckWords(pong) +
          "): the nodes that learn of it by gossip cannot reach it; it needs an `advertise` "
          "address that others can reach, or a relay ([relay] via)");
    }
  }
  return envelope.protocol_version;
}

}  // namespace

bool JoinCheck::ok() const {
  if (!problems.empty()) return false;
  for (const PeerJoinCheck& p : peers) {
    if (!p.ok) return false;
  }
  return true;
}

Result<JoinCheck> CheckJoin(const NodeConfig& config, JoinCheckOptions options) {
  std::optional<NodeKeys> keys;
  if (config.security) {
    auto loaded = LoadNodeKeys(config);
    if (!loaded.ok()) return loaded.status();
    keys = std::move(*loaded);
  }
  auto learner = CreateLearner(config);  // the architecture its Hello announces
  if (!learner.ok()) return learner.status();
  const std::chrono::milliseconds deadline =
      options.deadline.count() > 0
          ? options.deadline
          : std::chrono::duration_cast<std::chrono::milliseconds>(config.round.Deadline());

  // The node's own transport, as NodeHost::Create starts it.
  const TransportOptions transport_options = NodeTransportOptions(config, keys);
  const Limits limits = transport_options.limits;
  auto dial_backs = std::make_shared<DialBacks>();
  // The transport the handler answers on, set once it has started (the handler may run before).
  auto self = std::make_shared<std::atomic<Transport*>>(nullptr);
  auto answer = [dial_backs, self, limits, &config](InboundRequest request) {
    DecodeOptions decode;
    decode.limits = limits;
    Result<Message> message = Decode(request.frames, decode);
    EnvelopeAddress from = AddressOf(request.frames[0], limits);
    if (message.ok() && std::holds_alternative<Hello>(message->body)) {
      dial_backs->Record(message->envelope.sender);
    }
    Message refusal =
        MakeMessage(config.id, from.request_id, -1, Error{ErrorCode::kUnavailable, kNotRunning});
    refusal.envelope.protocol_version = config.round.ProtocolVersion();
    if (Transport* transport = self->load()) transport->Reply(request.token, Encode(refusal));
  };
  TransportFactory start = options.transport ? options.transport : StartZmqTransport;
  JoinCheck check;
  check.listen = config.listen;
  // Behind a relay ([relay] via), the node advertises the port its relay gives it.
  NodeConfig own = config;
  auto relays = StartRelays(own);
  if (!relays.ok()) {
    check.problems.push_back(relays.status().message() + "; no peer was tried");
    return check;
  }
  auto transport = start(transport_options, answer);
  if (!transport.ok()) {
    check.problems.push_back("this node cannot listen at " + config.listen + ": " +
                             transport.status().message() +
                             " (is the node already running, or is the address not this "
                             "machine's?); no peer was tried");
    return check;
  }
  self->store(transport->get());
  check.listen = (*transport)->bound_endpoint();
  check.advertise = own.advertise.empty() ? check.listen : own.advertise;
  const std::string own_host = EndpointHost(check.advertise);
  if (own_host == "0.0.0.0" || own_host == "*" || own_host == "[::]") {
    check.problems.push_back("this node is advertised as " + check.advertise +
                             ", which no peer can dial: set `advertise` to an address of this "
                             "machine that the peers can reach");
  }

  // The node's own Hello (Membership::OwnHello), from the same membership settings.
  const MembershipConfig membership =
      config.Membership(**learner, NodeFacts{check.advertise, keys});
  Hello hello{membership.listen_endpoint, membership.architecture_id, membership.metric,
              membership.public_key, membership.nonce};
  Requester requester(**transport, config, limits, deadline);
  std::vector<uint16_t> versions;
  for (const PeerAddress& peer : config.peers) {
    PeerJoinCheck result;
    result.peer = peer;
    versions.push_back(CheckPeer(requester, hello, result));
    if (IsLoopback(own_host) && !IsLoopback(EndpointHost(peer.endpoint))) {
      result.findings.push_back("note: this node is advertised at a loopback address (" +
                                check.advertise + "), which a peer on another machine cannot dial");
    }
    check.peers.push_back(std::move(result));
  }

  // Step 4: each peer that answered greets this node back, as it does a node it just learned.
  const Clock::time_point until = Clock::now() + options.dial_back_wait;
  for (size_t i = 0; i < check.peers.size(); ++i) {
    PeerJoinCheck& result = check.peers[i];
    if (versions[i] == 0) continue;
    if (dial_backs->WaitFor(result.peer.id, until)) {
      result.findings.push_back("greeted this node back at " + check.advertise +
                                ": it can reach this node");
      continue;
    }
    result.ok = false;
    char waited[32];
    std::snprintf(waited, sizeof(waited), "%.1f s", options.dial_back_wait.count() / 1000.0);
    result.findings.push_back(
        "it did not greet this node back at " + check.advertise + " within " + waited +
        ": it cannot reach this node there (this node is behind NAT or a firewall, or "
        "`advertise` is wrong): such a node needs a relay ([relay] via) or an address its peers "
        "can reach (a peer that already knew this node at that endpoint does not greet it back: "
        "then ignore this)");
  }

  // The peers forget the check: a candidate that says Goodbye is dropped.
  const bool can_leave = config.round.ProtocolVersion() >= kGoodbyeVersion;
  for (size_t i = 0; i < check.peers.size(); ++i) {
    if (!can_leave || versions[i] < kGoodbyeVersion) continue;
    (void)requester.Ask(check.peers[i].peer.endpoint, check.peers[i].peer.public_key,
                        Goodbye{"checked its join"});
  }
  self->store(nullptr);
  return check;
}

std::string RenderJoinCheck(const NodeConfig& config, const JoinCheck& check) {
  std::ostringstream out;
  out << "node " << config.id << ": listening at " << check.listen;
  if (!check.advertise.empty() && check.advertise != check.listen) {
    out << ", advertised as " << check.advertise;
  }
  out << (config.security ? " (CURVE)" : " (plain text)") << "\n";
  for (const std::string& problem : check.problems) out << "  - problem: " << problem << "\n";
  if (config.peers.empty() && check.problems.empty()) {
    out << "no [[peers]] to check: this node waits to be greeted\n";
  }
  size_t ok = 0;
  for (const PeerJoinCheck& p : check.peers) {
    ok += p.ok;
    out << "peer " << p.peer.id << " at " << p.peer.endpoint << ": " << (p.ok ? "ok" : "FAILED")
        << "\n";
    for (const std::string& finding : p.findings) out << "  - " << finding << "\n";
  }
  out << "join check: " << ok << " of " << check.peers.size() << " peers ok"
      << (check.problems.empty() ? "" : ", and this node has a problem") << "\n";
  return out.str();
}

}  // namespace meshlearn::node
