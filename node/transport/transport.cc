#include "node/transport/transport_rules.h"

#include "node/transport/curve_keys.h"
#include "node/transport/endpoint.h"
#include "protocol/codec.h"
#include "protocol/messages.h"

namespace meshlearn::node {

TransportStats TransportCounters::Load() const {
  // The field of each counter, in Counter order.
  static constexpr uint64_t TransportStats::*kFields[kCounterCount] = {
      &TransportStats::bytes_in,           &TransportStats::bytes_out,
      &TransportStats::requests_sent,      &TransportStats::replies_received,
      &TransportStats::requests_received,  &TransportStats::replies_sent,
      &TransportStats::timeouts,           &TransportStats::late_replies_dropped,
      &TransportStats::inbound_rejected,   &TransportStats::replies_undeliverable,
      &TransportStats::inbound_pending,    &TransportStats::open_connections,
      &TransportStats::handshakes_refused,
  };
  TransportStats stats;
  for (size_t i = 0; i < kCounterCount; ++i) {
    stats.*kFields[i] = values_[i].load(std::memory_order_relaxed);
  }
  return stats;
}

uint64_t FrameCeiling(const Limits& limits) {
  return limits.max_message_bytes > UINT64_MAX / 2 ? UINT64_MAX : 2 * limits.max_message_bytes;
}

Result<std::set<std::string>> CheckTransportOptions(const TransportOptions& options) {
  if (options.max_pending_inbound == 0 || options.max_pending_inbound_per_peer == 0) {
    return Status::InvalidArgument(
        "max_pending_inbound and max_pending_inbound_per_peer must be at least 1");
  }
  std::set<std::string> allowed;
  if (!options.curve) return allowed;
  const CurveOptions& curve = *options.curve;
  auto derived = CurvePublicKeyOf(curve.secret_key);
  if (!derived.ok()) return derived.status().WithContext("CURVE options");
  if (*derived != curve.public_key) {
    return Status::InvalidArgument(
        "CURVE options: the public key does not belong to the secret key");
  }
  if (curve.allowed_public_keys.empty()) {
    return Status::InvalidArgument("CURVE options: the allowlist is empty");
  }
  for (const std::string& key : curve.allowed_public_keys) {
    if (!IsZ85Key(key)) {
      return Status::InvalidArgument("CURVE options: allowlisted key '" + key +
                                     "' is not 40 Z85 characters");
    }
    allowed.insert(key);
  }
  return allowed;
}

Status CheckOutgoingRequest(const TransportOptions& options,
                            const std::set<std::string>& allowed_keys, const std::string& endpoint,
                            uint64_t request_id, const std::vector<Frame>& frames,
                            const std::string& server_key) {
  std::string what = "request " + std::to_string(request_id) + " to " + endpoint;
  if (frames.empty()) return Status::InvalidArgument(what + ": no frames");
  // Rationale: ZeroMQ accepts e.g. "tcp://300.1.2.3:5555" and then retries it in silence.
  if (std::string problem = TcpEndpointProblem(endpoint); !problem.empty()) {
    return Status::InvalidArgument(what + ": the address is invalid: " + problem);
  }
  auto envelope = DecodeEnvelope(frames[0], options.limits);
  if (!envelope.ok()) return envelope.status().WithContext(what + ": bad envelope");
  if (envelope->request_id != request_id) {
    return Status::InvalidArgument(what + ": the envelope carries request id " +
                                   std::to_string(envelope->request_id));
  }
  if (options.curve) {
    if (!IsZ85Key(server_key)) {
      return Status::InvalidArgument(
          what + ": CURVE needs the peer's public key (40 Z85 characters), got '" + server_key +
          "'");
    }
    if (!allowed_keys.contains(server_key)) {
      return Status::Refused(what + ": its public key " + server_key + " is not on the allowlist");
    }
  }
  return Status::Ok();
}

std::optional<uint64_t> ReplyRequestId(const Frame& frame, const Limits& limits) {
  Result<Envelope> envelope = DecodeEnvelope(frame, limits);
  if (envelope.ok()) return envelope->request_id;
  switch (envelope.status().code()) {
    case ErrorCode::kMalformed:
    case ErrorCode::kTooLarge:
    case ErrorCode::kTooMany:
      return std::nullopt;
    default:
      return AddressOf(frame, limits).request_id;
  }
}

std::vector<Frame> TooManyPendingReply(const TransportOptions& options,
                                       const std::vector<Frame>& request) {
  // When the envelope is unreadable the reply cannot be matched anyway (request id 0).
  uint64_t request_id = request.empty() ? 0 : AddressOf(request[0], options.limits).request_id;
  Error error{ErrorCode::kUnavailable,
              "node " + options.node_id + " has too many requests pending; retry later"};
  // The transport does not know the node's round; 0 marks a transport-level answer.
  Message reply = MakeMessage(options.node_id, request_id, 0, error);
  if (options.protocol_version != 0) reply.envelope.protocol_version = options.protocol_version;
  return Encode(reply);
}

}  // namespace meshlearn::node
