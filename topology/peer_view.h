#pragma once
// The choices of a bounded view (node/logic/membership.h, "Bounded view"): whom a node shuffles
// with, which peers it offers and answers with, and which member a newly verified peer
// replaces. Pure: the view's members, their ranks in the sampler's row (topology/sampler.h) and
// a draw key in, peer ids out; membership owns the state and the messages.
//
// Specification.
// - Shuffle target (Cyclon, Voulgaris et al. 2005, step 2): the samplable member of the largest
//   age (ties: the smaller id). A member's age counts the node's shuffles since the member
//   joined the view or was last shuffled with (membership keeps it).
//   Rationale: the oldest entry is the one the node has heard least from lately, so every
//   member is reached in turn and a dead one is found within a view's length of rounds.
// - Random members: `count` samplable members other than `exclude`, those with the smallest
//   Mix64(StableHash(id) ^ key) (base/stable_hash.h: SplitMix64's finaliser), in that
//   order. A fresh key per draw makes it a uniform draw without replacement.
//   Rationale: a hash keyed by the node's seed and a counter gives the same picks on every
//   platform, draws nothing from the sampling generator (whose sequence must not depend on how
//   many shuffles a node answered), and holds no generator state per node (a std::mt19937_64
//   is 2.5 KB, a large share of a simulated node's budget at 100,000 nodes).
// - Answer: the ceil(count / 2) samplable members other than `exclude` that rank highest (rank
//   descending, ties: the smaller id), then random members (as above) among the others up to
//   `count`.
//   Rationale: the peers a node ranks highest are those its score row vouches for, so an
//   answer carries the addresses a requester's two-hop rule asks for (topology/sampler.h,
//   "Outside estimates"); the random half keeps the view a random sample of the mesh, as
//   Cyclon's answer is.
// - Evictee: the member a newly verified peer p (rank r, told by `source`) replaces in a full
//   view, or none (it is not admitted):
//   1. a member that left, else one that is dead (the first by id), whatever r;
//   2. none when `source` is not empty and at least `share` members came from it;
//   3. else the lowest member: by rank, and among equal ranks the one whose id has the larger
//      key hash Mix64(StableHash(id) ^ key) (ties: the larger id), when p is above it: r ranks
//      higher, or the same with a smaller key hash.
//   Rationale: (1) is the rule of a full unbounded table (topology/peer_table.h, Replaceable).
//   (2) is Brahms's bound (Bortnikov et al. 2009): one source's lists and rows can take at
//   most `share` of a full view, so a liar that vouches for its allies, or a colluding group
//   answering with each other, cannot crowd out the rest. (3) keeps the best-scored peers, as
//   DAC draws them. Among equal ranks (in practice the unscored members, which no row has
//   named) the key hash decides, as Brahms's min-wise samplers do: that part of the view
//   converges to the peers of smallest hash among all the node has verified, a uniform random
//   sample of them whatever the order they arrived in, and an attacker gains nothing by
//   repeating its ids. Without it the first peers to answer (in a launch, the lowest ids)
//   would keep their places, and a node could keep a view without one cluster mate.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "topology/sampler.h"

namespace meshlearn::topology {

// One member of a bounded view, as the choices see it.
struct ViewMember {
  std::string_view peer;
  int age = 0;              // shuffles since it joined the view or was last shuffled with
  std::string_view source;  // the peer whose list told us of it ("": none)
  RowRank rank;             // its rank in the sampler's row
  bool samplable = true;    // alive or on probation (topology/peer_table.h)
  bool left = false;        // said Goodbye
  bool dead = false;        // dead now
};

// The key of draw number `draw` of a view seeded with `seed`: a different key per draw.
uint64_t ViewDrawKey(uint64_t seed, uint64_t draw);
// The key of the member hashes of a view seeded with `seed` (Evictee): one key for its life.
uint64_t ViewHashKey(uint64_t seed);
// The key hash of `peer` under `key`: Mix64(StableHash(peer) ^ key) (see the specification).
uint64_t MemberHash(std::string_view peer, uint64_t key);

// The shuffle target of `view` (see the specification), or nullopt when no member is samplable.
std::optional<std::string> ShuffleTarget(std::span<const ViewMember> view);

// `count` random samplable members other than `exclude` drawn with `key` (see the
// specification); fewer when the view has fewer.
std::vector<std::string> RandomMembers(std::span<const ViewMember> view, std::string_view exclude,
                                       size_t count, uint64_t key);

// The members a node answers a shuffle from `exclude` with (see the specification).
std::vector<std::string> ShuffleAnswer(std::span<const ViewMember> view, std::string_view exclude,
                                       size_t count, uint64_t key);

// The member that newcomer `peer` of rank `rank`, told by `source`, replaces in the full view
// `view` whose key hashes use `key`, or nullopt (see the specification).
std::optional<std::string> Evictee(std::span<const ViewMember> view, std::string_view peer,
                                   const RowRank& rank, std::string_view source, size_t share,
                                   uint64_t key);

}  // namespace meshlearn::topology
