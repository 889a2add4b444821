#include "node/transport/zmq_sockets.h"
#include "node/transport/transport_rules.h"

#include "node/transport/curve_keys.h"

#include <algorithm>
#include <cerrno>
#include <limits>

namespace meshlearn::node {
namespace {

// Frames below this size are copied into the zmq message: a copy of a few hundred bytes is
// cheaper than the heap-held Frame and the free callback that zero-copy needs.
constexpr size_t kCopyBelowBytes = 512;

// The "User-Id" the ZAP handler gave the connection `message` arrived on, or "" without one.
std::string UserIdOf(zmq::message_t& message) {
  const char* user_id = zmq_msg_gets(message.handle(), "User-Id");
  return user_id ? user_id : "";
}

}  // namespace

void SetCommonOptions(zmq::socket_t& socket, const TransportOptions& options) {
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, options.send_high_water_mark);
  socket.set(zmq::sockopt::rcvhwm, options.receive_high_water_mark);
  // A peer's single frame above the frame ceiling is refused by ZeroMQ itself (it disconnects
  // the peer), so not even one such frame is buffered; frames up to it reach the decoder, which
  // refuses those above max_message_bytes visibly (node/transport/transport_rules.h).
  socket.set(zmq::sockopt::maxmsgsize,
             static_cast<int64_t>(std::min<uint64_t>(FrameCeiling(options.limits),
                                                     std::numeric_limits<int64_t>::max())));
}

// The ZAP reply to one ZAP request: `status` "200" admits the client, "400" refuses it.
// RFC 27 reply frames: version, request id, status code, status text, user id, metadata.
std::vector<std::string> ZapReply(const std::string& request_id, const char* status,
                                  const std::string& text, const std::string& user_id) {
  return {"1.0", request_id, status, text, user_id, ""};
}

zmq::socket_t BindZapHandler(zmq::context_t& context) {
  zmq::socket_t zap(context, zmq::socket_type::rep);
  zap.set(zmq::sockopt::linger, 0);
  zap.bind(kZapEndpoint);
  return zap;
}

void SetCurveServer(zmq::socket_t& socket, const CurveOptions& curve, const char* domain) {
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, curve.secret_key);
  socket.set(zmq::sockopt::zap_domain, domain);
  int enforce = 1;  // best effort: a libzmq built without drafts lacks it (zmq_sockets.h)
  (void)zmq_setsockopt(socket.handle(), kZapEnforceDomain, &enforce, sizeof(enforce));
}

void SetCurveClient(zmq::socket_t& socket, const CurveOptions& curve,
                    const std::string& server_key) {
  socket.set(zmq::sockopt::curve_serverkey, server_key);
  socket.set(zmq::sockopt::curve_publickey, curve.public_key);
  socket.set(zmq::sockopt::curve_secretkey, curve.secret_key);
}

