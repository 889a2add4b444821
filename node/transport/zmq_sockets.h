#pragma once
// The ZeroMQ side of node/transport/zmq_transport.cc: socket options, the ZAP handshake's
// constants, and moving multipart messages between ZeroMQ sockets and Frames without copying large
// frames. Internal to the ZeroMQ transport; nothing else includes it.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "base/status.h"
#include "node/transport/transport.h"
#include "protocol/frame.h"

namespace meshlearn::node {

// Sets linger 0, the high-water marks and ZMQ_MAXMSGSIZE (the frame ceiling of `options`,
// node/transport/transport_rules.h) on `socket`.
void SetCommonOptions(zmq::socket_t& socket, const TransportOptions& options);

// Where libzmq asks a context's ZAP handler to authenticate a handshake (RFC 27).
inline constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
// ZMQ_ZAP_ENFORCE_DOMAIN, a draft option in libzmq 4.3 (not in the stable header): with it a CURVE
// server refuses every client while no ZAP handler is bound instead of admitting all of them.
inline constexpr int kZapEnforceDomain = 93;

// The ZAP reply to one ZAP request: `status` "200" admits the client, "400" refuses it.
// RFC 27 reply frames: version, request id, status code, status text, user id, metadata.
std::vector<std::string> ZapReply(const std::string& request_id, const char* status,
                                  const std::string& text, const std::string& user_id);

// A ZAP handler's socket (a REP) bound at kZapEndpoint of `context`, linger 0. Bind it before any
// CURVE server socket of the context exists, so that no handshake finds it missing. Throws
// zmq::error_t.
zmq::socket_t BindZapHandler(zmq::context_t& context);

// Makes `socket` a CURVE server with `curve`'s secret key whose handshakes the ZAP handler of its
// context authenticates in `domain`; where libzmq has ZMQ_ZAP_ENFORCE_DOMAIN, it refuses every
// client while no handler is bound. Throws zmq::error_t.
void SetCurveServer(zmq::socket_t& socket, const CurveOptions& curve, const char* domain);

// Makes `socket` a CURVE client with `curve`'s key pair that talks only to a server proving
// `server_key` (Z85). Throws zmq::error_t.
void SetCurveClient(zmq::socket_t& socket, const CurveOptions& curve,
                    const std::string& server_key);

// Answers up to `max_reads` ZAP requests waiting on `zap` (a REP bound at kZapEndpoint; RFC 27):
// 200 for a CURVE client whose key is in `allowed`, with that key (Z85) as the connection's user
// id, and 400 for any other. Returns how many it refused.
uint64_t AnswerZapRequests(zmq::socket_t& zap, const std::set<std::string>& allowed, int max_reads);

// Maps a ZeroMQ bind/connect error to the project's codes, naming the endpoint.
Status EndpointError(const char* action, const std::string& endpoint, const zmq::error_t& error);

// A zmq message carrying `frame`'s bytes. Large frames are not copied: the message holds a heap
// copy of the Frame (which shares, not copies, the bytes) until ZeroMQ has sent them.
zmq::message_t ToMessage(const Frame& frame);

// A Frame viewing a received message without copying it.
Frame FromMessage(zmq::message_t message);

// Sends `frames` as one multipart message, preceded by `routing_id` when given (ROUTER).
// Returns false when the socket's queue is full (nothing was sent); throws zmq::error_t on other
// errors (EHOSTUNREACH for a vanished ROUTER peer). Multipart messages are atomic in ZeroMQ: once
// the first part is accepted, the others are too.
bool SendFrames(zmq::socket_t& socket, const std::string* routing_id,
                const std::vector<Frame>& frames);

// One multipart message read from a socket.
struct ReceivedMessage {
  std::string routing_id;  // ROUTER only
  std::vector<Frame> frames;
  uint64_t bytes = 0;
  std::string user_id;  // the ZAP handler's user id of the connection (CURVE: the peer's key)
};

// Reads one whole multipart message if one is waiting. Keeps at most `max_frames` + 1 frames
// (enough for the decoder to reject the message as too_many) and discards the rest.
std::optional<ReceivedMessage> ReceiveFrames(zmq::socket_t& socket, bool with_routing_id,
                                             uint32_t max_frames);

}  // namespace meshlearn::node
