#pragma once
// The relays of a node process ([relay] in configs/README.md; node/transport/relay.h): the relay
// it serves for nodes behind NAT, and the relay it is reached through. Started by the node
// (node/host/node.cc) and by --check-join (node/host/join_check.h), before either talks to a peer.

#include <memory>

#include "base/status.h"
#include "node/config/config.h"
#include "node/transport/relay.h"

namespace meshlearn::node {

// The relays of a node: the one it serves, and the one it is reached through.
struct NodeRelays {
  std::unique_ptr<RelayServer> server;
  std::unique_ptr<RelayClient> client;
};

// Starts the relays `config` asks for. A node behind a relay (`via`) registers first, waiting up
// to its round deadline, and its config's advertise becomes the endpoint the relay gives it (its
// listen port must be fixed: the relay carries connections to it). Errors name the [relay] key:
// a bad key file, a relay endpoint that cannot be bound, a relay that refuses or does not answer
// (with the connection's words, node/transport/link_watch.h).
Result<NodeRelays> StartRelays(NodeConfig& config);

}  // namespace meshlearn::node
