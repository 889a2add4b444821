#pragma once
// `meshlearn-node --check-join`: tries a node's configured peers as its join would, and says what
// worked, what failed and why, in a person's words (issue 59, item 4: "joins that explain
// themselves").
//
// For each [[peers]] entry, in order, the check:
// 1. sends the peer the node's own Hello over the node's own transport (its listen endpoint, key
//    pair and allowlist), so that a failure is the one the node itself would meet: a closed port,
//    an unreachable address, a key the peer's allowlist refuses, a server key that is not the
//    peer's, CURVE against plain text (node/transport/link_watch.h), a protocol version out of
//    range, or a Hello the peer refuses (its architecture, our id or key);
// 2. checks the HelloAck: the node at that endpoint is the configured id, with our architecture;
// 3. when the peer advertises another endpoint than the configured one (where the peers that
//    learn of it by gossip will dial it), pings it there;
// 4. waits for the peer to greet this node back at this node's advertised endpoint, as a peer
//    does with a node it has just learned: a peer that cannot is one this node cannot be reached
//    from (NAT, a firewall, a wrong `advertise`).
// The check answers every request it receives with Error(unavailable) (it is not a running node)
// and ends with a Goodbye to each peer that answered, so that the peers forget it.
// Rationale: the check uses the node's transport and Hello, not a separate prober, so that it
// cannot pass where the node would fail, or fail where it would pass.

#include <chrono>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/config/config.h"
#include "node/transport/transport.h"

namespace meshlearn::node {

// What the check found about one configured peer.
struct PeerJoinCheck {
  PeerAddress peer;
  bool ok = false;  // it answered as itself, admits this node and can reach it back
  std::vector<std::string> findings;  // what worked and what failed, in order, in words
};

// What the check found.
struct JoinCheck {
  std::string listen;     // the endpoint the check listened on (the node's bound listen endpoint)
  std::string advertise;  // the endpoint this node tells peers to greet it at
  std::vector<std::string> problems;  // about this node itself (e.g. it cannot listen)
  std::vector<PeerJoinCheck> peers;   // one per [[peers]] entry, in order
  // True when this node has no problem and every peer is ok.
  bool ok() const;
};

// How the check runs.
struct JoinCheckOptions {
  TransportFactory transport;  // empty: ZeroMQ (node/transport/zmq_transport.h)
  // How long a request may take; zero: the config's round_deadline_s.
  std::chrono::milliseconds deadline{0};
  // How long to wait for a peer to greet this node back once it answered.
  std::chrono::milliseconds dial_back_wait{5000};
};

// Checks the join of the node of `config` (see the steps above). It builds the node's learner
// (reading its shard) to announce the same Hello. Errors only for what stops the check before it
// can try a peer: a missing or bad key file, a config whose model cannot be built (their messages
// name the file or key). A listen endpoint that cannot be bound is a problem of
// the result, and no peer is tried.
Result<JoinCheck> CheckJoin(const NodeConfig& config, JoinCheckOptions options = {});

// The check as text for a person: one line for this node, then per peer a line "peer <id> at
// <endpoint>: ok" or ": FAILED" and its findings indented below, then a summary line.
std::string RenderJoinCheck(const NodeConfig& config, const JoinCheck& check);

}  // namespace meshlearn::node
