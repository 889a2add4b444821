#include "node/transport/link_watch.h"

#include <cstdio>
#include <cstring>

#include "node/transport/endpoint.h"

namespace meshlearn::node {
namespace {

// The events that tell a connection's causes apart.
constexpr int kWatchedEvents = ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED |
                               ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

// "host:port" of "tcp://host:port".
std::string HostPort(const std::string& endpoint) {
  return EndpointHost(endpoint) + ":" + EndpointPort(endpoint);
}

}  // namespace

std::string DescribeLink(const LinkEvidence& e, const std::string& endpoint,
                         const std::string& own_public_key) {
  if (e.handshake_ok) return "";
  const bool curve = !own_public_key.empty();
  const std::string where = HostPort(endpoint);
  if (e.auth_status != 0) {
    return "the node at " + where + " refused this node's CURVE public key " + own_public_key +
           " (ZAP status " + std::to_string(e.auth_status) +
           "): its allowlist lacks the key; add this node's .pub line to its allowlist";
  }
  if (e.protocol_error == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
    return curve ? "the node at " + where +
                       " speaks plain text and this node CURVE: give both nodes a [security] "
                       "section, or neither"
                 : "the node at " + where +
                       " requires CURVE ([security]) and this node speaks plain text: give both "
                       "nodes a [security] section, or neither";
  }
  if (e.protocol_error != 0) {
    char code[16];
    std::snprintf(code, sizeof(code), "0x%08x", e.protocol_error);
    return "the ZeroMQ handshake with " + where + " failed (protocol error " + code +
           "): is a meshlearn node listening there?";
  }
  // Rationale: the side that finds the mismatch closes at once, so the other often sees only the
  // closed connection; these are the likeliest causes of a close in the handshake.
  if (e.closed_in_handshake) {
    return curve ? "TCP connected to " + where +
                       ", but the node closed the connection in the CURVE handshake: the public "
                       "key this node holds for it is not its key, so it cannot read our greeting "
                       "(or it speaks plain text and this node CURVE)"
                 : "TCP connected to " + where +
                       ", but the other side closed the connection in the ZeroMQ handshake: most "
                       "likely it requires CURVE ([security]) and this node speaks plain text "
                       "(or it is not a meshlearn node)";
  }
  if (e.tcp_connected) {
    return "TCP connected to " + where + ", but the ZeroMQ handshake did not finish in time";
  }
  if (e.connect_failed) {
    return "nothing accepts TCP connections at " + where +
           " (connection refused, or no route to it): is the node running, and are the address "
           "and port right?";
  }
  return "the TCP connection to " + where +
         " did not open in time: the address does not answer (the host is down or unreachable, "
         "or a firewall drops the packets)";
}

Result<LinkWatch> LinkWatch::Start(zmq::context_t& context, zmq::socket_t& dealer,
                                   uint64_t serial) {
  const std::string address = "inproc://meshlearn-link-" + std::to_string(serial);
  if (zmq_socket_monitor(dealer.handle(), address.c_str(), kWatchedEvents) != 0) {
    return Status::Internal("cannot monitor a connection: " + std::string(zmq_strerror(errno)));
  }
  try {
    zmq::socket_t events(context, zmq::socket_type::pair);
    events.set(zmq::sockopt::linger, 0);
    events.connect(address);
    return LinkWatch(std::move(events));
  } catch (const zmq::error_t& error) {
    (void)zmq_socket_monitor(dealer.handle(), nullptr, 0);
    return Status::Internal(std::string("cannot watch a connection: ") + error.what());
  }
}

bool LinkWatch::ReadEvents() {
  for (;;) {
    zmq::message_t head;
    zmq::message_t address;
    try {
      if (!events_.recv(head, zmq::recv_flags::dontwait)) break;
      if (head.more()) (void)events_.recv(address, zmq::recv_flags::none);
    } catch (const zmq::error_t&) {
      break;
    }
    if (head.size() < 6) continue;  // not an event frame: 16-bit event, then 32-bit value
    uint16_t event;
    uint32_t value;
    std::memcpy(&event, head.data(), sizeof(event));
    std::memcpy(&value, static_cast<const char*>(head.data()) + sizeof(event), sizeof(value));
    switch (event) {
      case ZMQ_EVENT_CONNECTED:
        evidence_.tcp_connected = true;
        break;
      case ZMQ_EVENT_CONNECT_RETRIED:
        if (!evidence_.tcp_connected) evidence_.connect_failed = true;
        break;
      case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        evidence_.handshake_ok = true;
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        evidence_.auth_status = static_cast<int>(value);
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        evidence_.protocol_error = value;
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
      case ZMQ_EVENT_DISCONNECTED:
        if (!evidence_.handshake_ok) evidence_.closed_in_handshake = true;
        break;
      default:
        break;
    }
  }
  return evidence_.handshake_ok;
}

void LinkWatch::Stop(zmq::socket_t& dealer) {
  (void)zmq_socket_monitor(dealer.handle(), nullptr, 0);
  events_.close();
}

}  // namespace meshlearn::node
