#pragma once
// A peer as a node's config names it (node/config/config.h), and as membership greets it
// (node/logic/membership.h).

#include <string>
#include <utility>

namespace meshlearn::node {

// A peer the node knows from its config: its id, where it listens and, for CURVE, its key.
struct PeerAddress {
  PeerAddress() = default;
  // A peer without a key ({id, endpoint}: plain text) or with one.
  PeerAddress(std::string id, std::string endpoint, std::string public_key = "")
      : id(std::move(id)), endpoint(std::move(endpoint)), public_key(std::move(public_key)) {}

  std::string id;
  std::string endpoint;    // "tcp://host:port"
  std::string public_key;  // Z85 CURVE public key; required when [security] is configured
  bool operator==(const PeerAddress&) const = default;
};

}  // namespace meshlearn::node
