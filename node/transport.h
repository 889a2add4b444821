#pragma once
// The ZeroMQ transport of a node: the only code in meshlearn that touches sockets.
//
// One ROUTER socket, bound at the node's listen endpoint, receives requests from peers; one DEALER
// socket per peer endpoint, created on the first request to it, sends this node's requests and
// receives their replies. Every socket lives on one I/O thread that the Transport owns; other
// threads hand it work through a thread-safe command queue. The transport moves already-encoded
// protocol frames (protocol/codec.h) and knows only the envelope: it reads a reply's request_id
// to find the request it answers, and it reads an inbound request's request_id to answer it with
// Error(unavailable) itself when the node has too many requests outstanding.
//
// Rules:
// - Every outgoing request has a deadline, enforced by the I/O thread's poll timeout.
//   Rationale: a round never waits past its deadline (DESIGN.md, "The node's round").
// - Every ReplyHandler is called exactly once: with the reply, kTimeout, kUnavailable (the peer
//   was disconnected, its send queue is full, or the transport is stopping) or kInvalidArgument.
//   Rationale: the node's round state machine counts answers and must never wait on a lost one.
// - Inbound requests waiting for the node's Reply() are bounded per peer connection and in total;
//   above the bound the transport answers Error(unavailable) at once.
//   Rationale: bounded memory under a flood, while honest peers are still served.
// - Replies that arrive after their deadline, for unknown request ids, or from another endpoint
//   than the request went to are dropped and counted.
// - With CurveOptions, every socket speaks ZeroMQ CURVE: the ROUTER is a CURVE server whose ZAP
//   handler (inproc://zeromq.zap.01 in the transport's own ZeroMQ context, served on the I/O
//   thread) admits only allowlisted client keys; every DEALER is a CURVE client that must be given
//   its server's public key, which must be allowlisted too. A peer whose key is refused never
//   gets past the handshake: none of its requests reaches the handler and it gets no reply.
//   Rationale: DESIGN.md "Reliability and security": a node without an allowed key gets nothing.
// - zmq::error_t never leaves this module; failures become Status values or counters.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/frame.h"
#include "protocol/limits.h"
#include "protocol/status.h"

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
  // Where the ROUTER binds, e.g. "tcp://127.0.0.2:5555". A port of 0 or "*" binds an ephemeral
  // port; Transport::bound_endpoint() tells which.
  std::string listen_endpoint;
  // Protocol limits. max_message_bytes is also every socket's ZMQ_MAXMSGSIZE (per frame: a peer
  // sending a larger frame is disconnected), and an inbound request with more than max_frames
  // frames reaches the handler cut to max_frames + 1 frames (the decoder rejects it as too_many).
  Limits limits;
  // ZMQ_SNDHWM / ZMQ_RCVHWM of every socket, in messages. A request that finds its DEALER's send
  // queue full fails with kUnavailable; a reply that finds the ROUTER's full is dropped and
  // counted.
  int send_high_water_mark = 1000;
  int receive_high_water_mark = 1000;
  // Inbound requests handed to the handler and not yet answered with Reply(), in total and per
  // peer connection. Above either, the transport itself answers Error(unavailable).
  size_t max_pending_inbound = 1000;
  size_t max_pending_inbound_per_peer = 64;
  // Reconnection back-off of the DEALER sockets (ZMQ_RECONNECT_IVL, ZMQ_RECONNECT_IVL_MAX).
  std::chrono::milliseconds reconnect_interval{100};
  std::chrono::milliseconds max_reconnect_interval{2000};
  // A DEALER without outstanding requests for this long is closed (its peer's next request
  // reconnects, which costs a TCP handshake). Zero keeps every DEALER open until Disconnect.
  std::chrono::milliseconds idle_connection_timeout{5000};
  // Set: every socket uses CURVE with this key pair and allowlist. Empty: plain text.
  std::optional<CurveOptions> curve;
};

// Identifies an inbound request so that its reply goes back to the peer connection that sent it.
// Opaque; copyable, so a held request can be answered later from any thread.
class ReplyToken {
 public:
  ReplyToken() = default;

 private:
  friend class Transport;
  std::string routing_id_;  // the ROUTER's id of the peer connection
  uint64_t serial_ = 0;     // unique per inbound request of one Transport; 0 = no request
};

