#pragma once
// The checks and replies every Transport implementation (node/zmq_transport.h,
// node/memory_transport.h) applies the same way, so that both keep the rules of
// node/transport.h. For implementations only; nodes use node/transport.h.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "node/transport.h"

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

// Checks `options` (at least one pending inbound request in total and per peer; with CURVE a
// matching Z85 key pair and a non-empty allowlist of Z85 keys) and returns the allowlist as a
// set (empty in plain text). kInvalidArgument naming what is wrong.
Result<std::set<std::string>> CheckTransportOptions(const TransportOptions& options);

// Checks an outgoing request before anything is sent: `frames` must be non-empty with an
// envelope carrying `request_id`; with CURVE `server_key` must be a Z85 key (kInvalidArgument)
// on `allowed_keys` (kRefused). The messages name the request and `endpoint`.
Status CheckOutgoingRequest(const TransportOptions& options,
                            const std::set<std::string>& allowed_keys, const std::string& endpoint,
                            uint64_t request_id, const std::vector<Frame>& frames,
                            const std::string& server_key);

// The Error(unavailable) reply the transport itself sends to an inbound request above its
// pending bounds, addressed to the request's id when its envelope decodes (else 0).
std::vector<Frame> TooManyPendingReply(const TransportOptions& options,
                                       const std::vector<Frame>& request);

}  // namespace meshlearn::node
