#pragma once
// The Transport interface: how a node's requests and replies travel. Two implementations keep
// the same rules and pass the same contract tests
// (tests/node/transport/transport_contract_test.cc):
// - ZeroMQ over TCP (zmq_transport.h): the only code in meshlearn that touches sockets;
// - the simulated network between the nodes of one process (simulated_network.h), on real time
//   for tests and in-process runs, or on the simulator's virtual clock (sim/simulation.h), which
//   carries every node's real encoded frames through it.
//
// A transport moves already-encoded protocol frames (protocol/codec.h) and knows only the
// envelope: it reads a reply's request_id to find the request it answers, and it reads an
// inbound request's request_id to answer it with Error(unavailable) itself when the node has too
// many requests outstanding.
//
// Rules:
// - Every outgoing request has a deadline, enforced by the I/O thread's poll timeout.
//   Rationale: a round never waits past its deadline (DESIGN.md, "The node's round").
// - Every ReplyHandler is called exactly once: with the reply, kTimeout, kUnavailable (the peer
//   was disconnected, its send queue is full, or the transport is stopping) or kInvalidArgument.
//   A kTimeout's message is the same for every request to one endpoint while its cause stays
//   ("no reply from <endpoint> before the deadline"); the ZeroMQ transport appends why the
//   connection carried no reply, when its monitor knows (node/transport/link_watch.h).
//   Rationale: the node's round state machine counts answers and must never wait on a lost one.
// - Inbound requests waiting for the node's Reply() are bounded per peer connection and in total;
//   above the bound the transport answers Error(unavailable) at once.
//   Rationale: bounded memory under a flood, while honest peers are still served.
// - Replies that arrive after their deadline, for unknown request ids, or from another endpoint
//   than the request went to are dropped and counted. A reply is matched by the request id of
//   its envelope array whatever its version or magic (ReplyRequestId, transport_rules.h), so that
//   the node's decoder can say why it cannot read it.
// - A message above max_message_bytes reaches the handler while each of its frames is within the
//   frame ceiling (twice max_message_bytes, FrameCeiling in node/transport/transport_rules.h); the
//   node's decoder then refuses it (Error(too_large), counted, logged once a minute per peer). A
//   frame above the ceiling is refused by the receiver: the request never reaches its handler, and
//   the requester hears nothing before its deadline.
// - With CurveOptions, a server admits only clients whose public key is on its allowlist, and a
//   client talks only to servers that prove the key it expects, which must be allowlisted too. A
//   peer whose key is refused never gets past the handshake: none of its requests reaches the
//   handler and it gets no reply. Both ends must use CURVE, or neither.
//   Rationale: DESIGN.md "Reliability and security": a node without an allowed key gets nothing.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "protocol/frame.h"
#include "protocol/limits.h"

