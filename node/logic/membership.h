#pragma once
// Membership: who the node's peers are (DESIGN.md "Wire protocol", Hello and PeerList), one part
// of the node state machine (node/logic/state_machine.h). No I/O: messages and time in, actions
// out.
//
// Specification.
// - Candidates and verified peers. A peer learned from the config, a checkpoint, gossip or its
//   own Hello is a candidate: it is greeted with our Hello and becomes verified only when the
//   endpoint we greeted answers HelloAck as that very id, with the same architecture id. Only a
//   verified peer is sampled (and scored, fetched, measured) and listed in our PeerList; a
//   candidate is neither. A mismatch is refused on both sides with a clear log line.
//   Rationale: an unsolicited message can claim any id and any endpoint; a flood of them must not
//   reach the sampler or, through gossip, other nodes (issue 17).
// - A Hello we receive is answered HelloAck (after the checks below); its sender becomes a
//   candidate at the endpoint it names and is greeted back. A Hello from a verified peer at the
//   endpoint (and with CURVE, the key) we verified welcomes it back at once (a restarted node, a
//   peer that left); from another endpoint it only makes us greet that endpoint, and the peer
//   moves there once it answers as itself.
// - Caps, and what gives way (the config's [[peers]] are never forgotten for failing):
//   - at most max_candidates candidates: a new one is ignored while the list is full (counted;
//     gossip offers it again later); a candidate that is not from the config is forgotten after
//     kCandidateAttempts failed greetings;
//   - at most max_candidates_per_source candidates learned from one source's PeerLists at once
//     (the source is the verified peer that sent the list, or that answered ours; every sender
//     that is not a verified peer shares one source): further members are skipped (counted in
//     candidates_ignored) until the source's candidates are verified or forgotten. Candidates
//     from the config, a checkpoint or a Hello count for no source.
//     Rationale: Bitcoin's address manager buckets new addresses by the source that told it, so
//     that one source cannot fill the table; here one peer could otherwise fill the whole
//     candidate list with made-up ids (a sybil, docs/robustness.md) and keep every honest
//     newcomer out. A claimed sender id is not proof of anything, so the unverified share one
//     bucket; an honest peer's list still brings its members in, K at a time, as each batch is
//     greeted.
//   - at most max_peers verified peers: a newly verified peer takes the place of one that left,
//     else of a dead one; when every verified peer is alive it is not admitted (logged).
// - Bounded view (MembershipConfig::view_size = V > 0). The view is the verified peers: at most
//   V of them (instead of max_peers), and the sampler's row is bounded at V too (topology/
//   sampler.h, "A bounded row"), so what a node keeps about peers is O(V) whatever the mesh's
//   size. While the view has room, membership is the full membership described here. Once it
//   is full:
//   - at most min(max_candidates, V) candidates are kept;
//   - Shuffle (Cyclon, Voulgaris et al. 2005, with the node's own ages instead of ages on the
//     wire): at each round start every verified peer's view age grows by one and the node
//     sends its PeerList to one target: the witness of the sampler's highest outside estimate
//     whose peer the node does not know and that would enter the view (topology/peer_view.h,
//     Evictee), else the shuffle target of topology/peer_view.h (the oldest). The target's age
//     becomes 0; the list holds the node itself and shuffle_length - 1 random members.
//     Rationale: the oldest target reaches every member in turn (a dead one is found within
//     V rounds). A witness whose row named a peer worth more than the view's lowest member
//     knows that peer's address, and its answer lists the peers it ranks highest, so the
//     two-hop estimate can bring the peer in (greeted, verified, then admitted below).
//   - A PeerList is answered with the node itself and shuffle_length - 1 members chosen by
//     topology/peer_view.h's ShuffleAnswer, not with the whole view.
//   - A newly verified peer takes the place of topology/peer_view.h's Evictee (its rank: the
//     sampler's NewcomerRank; its source: the peer whose list told us of it; the share:
//     ceil(V / 4)), and is forgotten when there is none. The mesh is never incomplete then.
//   - The view's random choices use keys from view_seed and a counter (topology/
//     peer_view.h), never the sampling generator.
//   Rationale for "while the view has room": in a mesh of at most V nodes no view fills, so it
//   runs as full membership, byte for byte (the same PeerLists, the same draws). Full
//   membership is therefore the default up to V nodes, and a larger mesh keeps each node's
//   state and gossip O(V).
// - A Hello that fails for another reason is retried with a doubling backoff (1 s up to 30 s).
//   Only a configured peer's first greeting counts as outstanding for HelloOutstanding().
//   Rationale: the round driver waits for first greetings so that the set of known peers at a
//   round start does not depend on reply timing (sync determinism); a peer that is down, or a
//   flood of strangers greeted back, must not delay every round.
// - A peer address that is invalid or does not resolve fails its greeting at once (the
//   transport's kInvalidArgument); it is logged once per peer at warn with the cause.
// - With an allowlist (CURVE), a peer whose public key is not on it is never learned (from the
//   config, a checkpoint or gossip), greeted or admitted; a Hello carrying such a key is rejected
//   with Error(unknown_sender). A key bound to a node id (key_ids) is accepted only from that id:
//   every inbound request from a connection that proved a bound key must carry that id as its
//   sender (CheckSender), and gossip cannot attach the key to another id. The node's own key
//   travels in its Hello and PeerList. A known peer's key changes only when the peer proves a new
//   one in a handshake, never by gossip, a checkpoint (the config wins) or a HelloAck's claim.
//   Rationale: DESIGN.md "Reliability and security"; the transport could not reach such a peer
//   anyway, and listing it would only spread it by gossip and cost a deadline per round.
// - Membership gossip: at every round start the node sends its PeerList to one random active
//   peer, which answers with its own; unknown peers become candidates and are greeted with
//   Hello, at most kHellosPerTick per tick. A sybil attacker (MembershipConfig::sybils) lists
//   its made-up identities after its real peers (node/logic/sampler_attacks.h).
//   Rationale: gossip can teach a node a hundred peers at once; greeting them all opens a
//   connection each (about 3 descriptors with the peer's end), and 100 nodes in one process doing
//   so together exceeded 20,000 descriptors.
// - With a mesh size N (a node started by an engine knows it), the mesh is incomplete while
//   fewer than N - 1 peers are verified. Meanwhile, once a second, the node sends its PeerList to
//   every verified peer without a PeerList of ours in flight; this draws no random number.
//   Rationale: such a node starts knowing only rank 0; the round driver waits for the full mesh
//   before round 1, so that sync runs sample as in a launch where every node knows every other,
//   and the number of draws from the sampling generator must not depend on how long that took.
// - Goodbye. A node that leaves (Leave) sends Goodbye to every verified peer that has not left and
//   announced protocol version kGoodbyeVersion or later, in peer-table order, at most
//   kGoodbyesInFlight (8) at a time: the next goes when one is answered or its deadline passes.
//   A Goodbye received from a verified peer marks it left: it is not sampled from then on, until
//   it greets us again.
//   Rationale: a stopped node otherwise costs each of its peers dead_after_failures deadlines.
//   The bound keeps a leave's bookkeeping O(1): a simulated mesh whose nodes all end in the same
//   instant otherwise held every node's Goodbyes to all its peers at once, the run's memory peak.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "node/logic/actions.h"
#include "node/logic/peer_address.h"
#include "node/logic/requests.h"
#include "topology/peer_table.h"
#include "topology/peer_view.h"
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
  // CURVE: the node id each bound allowlisted key belongs to (NodeKeys::key_ids); an allowlisted
  // key missing here may be used by any id.
  std::map<std::string, std::string> key_ids;
  size_t max_peers = 4096;                // verified peers kept (see the specification)
  size_t max_candidates = 1024;           // candidates kept
  size_t max_candidates_per_source = 64;  // candidates kept from one source's PeerLists
  // The bounded view (see the specification): at most this many verified peers; 0: unbounded
  // (max_peers).
  size_t view_size = 0;
  // Bounded view: the entries of a shuffle's PeerList and of its answer, the sender included.
  size_t shuffle_length = 8;
  // Bounded view: keys the view's random choices (topology/peer_view.h).
  uint64_t view_seed = 0;
  // [attack] kind = "sybil": made-up identities announced in every PeerList after the real
  // peers (node/logic/sampler_attacks.h); empty for an honest node.
  std::vector<PeerInfo> sybils;
};

