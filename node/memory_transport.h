#pragma once
// An in-memory Transport (node/transport.h): the nodes of one process exchange messages through a
// MemoryNetwork, without sockets. It keeps the rules of every transport, and passes the same
// contract tests as ZeroMQ's (tests/node/transport_test.cc):
// - deadlines: every request ends by its deadline (kTimeout);
// - exactly-once handlers, also when a transport stops or a connection is closed (kUnavailable);
// - bounds: pending inbound requests per peer connection and in total, and the send queue of a
//   connection to an endpoint nobody listens on;
// - size limits: a frame above the receiver's frame ceiling (FrameCeiling: twice
//   max_message_bytes) never reaches it, and extra frames are cut to max_frames + 1;
// - CURVE semantics: a server admits only allowlisted client keys, a client talks only to a
//   server with the key it expects, and both ends use CURVE or neither.
//
// Endpoints look like TCP ones ("tcp://<host>:<port>"), so that node configs work unchanged; a
// port of 0 or "*" gets a free one of the network. One thread per network delivers every message
// and fires every deadline, in order; handlers run on it. Delivery takes no time: a message
// reaches its receiver as soon as the network thread takes the request.

#include <memory>

#include "node/transport.h"

namespace meshlearn::node {

// The medium the in-memory transports of one process share: a handle, copies share the medium.
// Thread-safe. The medium (and its thread) lives while a handle or a transport on it does.
class MemoryNetwork {
 public:
  // A new medium with its delivery thread running.
  MemoryNetwork();

  // Starts a transport listening at options.listen_endpoint on this medium, which calls
  // `on_request` (on the network thread) for every accepted inbound request. Errors name the
  // endpoint: kInvalidArgument (malformed endpoint or options), kUnavailable (address in use).
  Result<std::unique_ptr<Transport>> Start(TransportOptions options,
                                           InboundHandler on_request) const;

  // A factory of transports on this medium, for Node::Create.
  TransportFactory Factory() const;

  // The medium's state and thread (memory_transport.cc).
  class Core;

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace meshlearn::node
