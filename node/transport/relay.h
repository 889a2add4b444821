#pragma once
// Relays for nodes behind NAT (issue 59, item 3), as libp2p's circuit relay does: a node that
// cannot accept connections (a *relayed* node) keeps one outgoing connection to a reachable node
// that serves as its *relay*, and the relay listens on a port of its own for it. Whoever dials
// that port is carried, byte for byte, to the relayed node's own listen socket:
//
//     requester --TCP--> relay:port_B ==control link==> relayed node --TCP--> its own ROUTER
//
// The relay forwards raw TCP bytes, so the ZeroMQ handshake, and CURVE with it, runs end to end
// between the requester and the relayed node: the relay sees only ciphertext, and the relayed
// node's allowlist admits whom it admits. The relayed node advertises "tcp://<relay>:<port_B>" as
// its endpoint, so its peers and their gossip need nothing new.
//
// The control link is a ZeroMQ DEALER (relayed node) to ROUTER (relay), CURVE when the node has
// keys, with these multipart messages (every frame a byte string; a circuit is the relay's id of
// one TCP connection to port_B):
//     relayed -> relay:  "register", node id             relay -> relayed: "registered", endpoint
//                                                         relay -> relayed: "refused", reason
//     relay -> relayed:  "open", circuit   (a connection arrived at port_B)
//     either way:        "data", circuit, bytes          "close", circuit
// A node that registers again (it restarted, or its link was cut) keeps its port.
//
// Budgets, so that a relay cannot be exhausted: at most max_clients relayed nodes, max_circuits
// connections per relayed node (a connection above it is closed at once), and every queue bounded
// by high_water_mark messages of at most 8 KiB (ZeroMQ's read size). A circuit whose queue is full
// is closed, never truncated: a stream either arrives whole or its connection drops, and ZeroMQ
// on the requester's side reconnects.
//
// Internal to the transport module: the node (node/host/node.cc) starts a server or a client from
// its [relay] section.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "node/transport/transport.h"

namespace meshlearn::node {

// A relay's settings.
struct RelayServerOptions {
  // Where relayed nodes register, e.g. "tcp://0.0.0.0:6000".
  std::string control_endpoint;
  // The host the relayed nodes' ports are bound on ("0.0.0.0": every interface) and the host
  // their endpoints are advertised with (an address the requesters can reach).
  std::string bind_host = "0.0.0.0";
  std::string public_host;
  size_t max_clients = 16;
  size_t max_circuits = 64;    // per relayed node
  int high_water_mark = 1000;  // messages queued per socket
  // Set: the control link speaks CURVE with this key pair and admits only these keys.
  std::optional<CurveOptions> curve;
};

// What a relay has done so far.
struct RelayStats {
  uint64_t clients = 0;           // relayed nodes registered now
  uint64_t circuits = 0;          // connections carried now
  uint64_t clients_refused = 0;   // registrations above max_clients
  uint64_t circuits_refused = 0;  // connections above max_circuits
  uint64_t circuits_cut = 0;      // circuits closed because a queue was full
  uint64_t bytes_relayed = 0;     // bytes carried, both ways
};

// A running relay: one thread, its own ZeroMQ context. Stops on destruction.
class RelayServer {
 public:
  virtual ~RelayServer() = default;
  // The bound control endpoint (an ephemeral port resolved).
  virtual const std::string& control_endpoint() const = 0;
  virtual RelayStats Stats() const = 0;
};

// Binds the control endpoint and starts the relay. Errors name the endpoint (kInvalidArgument
// for bad options, kUnavailable when it cannot be bound).
Result<std::unique_ptr<RelayServer>> StartRelayServer(RelayServerOptions options);

// A relayed node's settings.
struct RelayClientOptions {
  std::string node_id;
  std::string relay_endpoint;    // the relay's control endpoint
  std::string relay_public_key;  // CURVE: the key the relay must prove
  // This node's own listen endpoint as reachable from this host, where the circuits are carried
  // to, e.g. "tcp://127.0.0.1:5555".
  std::string local_endpoint;
  int high_water_mark = 1000;
  // Set: the control link speaks CURVE with this key pair.
  std::optional<CurveOptions> curve;
};

// A relayed node's end of the control link: one thread, its own ZeroMQ context. Stops on
// destruction (its circuits close).
class RelayClient {
 public:
  virtual ~RelayClient() = default;
  // The endpoint the relay listens on for this node: the one to advertise.
  virtual const std::string& relayed_endpoint() const = 0;
  virtual RelayStats Stats() const = 0;
};

// Connects to the relay and registers, waiting up to `deadline` for the relay's answer.
// kUnavailable when the relay does not answer in time (with the connection's words,
// node/transport/link_watch.h), kRefused when it refuses (full), naming the relay.
Result<std::unique_ptr<RelayClient>> StartRelayClient(RelayClientOptions options,
                                                      std::chrono::milliseconds deadline);

}  // namespace meshlearn::node