// Counters of membership, for /status and /metrics.
struct MembershipCounters {
  uint64_t refused_peers = 0;       // Hellos refused (architecture mismatch), both ways
  uint64_t candidates_ignored = 0;  // candidates not kept because the list was full
  uint64_t verifications = 0;       // times a peer answered our Hello and was admitted
};

// The node's peers and the Hello, PeerList and Goodbye exchanges (see the specification). Not
// thread-safe.
class Membership {
 public:
  // Membership for the node of `node`; verified peers are added to its sampler. Learns
  // config.initial_peers as candidates.
  Membership(MembershipConfig config, NodeServices node);

  // Learns the peers of a checkpoint as candidates (the config's keys win).
  void Restore(const std::vector<PeerAddress>& peers);
  // Every known peer, for a checkpoint.
  std::vector<PeerAddress> Export() const;

  // Greets every known peer.
  void GreetAll(TimePoint now, Actions& out);
  // OK when a request from `sender` may come over a connection that proved `proven_key` (CURVE;
  // empty in plain text): kUnknownSender when the key is bound to another node id.
  Status CheckSender(const std::string& sender, const std::string& proven_key) const;
  // A Hello from `env.sender` (with CURVE, `hello.public_key` is the key its handshake proved):
  // answers HelloAck and learns or welcomes the sender, or refuses it.
  void OnHello(InboundId inbound, const Envelope& env, const Hello& hello, TimePoint now,
               Actions& out);
  // A PeerList from a peer: learns its peers as candidates and answers with ours.
  void OnPeerList(InboundId inbound, const Envelope& env, const PeerList& list, TimePoint now,
                  Actions& out);
  // A Goodbye from `env.sender`: marks it left and acknowledges.
  void OnGoodbye(InboundId inbound, const Envelope& env, const Goodbye& goodbye, Actions& out);
  // The outcome of one of our Hello, PeerList or Goodbye requests; `failure` is why there is no
  // usable reply (OK when there is one).
  // A Goodbye's outcome sends the next queued Goodbye into `out`.
  void OnReply(uint64_t request_id, const Result<Message>& reply, const Status& failure,
               TimePoint now, Actions& out);
  // Round start: sends our PeerList to one random samplable peer drawn with `rng`.
  void Gossip(TimePoint now, topology::Rng& rng, Actions& out);
  // Time passed: greets the peers whose greeting is due, a few per tick.
  void OnTick(TimePoint now, Actions& out);
  // The node leaves because of `reason`: a Goodbye to every verified peer that can take one, the
  // first kGoodbyesInFlight now and the rest as those are answered (see the specification).
  void Leave(const std::string& reason, TimePoint now, Actions& out);

