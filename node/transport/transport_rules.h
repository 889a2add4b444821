#pragma once
// The checks and replies every Transport implementation (node/transport/zmq_transport.h,
// node/transport/simulated_network.h) applies the same way, so that both keep the rules of
// node/transport/transport.h. For implementations only; nodes use node/transport/transport.h.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "node/transport/transport.h"

namespace meshlearn::node {

// The counters of one transport (TransportStats), written by its I/O thread and read by Stats()
// from any thread.
class TransportCounters {
 public:
  // One counter per TransportStats field.
  enum Counter : size_t {
    kBytesIn,
    kBytesOut,
    kRequestsSent,
    kRepliesReceived,
    kRequestsReceived,
    kRepliesSent,
    kTimeouts,
    kLateRepliesDropped,
    kInboundRejected,
    kRepliesUndeliverable,
    kInboundPending,
    kOpenConnections,
    kHandshakesRefused,
    kCounterCount
  };
  // Adds `value` to `counter`.
  void Add(Counter counter, uint64_t value = 1) {
    values_[counter].fetch_add(value, std::memory_order_relaxed);
  }
  // Sets the gauge `counter` to `value`.
  void Set(Counter counter, uint64_t value) {
    values_[counter].store(value, std::memory_order_relaxed);
  }
  // A snapshot of every counter.
  TransportStats Load() const;

 private:
  std::array<std::atomic<uint64_t>, kCounterCount> values_{};
};

// The largest frame a transport receives at all: twice max_message_bytes. A message with a frame
// up to this size reaches the node, whose decoder refuses it as too_large (answered, counted and
// logged once a minute per peer); a larger frame is refused by the transport itself (ZeroMQ cuts
// the connection) before it is buffered.
// Rationale: ZeroMQ cuts a connection over an oversized frame without telling anyone, so the
// node's own, visible check must see frames somewhat above its limit; the ceiling bounds the
// memory one frame can take.
uint64_t FrameCeiling(const Limits& limits);

// Checks `options` (at least one pending inbound request in total and per peer; with CURVE a
// matching Z85 key pair and a non-empty allowlist of Z85 keys) and returns the allowlist as a
// set (empty in plain text). kInvalidArgument naming what is wrong.
Result<std::set<std::string>> CheckTransportOptions(const TransportOptions& options);

// Checks an outgoing request before anything is sent: `endpoint` must be a valid TCP endpoint
// (node/transport/endpoint.h) and `frames` non-empty with an envelope carrying `request_id`; with
// CURVE `server_key` must be a Z85 key (kInvalidArgument) on `allowed_keys` (kRefused). The
// messages name the request and `endpoint`.
Status CheckOutgoingRequest(const TransportOptions& options,
                            const std::set<std::string>& allowed_keys, const std::string& endpoint,
                            uint64_t request_id, const std::vector<Frame>& frames,
                            const std::string& server_key);

// The request id a reply's envelope frame `frame` answers: that of any envelope array of the
// envelope's field types, whatever its magic, version, type or sender (AddressOf); nullopt when
// the frame is not such an array (DecodeEnvelope: kMalformed, kTooLarge or kTooMany).
// Rationale: a reply the requester cannot read (a peer of another protocol version) still goes
// to its request, whose decoder then says why (PROTOCOL.md, "Envelope"), instead of being
// dropped as unknown and leaving the requester with a bare timeout.
std::optional<uint64_t> ReplyRequestId(const Frame& frame, const Limits& limits);

// The Error(unavailable) reply the transport itself sends to an inbound request above its
// pending bounds, addressed to the request's id when its envelope decodes (else 0).
std::vector<Frame> TooManyPendingReply(const TransportOptions& options,
                                       const std::vector<Frame>& request);

}  // namespace meshlearn::node