// A request received on the ROUTER, as handed to the InboundHandler.
struct InboundRequest {
  ReplyToken token;           // pass to Transport::Reply exactly once
  std::vector<Frame> frames;  // the request's frames, not yet decoded (zero-copy views)
  uint64_t bytes = 0;         // total bytes of `frames`
  // With CURVE: the Z85 public key the sender proved in its handshake (and the ZAP handler found
  // on the allowlist). Empty in plain text.
  std::string peer_public_key;
};

// Called on the I/O thread for every inbound request the transport accepts. Must not block and
// must not throw; the node must answer every request exactly once with Transport::Reply (now or
// later), or it keeps counting against max_pending_inbound.
using InboundHandler = std::function<void(InboundRequest)>;

// Called exactly once per Request, on the I/O thread (or on the calling thread when the transport
// is already stopping), with the reply frames (not yet decoded) or the error. Must not block and
// must not throw.
using ReplyHandler = std::function<void(Result<std::vector<Frame>>)>;

// Counters since Start. Byte counts are frame payload bytes (routing ids excluded).
struct TransportStats {
  uint64_t bytes_in = 0;              // received on any socket
  uint64_t bytes_out = 0;             // handed to any socket
  uint64_t requests_sent = 0;         // requests queued on a DEALER
  uint64_t replies_received = 0;      // replies matched to their pending request
  uint64_t requests_received = 0;     // requests read from the ROUTER, rejected ones included
  uint64_t replies_sent = 0;          // replies queued on the ROUTER, Error(unavailable) included
  uint64_t timeouts = 0;              // requests that failed with kTimeout
  uint64_t late_replies_dropped = 0;  // replies after their deadline, unknown, or misrouted
  uint64_t inbound_rejected = 0;  // inbound requests answered Error(unavailable) by the transport
  uint64_t replies_undeliverable = 0;  // replies to a vanished peer or a full queue, or duplicates
  uint64_t inbound_pending = 0;        // inbound requests now waiting for Reply() (a gauge)
  uint64_t open_connections = 0;       // DEALERs now open (a gauge)
  uint64_t handshakes_refused = 0;     // CURVE clients the ZAP handler refused (not allowlisted)
};

// The node's ZeroMQ transport. Thread-safe except for construction and destruction.
class Transport {
 public:
  // Binds the ROUTER at options.listen_endpoint and starts the I/O thread, which calls
  // `on_request` for every accepted inbound request. Errors name the endpoint: kInvalidArgument
  // (malformed endpoint or options), kUnavailable (address in use or not local), kInternal.
  static Result<std::unique_ptr<Transport>> Start(TransportOptions options,
                                                  InboundHandler on_request);

  // Stops the I/O thread: every outstanding ReplyHandler, including those of requests still in
  // the command queue, is called once with kUnavailable; replies still queued are dropped; all
  // sockets close with linger 0. Must not be called from a handler.
  ~Transport();

  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // The endpoint the ROUTER is bound to, with an ephemeral port resolved
  // (e.g. "tcp://127.0.0.1:41234").
  const std::string& bound_endpoint() const;

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
  void Request(const std::string& endpoint, uint64_t request_id, std::vector<Frame> frames,
               std::chrono::steady_clock::time_point deadline, ReplyHandler on_reply,
               const std::string& server_public_key = {});

  // Sends `frames`, an encoded reply, to the peer that sent the request of `token`. Call exactly
  // once per InboundRequest, at once or later (held requests), from any thread. Called from a
  // handler (on the I/O thread) it sends at once, so a node answering inline never fills its
  // max_pending_inbound slots; from another thread it is queued. A second reply for the same
  // token, or a reply to a peer that has gone, is dropped and counted.
  void Reply(const ReplyToken& token, std::vector<Frame> frames);

  // Closes the DEALER to `endpoint` (e.g. the peer was declared dead or restarted): its
  // outstanding requests fail with kUnavailable, and the next Request to it connects afresh.
  // Thread-safe; a no-op for an endpoint without a DEALER.
  void Disconnect(const std::string& endpoint);

  // A snapshot of the counters. Thread-safe.
  TransportStats Stats() const;

 private:
  class IoLoop;
  Transport() = default;

  std::unique_ptr<IoLoop> loop_;
};

}  // namespace meshlearn::node