  // True while a first Hello to a configured peer is unanswered.
  bool HelloOutstanding() const;
  // True while a mesh size is set, the view is not full and fewer than mesh size - 1 peers are
  // admitted.
  bool MeshIncomplete() const;
  // True when the view is bounded and holds view_size verified peers (see the specification).
  bool ViewFull() const;
  // Verified peers (those that answered our Hello), left ones included.
  size_t AdmittedPeers() const;
  // The configured mesh size (0: not known).
  int mesh_size() const { return config_.mesh_size; }
  // The Hello nonce of `peer`, once it greeted us or answered our Hello.
  // True while a Goodbye of Leave() is unanswered or not yet sent.
  bool GoodbyesOutstanding() const { return !goodbyes_.empty() || !goodbye_queue_.empty(); }
  // The Hello nonce of `peer`, once it is verified.
  std::optional<uint64_t> NonceOf(const std::string& peer) const;
  // The protocol version `peer` announced in its Hello or HelloAck, once it is verified; a node
  // uses a feature with it only from that feature's first version on (protocol/version.h).
  std::optional<uint16_t> ProtocolVersionOf(const std::string& peer) const;
  // Why our last Hello to `peer` failed while the peer is not verified, in the words of the
  // failure (the transport's: a closed port, a refused key; or the peer's Error); "" once it is
  // verified, or when no Hello to it failed.
  const std::string& JoinProblemOf(const std::string& peer) const;
  // The peer table (endpoints, keys, liveness; candidates included).
  const topology::PeerTable& peers() const { return peers_; }
  topology::PeerTable& peers() { return peers_; }
  // Counters.
  const MembershipCounters& counters() const { return counters_; }