uint64_t AnswerZapRequests(zmq::socket_t& zap, const std::set<std::string>& allowed,
                           int max_reads) {
  uint64_t refused = 0;
  for (int i = 0; i < max_reads; ++i) {
    std::vector<std::string> request;
    try {
      zmq::message_t part;
      if (!zap.recv(part, zmq::recv_flags::dontwait)) break;
      request.push_back(part.to_string());
      while (part.more()) {
        (void)zap.recv(part, zmq::recv_flags::none);
        request.push_back(part.to_string());
      }
    } catch (const zmq::error_t&) {
      break;
    }
    // version, request id, domain, address, routing id, mechanism, credentials...
    std::string request_id = request.size() > 1 ? request[1] : "";
    std::string key;
    if (request.size() == 7 && request[0] == "1.0" && request[5] == "CURVE" &&
        request[6].size() == 32) {
      char z85[kZ85KeyLength + 1];
      if (zmq_z85_encode(z85, reinterpret_cast<const uint8_t*>(request[6].data()), 32)) key = z85;
    }
    std::vector<std::string> reply;
    if (!key.empty() && allowed.contains(key)) {
      reply = ZapReply(request_id, "200", "OK", key);
    } else {
      ++refused;
      reply = ZapReply(request_id, "400", "key not on the allowlist", "");
    }
    try {
      for (size_t part = 0; part < reply.size(); ++part) {
        zap.send(zmq::buffer(reply[part]),
                 part + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
      }
    } catch (const zmq::error_t&) {
      // The requesting handshake has gone (the context is closing); nothing to answer.
    }
  }
  return refused;
}

// Maps a ZeroMQ bind/connect error to the project's codes, naming the endpoint.
Status EndpointError(const char* action, const std::string& endpoint, const zmq::error_t& error) {
  std::string message =
      std::string("cannot ") + action + " ZeroMQ endpoint '" + endpoint + "': " + error.what();
  switch (error.num()) {
    case EINVAL:
    case EPROTONOSUPPORT:
    case ENODEV:
    case ENOCOMPATPROTO:
      return Status::InvalidArgument(message);
    case EADDRINUSE:
    case EADDRNOTAVAIL:
    case EMFILE:
      return Status::Unavailable(message);
    default:
      return Status::Internal(message);
  }
}

// A zmq message carrying `frame`'s bytes. Large frames are not copied: the message holds a heap
// copy of the Frame (which shares, not copies, the bytes) until ZeroMQ has sent them.
zmq::message_t ToMessage(const Frame& frame) {
  if (frame.size() < kCopyBelowBytes) return zmq::message_t(frame.data(), frame.size());
  auto keep_alive = std::make_unique<Frame>(frame);
  auto* data = const_cast<uint8_t*>(keep_alive->data());
  zmq::message_t message(
      data, keep_alive->size(), [](void*, void* hint) { delete static_cast<Frame*>(hint); },
      keep_alive.get());
  keep_alive.release();  // now owned by `message`
  return message;
}

// A Frame viewing a received message without copying it.
Frame FromMessage(zmq::message_t message) {
  auto owned = std::make_shared<zmq::message_t>(std::move(message));
  return Frame::View(owned->data(), owned->size(), owned);
}

// Sends `frames` as one multipart message, preceded by `routing_id` when given (ROUTER).
// Returns false when the socket's queue is full (nothing was sent); throws zmq::error_t on other
// errors (EHOSTUNREACH for a vanished ROUTER peer). Multipart messages are atomic in ZeroMQ: once
// the first part is accepted, the others are too.
bool SendFrames(zmq::socket_t& socket, const std::string* routing_id,
                const std::vector<Frame>& frames) {
  size_t parts = frames.size() + (routing_id ? 1 : 0);
  size_t index = 0;
  auto flags_for = [&](size_t i) {
    zmq::send_flags flags = zmq::send_flags::dontwait;
    if (i + 1 < parts) flags = flags | zmq::send_flags::sndmore;
    return flags;
  };
  if (routing_id) {
    if (!socket.send(zmq::buffer(*routing_id), flags_for(index++))) return false;
  }
  for (const Frame& frame : frames) {
    if (!socket.send(ToMessage(frame), flags_for(index)) && index == 0) return false;
    ++index;
  }
  return true;
}

// Reads one whole multipart message if one is waiting. Keeps at most `max_frames` + 1 frames
// (enough for the decoder to reject the message as too_many) and discards the rest.
std::optional<ReceivedMessage> ReceiveFrames(zmq::socket_t& socket, bool with_routing_id,
                                             uint32_t max_frames) {
  zmq::message_t first;
  if (!socket.recv(first, zmq::recv_flags::dontwait)) return std::nullopt;
  ReceivedMessage received;
  bool more = first.more();
  if (with_routing_id) {
    received.routing_id = first.to_string();
  } else {
    received.bytes += first.size();
    received.frames.push_back(FromMessage(std::move(first)));
  }
  while (more) {
    zmq::message_t part;
    (void)socket.recv(part, zmq::recv_flags::none);  // the rest of a message is already here
    if (with_routing_id && received.frames.empty()) received.user_id = UserIdOf(part);
    more = part.more();
    received.bytes += part.size();
    if (received.frames.size() <= max_frames)
      received.frames.push_back(FromMessage(std::move(part)));
  }
  return received;
}

// Everything behind the transport: the sockets, the I/O thread and its state.

}  // namespace meshlearn::node
