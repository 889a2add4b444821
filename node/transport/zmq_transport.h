#pragma once
// The ZeroMQ transport of a node (node/transport/transport.h): the only code in meshlearn that
// touches sockets.
//
// One ROUTER socket, bound at the node's listen endpoint, receives requests from peers; one DEALER
// socket per peer endpoint, created on the first request to it, sends this node's requests and
// receives their replies. Every socket lives on one I/O thread that the transport owns; other
// threads hand it work through a thread-safe command queue.
//
// ZeroMQ specifics of the Transport rules:
// - Twice max_message_bytes (the frame ceiling) is every socket's ZMQ_MAXMSGSIZE: a peer sending
//   a larger frame is disconnected by ZeroMQ itself, so not even one such frame is buffered; its
//   DEALER reconnects by itself.
// - With CurveOptions, every socket speaks ZeroMQ CURVE: the ROUTER is a CURVE server whose ZAP
//   handler (inproc://zeromq.zap.01 in the transport's own ZeroMQ context, served on the I/O
//   thread) admits only allowlisted client keys; every DEALER is a CURVE client that must be given
//   its server's public key.
// - zmq::error_t never leaves this module; failures become Status values or counters.

#include <memory>

#include "node/transport/transport.h"

namespace meshlearn::node {

// Binds a ROUTER at options.listen_endpoint and starts the I/O thread, which calls `on_request`
// for every accepted inbound request. Errors name the endpoint: kInvalidArgument (malformed
// endpoint or options), kUnavailable (address in use or not local), kInternal.
Result<std::unique_ptr<Transport>> StartZmqTransport(TransportOptions options,
                                                     InboundHandler on_request);

}  // namespace meshlearn::node