namespace meshlearn::node {

// CURVE encryption and the ZAP allowlist of peer keys (DESIGN.md "Reliability and security").
// Transport::Start checks them: both halves of the key pair Z85 and belonging together, and a
// non-empty allowlist of Z85 keys (kInvalidArgument otherwise).
struct CurveOptions {
  std::string public_key;  // this node's CURVE public key, Z85 (40 chars)
  std::string secret_key;  // this node's CURVE secret key, Z85 (40 chars)
  // Z85 keys of the peers this node talks to: the ZAP handler admits only these clients, and
  // Request() connects only to servers whose key is among them.
  std::vector<std::string> allowed_public_keys;
};

// How a Transport is set up.
struct TransportOptions {
  // This node's id; the sender of the Error replies the transport writes itself.
  std::string node_id;
  // The protocol version this node announces (RoundSection::ProtocolVersion): the version of the
  // Error replies the transport writes itself (PROTOCOL.md: everything a node held at an older
  // version sends carries that version). 0: this build's, kProtocolVersion.
  uint16_t protocol_version = 0;
  // Where the transport listens, e.g. "tcp://127.0.0.2:5555". A port of 0 or "*" binds an ephemeral
  // port; Transport::bound_endpoint() tells which.
  std::string listen_endpoint;
  // Protocol limits. Twice max_message_bytes is the largest frame a transport receives (ZeroMQ:
  // every socket's ZMQ_MAXMSGSIZE, per frame: a peer sending a larger frame is disconnected), and
  // an inbound request with more than max_frames frames reaches the handler cut to
  // max_frames + 1 frames (the decoder rejects it as too_many).
  Limits limits;
  // The send and receive queue bounds of every connection, in messages (ZeroMQ: ZMQ_SNDHWM /
  // ZMQ_RCVHWM). A request that finds its connection's send queue full fails with kUnavailable;
  // a reply that finds the receiving queue full is dropped and
  // counted.
  int send_high_water_mark = 1000;
  int receive_high_water_mark = 1000;
  // Inbound requests handed to the handler and not yet answered with Reply(), in total and per
  // peer connection. Above either, the transport itself answers Error(unavailable).
  size_t max_pending_inbound = 1000;
  size_t max_pending_inbound_per_peer = 64;
  // Reconnection back-off of outgoing connections (ZeroMQ: ZMQ_RECONNECT_IVL, _MAX).
  std::chrono::milliseconds reconnect_interval{100};
  std::chrono::milliseconds max_reconnect_interval{2000};
  // An outgoing connection without outstanding requests for this long is closed (its peer's next
  // request reconnects, which costs a TCP handshake). Zero keeps every one open until Disconnect.
  std::chrono::milliseconds idle_connection_timeout{5000};
  // Set: every socket uses CURVE with this key pair and allowlist. Empty: plain text.
  std::optional<CurveOptions> curve;
};

// Identifies an inbound request so that its reply goes back to the peer connection that sent it.
// Copyable, so a held request can be answered later from any thread. Its fields mean something
// only to the transport that issued it.
struct ReplyToken {
  std::string route;    // the transport's id of the peer connection
  uint64_t serial = 0;  // unique per inbound request of one Transport; 0 = no request
};

// A request received from a peer, as handed to the InboundHandler.
struct InboundRequest {
  ReplyToken token;           // pass to Transport::Reply exactly once
  std::vector<Frame> frames;  // the request's frames, not yet decoded (zero-copy views)
  uint64_t bytes = 0;         // total bytes of `frames`
  // With CURVE: the Z85 public key the sender proved in its handshake (and the ZAP handler found
  // on the allowlist). Empty in plain text.
  std::string peer_public_key;
};

// Called on the transport's I/O thread for every inbound request the transport accepts. Must not
// block and must not throw; the node must answer every request exactly once with Transport::Reply
// (now or later), or it keeps counting against max_pending_inbound.
using InboundHandler = std::function<void(InboundRequest)>;

// Called exactly once per Request, on the I/O thread (or on the calling thread when the transport
// is already stopping), with the reply frames (not yet decoded) or the error. Must not block and
// must not throw.
using ReplyHandler = std::function<void(Result<std::vector<Frame>>)>;

// Counters since Start. Byte counts are frame payload bytes (routing ids excluded).
struct TransportStats {
  uint64_t bytes_in = 0;              // received on any socket
  uint64_t bytes_out = 0;             // handed to any socket
  uint64_t requests_sent = 0;         // requests queued on a connection
  uint64_t replies_received = 0;      // replies matched to their pending request
  uint64_t requests_received = 0;     // requests received, rejected ones included
  uint64_t replies_sent = 0;          // replies sent, Error(unavailable) included
  uint64_t timeouts = 0;              // requests that failed with kTimeout
  uint64_t late_replies_dropped = 0;  // replies after their deadline, unknown, or misrouted
  uint64_t inbound_rejected = 0;  // inbound requests answered Error(unavailable) by the transport
  uint64_t replies_undeliverable = 0;  // replies to a vanished peer or a full queue, or duplicates
  uint64_t inbound_pending = 0;        // inbound requests now waiting for Reply() (a gauge)
  uint64_t open_connections = 0;       // outgoing connections now open (a gauge)
  uint64_t handshakes_refused = 0;     // CURVE clients the ZAP handler refused (not allowlisted)
};

// A node's transport (see the rules above). Thread-safe except for destruction.
class Transport {
 public:
  // Stops the transport: every outstanding ReplyHandler, including those of requests not sent
  // yet, is called once with kUnavailable; replies not sent yet are dropped. Must not be called
  // from a handler.
  virtual ~Transport() = default;

  // The endpoint the transport listens on, with an ephemeral port resolved
  // (e.g. "tcp://127.0.0.1:41234").
  virtual const std::string& bound_endpoint() const = 0;

  // Sends `frames`, an encoded request whose envelope's request_id is `request_id` (unique among
  // this Transport's outstanding requests), to the node listening at `endpoint`, and calls
  // `on_reply` with the frames of the reply carrying the same request_id, or with kTimeout at
  // `deadline`, kUnavailable (send queue full, Disconnect, stopping) or kInvalidArgument (bad
  // endpoint, empty frames, request_id not the envelope's or already outstanding).
  // With CURVE, `server_public_key` is the Z85 key the peer at `endpoint` must prove: empty or
  // malformed fails with kInvalidArgument, a key not on the allowlist with kRefused, both before
  // anything is sent; a server that cannot prove it never receives the request (kTimeout). A
  // different key than the last request to `endpoint` used replaces its connection (the old
  // connection's requests fail with kUnavailable). Without CURVE the key is ignored.
  // Thread-safe; never blocks on the network.
  virtual void Request(const std::string& endpoint, uint64_t request_id, std::vector<Frame> frames,
                       std::chrono::steady_clock::time_point deadline, ReplyHandler on_reply,
                       const std::string& server_public_key = {}) = 0;

  // Sends `frames`, an encoded reply, to the peer that sent the request of `token`. Call exactly
  // once per InboundRequest, at once or later (held requests), from any thread. Called from a
  // handler it sends at once, so a node answering inline never fills its max_pending_inbound
  // slots. A second reply for the same token, or a reply to a peer that has gone, is dropped and
  // counted.
  virtual void Reply(const ReplyToken& token, std::vector<Frame> frames) = 0;

  // Closes the connection to `endpoint` (e.g. the peer was declared dead or restarted): its
  // outstanding requests fail with kUnavailable, and the next Request to it connects afresh.
  // Thread-safe; a no-op for an endpoint without a connection.
  virtual void Disconnect(const std::string& endpoint) = 0;

  // A snapshot of the counters. Thread-safe.
  virtual TransportStats Stats() const = 0;
};

// Starts a transport with `options` that calls `on_request` for every accepted inbound request
// (Node::Create takes one; the default starts ZeroMQ's, node/transport/zmq_transport.h).
using TransportFactory =
    std::function<Result<std::unique_ptr<Transport>>(TransportOptions, InboundHandler)>;

}  // namespace meshlearn::node
