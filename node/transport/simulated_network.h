#pragma once
// The simulated network: the one in-memory Transport (node/transport/transport.h) of meshlearn. The
// nodes of one process exchange their real encoded frames through it, without sockets, on one of
// two clocks:
// - real time (SimulatedNetwork()): a delivery thread of its own; tests and in-process runs;
// - a simulator's virtual clock (SimulatedNetwork(clock, links)): the discrete-event simulation
//   (sim/simulation.h) delivers every frame as an event of its queue.
//
// It keeps the rules of every transport, and passes the same contract tests as ZeroMQ's
// (tests/node/transport/transport_contract_test.cc):
// - deadlines: every request ends by its deadline (kTimeout);
// - exactly-once handlers, also when a transport stops or a connection is closed (kUnavailable);
// - bounds: pending inbound requests per peer connection and in total, and the send queue of a
//   connection to an endpoint nobody listens on;
// - size limits: a frame above the receiver's frame ceiling (FrameCeiling: twice
//   max_message_bytes) never reaches it, and extra frames are cut to max_frames + 1;
// - CURVE semantics: a server admits only allowlisted client keys, a client talks only to a
//   server with the key it expects, and both ends use CURVE or neither.
//
// Specification of the medium:
// - Endpoints look like TCP ones ("tcp://<host>:<port>"), so that node configs work unchanged; a
//   port of 0 or "*" gets a free one of the network.
// - Every message (a request, or a reply) is shown to the LinkModel when it is sent, in the order
//   messages are sent. The model says how long the message takes to arrive, or that it is lost;
//   it may also change the frames (a corrupted or truncated message), which the receiver then
//   decodes as it would any bytes from a socket. The model may also deliver a copy of the
//   message (LinkMessage::duplicate), which arrives after the original and is handled as any
//   message: a second copy of a request reaches its server as a request of its own, a second
//   reply finds its request answered and is dropped as late. The default model delivers every
//   message at once.
//   Rationale: the simulator's network model (latency, bandwidth, loss, partitions) applies to
//   the real encoded bytes, so byte counts and transfer times are those of the wire.
// - A message is addressed when it is sent: one that arrives after its receiver stopped is lost,
//   even when another transport has bound the same endpoint since (a restarted node).
// - Handlers are never called from inside Transport::Request, Reply or Disconnect: they run on
//   the network's thread (real time) or as events of the clock (virtual time).
//   Rationale: the node that called the transport may be in the middle of carrying out its
//   actions; a handler run inline would re-enter it.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "node/transport/transport.h"

namespace meshlearn::node {

// The time a SimulatedNetwork lives in, and the thread its work runs on.
class NetworkClock {
 public:
  // A task set by At: its time and its place among the tasks of that time.
  struct TimerId {
    std::chrono::steady_clock::time_point at;
    uint64_t sequence = 0;
  };

  virtual ~NetworkClock() = default;
  // The current time.
  virtual std::chrono::steady_clock::time_point Now() const = 0;
  // Runs `task` on the network's thread at `at` (at once when it has passed), after the tasks due
  // before it and after those already queued for the same time; the id for Cancel.
  virtual TimerId At(std::chrono::steady_clock::time_point at, std::function<void()> task) = 0;
  // Network thread: forgets the task `id` if it has not started (no-op otherwise), so that a
  // timer whose reason is gone holds no memory. The other tasks keep their order.
  virtual void Cancel(const TimerId& id) = 0;
  // Runs `task` on the network's thread: at once when the caller is on it, otherwise as soon as
  // possible; with `wait`, returns only once it has run.
  virtual void Enter(std::function<void()> task, bool wait) = 0;
};

// A message as it is sent, shown to the LinkModel.
struct LinkMessage {
  const std::string& from;     // the sender's node id (TransportOptions::node_id)
  const std::string& to;       // the receiver's node id
  std::vector<Frame>& frames;  // the encoded message; the model may replace them
  bool reply = false;          // a reply (else a request)
  // Set by the model: a copy of the (possibly damaged) frames arrives this long after the send
  // too; it should be no earlier than the original.
  std::optional<std::chrono::steady_clock::duration>& duplicate;
};

// What became of the messages (requests and replies) sent on one medium, each counted once, at
// its fate, in messages and bytes (the bytes that travel: after the link model's damage). Once
// nothing is in flight, sent = lost + dropped + refused + received.
struct MessageLedger {
  uint64_t sent = 0, sent_bytes = 0;  // shown to the link model, and the copies it made
  uint64_t lost = 0, lost_bytes = 0;  // lost on the way (the link model's word)
  // Reached no handler: the receiver had stopped, no CURVE handshake, a frame above the ceiling,
  // cut to nothing on the way, or a reply whose request was no longer pending (late, or a copy).
  uint64_t dropped = 0, dropped_bytes = 0;
  // Refused by the receiving transport: a client key off the allowlist, or too many requests
  // pending (answered with an Error).
  uint64_t refused = 0, refused_bytes = 0;
  uint64_t received = 0, received_bytes = 0;  // handed to the receiver (it decodes them)
  uint64_t duplicated = 0;                    // copies the link model made (counted in sent)
};

// How long `message` takes to arrive, or nullopt when it is lost. Called on the network's thread
// for every message, in the order they are sent.
using LinkModel = std::function<std::optional<std::chrono::steady_clock::duration>(LinkMessage)>;

// The medium the simulated transports of one process share: a handle, copies share the medium.
// Thread-safe on real time; on a virtual clock, to be used from the clock's thread only. The
// medium lives while a handle or a transport on it does.
class SimulatedNetwork {
 public:
  // A medium on real time, with its delivery thread running, which delivers every message at once.
  SimulatedNetwork();
  // A medium on `clock`, whose messages take the time `links` says (a null model: no time).
  SimulatedNetwork(std::shared_ptr<NetworkClock> clock, LinkModel links);

  // Starts a transport listening at options.listen_endpoint on this medium, which calls
  // `on_request` (on the network's thread) for every accepted inbound request. Errors name the
  // endpoint: kInvalidArgument (malformed endpoint or options), kUnavailable (address in use).
  Result<std::unique_ptr<Transport>> Start(TransportOptions options,
                                           InboundHandler on_request) const;

  // A factory of transports on this medium, for Node::Create.
  TransportFactory Factory() const;

  // The fates of the messages sent so far (see MessageLedger).
  MessageLedger Ledger() const;

  // The medium's state (simulated_network.cc).
  class Core;

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace meshlearn::node
