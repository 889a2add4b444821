#pragma once
// Why an outgoing connection does not work, read from its DEALER's ZeroMQ monitor events, so that
// a request that times out says what went wrong in a person's words (a closed port, a key the
// peer's allowlist lacks, a wrong server key, CURVE against plain text) instead of only "no reply"
// (issue 59, "joins that explain themselves"). Internal to the ZeroMQ transport
// (node/transport/zmq_transport.cc); nothing else includes it.
//
// A DEALER is watched from its creation until its first handshake succeeds; then the watch ends,
// so a working connection costs nothing after its first handshake.
// Rationale: ZeroMQ retries a failed connection in silence, and a refused CURVE client gets no
// message at all (PROTOCOL.md, "Transport"); only the monitor events tell the causes apart.

#include <cstdint>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "base/status.h"

namespace meshlearn::node {

// What the monitor events of one DEALER have shown so far.
struct LinkEvidence {
  bool connect_failed = false;       // a TCP connect failed (refused, no route) and is retried
  bool tcp_connected = false;        // a TCP connection opened
  bool handshake_ok = false;         // a ZeroMQ handshake (NULL or CURVE) completed
  bool closed_in_handshake = false;  // the peer closed a connection before its handshake ended
  int auth_status = 0;               // the ZAP status code of a refused handshake (e.g. 400), or 0
  uint32_t protocol_error = 0;       // ZMQ_PROTOCOL_ERROR_* of a failed handshake, or 0
};

// Why a connection to `endpoint` has not carried a reply, in words, from `evidence`;
// `own_public_key` is this node's CURVE public key (Z85), empty when it speaks plain text. "" when
// the handshake succeeded (the link is fine; the peer did not answer in time). The most specific
// evidence wins: a refused key, then a protocol error, then a connection closed in its handshake,
// then a handshake still under way, then a failed connect, and last a connect that never finished.
std::string DescribeLink(const LinkEvidence& evidence, const std::string& endpoint,
                         const std::string& own_public_key);

// The monitor of one DEALER: a PAIR socket receiving its events over inproc.
class LinkWatch {
 public:
  // Starts monitoring `dealer` (call before it connects) at inproc address
  // "inproc://meshlearn-link-<serial>" of `context`, which must be unique in the context.
  // kInternal when ZeroMQ refuses.
  static Result<LinkWatch> Start(zmq::context_t& context, zmq::socket_t& dealer, uint64_t serial);

  // The socket to poll for ZMQ_POLLIN.
  void* handle() { return events_.handle(); }

  // Reads the waiting events into the evidence. Returns true once a handshake has succeeded: the
  // caller may then Stop() the watch.
  bool ReadEvents();

  // Stops monitoring `dealer` (the DEALER this watch was started on) and closes the PAIR socket.
  void Stop(zmq::socket_t& dealer);

  const LinkEvidence& evidence() const { return evidence_; }

 private:
  explicit LinkWatch(zmq::socket_t events) : events_(std::move(events)) {}
  zmq::socket_t events_;
  LinkEvidence evidence_;
};

}  // namespace meshlearn::node
