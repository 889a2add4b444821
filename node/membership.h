#pragma once
// Membership: who the node's peers are (DESIGN.md "Wire protocol", Hello and PeerList), one part
// of the node state machine (node/state_machine.h). No I/O: messages and time in, actions out.
//
// Specification.
// - A peer joins the sampler once it answered our Hello (HelloAck) or sent us one, with the same
//   architecture id; a mismatch is refused on both sides with a clear log line.
// - A Hello that fails for another reason is retried with a doubling backoff (1 s up to 30 s).
//   Only a peer's first greeting counts as outstanding for HelloOutstanding().
//   Rationale: the round driver waits for first greetings so that the set of known peers at a
//   round start does not depend on reply timing (sync determinism); a peer that is down must not
//   delay every round.
// - With an allowlist (CURVE), a peer whose public key is not on it is never learned (from the
//   config, a checkpoint or gossip), greeted or admitted; a Hello carrying such a key is rejected
//   with Error(unknown_sender). The node's own key travels in its Hello and PeerList. A known
//   peer's key changes only when the peer proves a new one in a handshake, never by gossip, a
//   checkpoint (the config wins) or a HelloAck's claim.
//   Rationale: DESIGN.md "Reliability and security"; the transport could not reach such a peer
//   anyway, and listing it would only spread it by gossip and cost a deadline per round.
// - Membership gossip: at every round start the node sends its PeerList to one random active
//   peer, which answers with its own; unknown peers are greeted with Hello, at most
//   kHellosPerTick per tick.
//   Rationale: gossip can teach a node a hundred peers at once; greeting them all opens a
//   connection each (about 3 descriptors with the peer's end), and 100 nodes in one process doing
//   so together exceeded 20,000 descriptors.
// - With a mesh size N (a node started by an engine knows it), the mesh is incomplete while
//   fewer than N - 1 peers are admitted. Meanwhile, once a second, the node sends its PeerList to
//   every admitted peer without a PeerList of ours in flight; this draws no random number.
//   Rationale: such a node starts knowing only rank 0; the round driver waits for the full mesh
//   before round 1, so that sync runs sample as in a launch where every node knows every other,
//   and the number of draws from the sampling generator must not depend on how long that took.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "node/actions.h"
#include "node/config.h"
#include "node/requests.h"
#include "topology/peer_table.h"
#include "topology/sampler.h"

namespace meshlearn::node {

// What membership needs to know about its node.
struct MembershipConfig {
  std::string listen_endpoint;
  std::string architecture_id;  // peers with another one are refused
  std::string metric;           // the metric's config name, sent in Hello
  uint64_t nonce = 0;           // sent in Hello (the peers' EMD projection seeds)
  Clock::duration hello_deadline = std::chrono::seconds(10);
  int dead_after_failures = 3;
  Clock::duration dead_backoff = std::chrono::seconds(10);  // first backoff of a dead peer
  std::vector<PeerAddress> initial_peers;
  int mesh_size = 0;  // > 0: the number of nodes in the mesh, this one included
  // CURVE: this node's Z85 public key (sent in Hello and PeerList) and the allowlist of peer
  // keys. Without an allowlist (plain text) every peer is accepted and keys are only relayed.
  std::string public_key;
  std::optional<std::set<std::string>> allowed_keys;
};

// The node's peers and the Hello/PeerList exchanges (see the specification). Not thread-safe.
class Membership {
 public:
  // Membership for the node of `node`; admitted peers are added to its sampler. Learns
  // config.initial_peers.
  Membership(MembershipConfig config, NodeServices node);

  // Learns the peers of a checkpoint (the config's keys win).
  void Restore(const std::vector<PeerAddress>& peers);
  // Every known peer, for a checkpoint.
  std::vector<PeerAddress> Export() const;

  // Greets every known peer.
  void GreetAll(TimePoint now, Actions& out);
  // A Hello from `env.sender`: admits it and answers HelloAck, or refuses it.
  void OnHello(InboundId inbound, const Envelope& env, const Hello& hello, TimePoint now,
               Actions& out);
  // A PeerList from a peer: learns its peers and answers with ours.
  void OnPeerList(InboundId inbound, const Envelope& env, const PeerList& list, TimePoint now,
                  Actions& out);
  // The outcome of one of our Hello or PeerList requests; `failure` is why there is no usable
  // reply (OK when there is one).
  void OnReply(uint64_t request_id, const Result<Message>& reply, const Status& failure,
               TimePoint now);
  // Round start: sends our PeerList to one random samplable peer drawn with `rng`.
  void Gossip(TimePoint now, topology::Rng& rng, Actions& out);
  // Time passed: greets the peers whose greeting is due, a few per tick.
  void OnTick(TimePoint now, Actions& out);

  // True while a first Hello to some peer is unanswered.
  bool HelloOutstanding() const;
  // True while a mesh size is set and fewer than mesh size - 1 peers are admitted.
  bool MeshIncomplete() const;
  // Admitted peers (those that completed a Hello exchange).
  size_t AdmittedPeers() const;
  // The configured mesh size (0: not known).
  int mesh_size() const { return config_.mesh_size; }
  // The Hello nonce of `peer`, once it greeted us or answered our Hello.
  std::optional<uint64_t> NonceOf(const std::string& peer) const;
  // The peer table (endpoints, keys, liveness).
  const topology::PeerTable& peers() const { return peers_; }
  topology::PeerTable& peers() { return peers_; }
  // Hellos refused (architecture mismatch), both ways.
  uint64_t refused_peers() const { return refused_peers_; }

 private:
  void SendHello(const std::string& peer, TimePoint now, Actions& out);
  void Learn(const std::vector<PeerInfo>& peers, TimePoint now);
  bool KeyAllowed(const std::string& public_key) const;
  bool LearnPeer(const std::string& id, const std::string& endpoint, const std::string& public_key);
  void Admit(const std::string& peer, const Hello& hello, const std::string& public_key);
  std::vector<PeerInfo> KnownPeers() const;
  Hello OwnHello() const;

  MembershipConfig config_;
  NodeServices node_;
  topology::PeerTable peers_;
  std::map<uint64_t, std::string> hellos_;  // our Hello requests in flight, by request id
  std::set<uint64_t> peer_lists_;           // our PeerList requests in flight
  std::map<std::string, TimePoint> next_hello_at_;
  std::map<std::string, int> hello_attempts_;  // failed greetings, by peer
  std::map<std::string, uint64_t> nonces_;     // peers' Hello nonces (projection seeds)
  std::map<uint64_t, std::string> mesh_asks_;  // PeerList requests while the mesh is incomplete
  TimePoint next_mesh_ask_at_{};
  uint64_t refused_peers_ = 0;
};

}  // namespace meshlearn::node