 private:
  // Where a Hello of ours went: the peer we expect to answer and the endpoint and key we used.
  struct Greeting {
    std::string peer;
    std::string endpoint;
    std::string public_key;
  };
  // What a verified peer told us in its Hello or HelloAck.
  struct PeerHello {
    uint64_t nonce = 0;
    uint16_t protocol_version = 0;
  };

  void SendHello(const Greeting& greeting, TimePoint now, Actions& out);
  void Learn(const std::vector<PeerInfo>& peers, const std::string& source, TimePoint now);
  std::string SourceOf(const std::string& sender) const;
  void ReleaseSource(const std::string& peer);
  bool KeyAllowed(const std::string& id, const std::string& public_key) const;
  bool LearnPeer(const std::string& id, const std::string& endpoint, const std::string& public_key,
                 bool pinned);
  void Verify(const Greeting& greeting, const Hello& hello, uint16_t protocol_version,
              TimePoint now);
  void GreetingFailed(const Greeting& greeting, const Status& failure, TimePoint now);
  void Drop(const std::string& peer);
  std::vector<PeerInfo> KnownPeers() const;
  Hello OwnHello() const;
  // Bounded view: its members as topology/peer_view.h sees them (views into the peer table,
  // valid until it changes), the evictee for `peer`, the shuffle's target and its lists.
  std::vector<topology::ViewMember> ViewMembers(TimePoint now) const;
  std::optional<std::string> ViewEvictee(const std::string& peer, std::string_view source,
                                         TimePoint now) const;
  std::optional<std::string> WantedWitness(TimePoint now) const;
  void Shuffle(TimePoint now, Actions& out);
  // Sends queued Goodbyes while fewer than kGoodbyesInFlight are in flight, skipping peers that
  // left or were dropped since Leave().
  void SendGoodbyes(TimePoint now, Actions& out);
  PeerList ViewList(const std::vector<std::string>& members) const;
  size_t CandidateLimit() const;
  size_t ViewShare() const;

  MembershipConfig config_;
  NodeServices node_;
  topology::PeerTable peers_;
  std::map<uint64_t, Greeting> hellos_;     // our Hello requests in flight, by request id
  std::set<uint64_t> peer_lists_;           // our PeerList requests in flight
  std::set<uint64_t> goodbyes_;             // our Goodbye requests in flight
  std::vector<std::string> goodbye_queue_;  // peers still to be told Goodbye, the next one last
  std::string goodbye_reason_;              // the reason Leave() was given
  std::map<std::string, TimePoint> next_hello_at_;
  std::map<std::string, int> hello_attempts_;         // failed greetings, by peer
  std::map<std::string, PeerHello> hellos_of_;        // verified peers' Hello fields
  std::set<std::string> address_warned_;              // peers whose bad address was logged
  std::map<std::string, std::string> join_problems_;  // unverified peers: why greeting failed
  std::map<std::string, std::string> source_of_;  // gossiped candidates: the source that told us
  std::map<std::string, size_t> from_source_;     // candidates held per source
  MembershipCounters counters_;
  std::map<uint64_t, std::string> mesh_asks_;  // PeerList requests while the mesh is incomplete
  TimePoint next_mesh_ask_at_{};
  uint64_t view_draws_ = 0;  // bounded view: draws so far (each takes a fresh key)
};

}  // namespace meshlearn::node
