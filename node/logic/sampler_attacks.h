#pragma once
// The sampler attacks of robustness experiments ([attack] kind = "score_lie" | "sybil";
// configs/README.md "[attack]"; docs/robustness.md "Attacks on sampling"). The model attacks are
// a learner decorator (node/learner/poisoned_learner.h); these change what a node gossips, so
// they sit where the gossip is made: the round driver's score row and membership's PeerList.
//
// Specification.
// - score_lie: the attacker trains and serves honestly, but the score row its replies carry for
//   the requesters' two-hop rule (topology/dac_sampler.h) promotes its allies and demotes every
//   other peer. With h = 2 · the largest |s| of its honest row (1 when the row is empty), the
//   lying row gives every ally (itself excluded) s = h, and every other peer of the honest row
//   s = h · 1e-6, ordered by peer id.
//   Rationale: h exceeds every honest score in the mesh's metric scale, so an uncapped two-hop
//   estimate makes an ally the most likely peer; the demotion is positive, so that DAC's rule
//   (which takes positive evidence only) still takes it and pushes honest peers towards the
//   floor. The allies are the ids the attacker is told ([attack] allies; the launcher gives
//   every attacker the scenario's attacker list), which a colluding group would know.
// - sybil: the attacker's PeerLists (its gossip and its answers) also announce `count` made-up
//   identities after its real peers, "<its id, at most 48 characters>.sybil<k>" for k = 0 ..
//   count − 1, listening at its own endpoint (SybilAddress::kSelf) or at an address that leads
//   nowhere (kNowhere: tcp://192.0.2.1:<1024 + k>, RFC 5737's documentation range, never
//   routed). Rationale: the two ways a sybil can fill a table without running a process per
//   identity; since a gossiped peer is sampled only once it answers a Hello as itself
//   (node/logic/membership.h), what they can take is the receiver's candidate list, which its
//   per-source cap bounds.

#include <string>
#include <vector>

#include "protocol/messages.h"
#include "topology/sampler.h"

namespace meshlearn::node {

// Where a sybil's made-up identities listen (see the specification).
enum class SybilAddress { kSelf, kNowhere };

// The row a score_lie attacker `self` gossips instead of `honest`, promoting `allies` (see the
// specification).
topology::ScoreRow LyingScoreRow(const topology::ScoreRow& honest,
                                 const std::vector<std::string>& allies, const std::string& self);

// The `count` made-up identities sybil `self`, listening at `own_endpoint`, announces (see the
// specification).
std::vector<PeerInfo> SybilIdentities(const std::string& self, const std::string& own_endpoint,
                                      int count, SybilAddress address);

}  // namespace meshlearn::node
