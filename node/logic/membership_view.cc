// The bounded view of membership (node/logic/membership.h, "Bounded view"): its members as
// topology/peer_view.h sees them, the shuffle and its lists, and whom a newcomer replaces.
#include "node/logic/membership.h"
#include "protocol/limits.h"

namespace meshlearn::node {

std::vector<topology::ViewMember> Membership::ViewMembers(TimePoint now) const {
  std::vector<topology::ViewMember> members;
  for (const topology::PeerEntry& p : peers_.Entries()) {
    if (!p.active) continue;
    const topology::Liveness liveness = peers_.LivenessOf(p.id, now);
    members.push_back({.peer = p.id,
                       .age = p.view_age,
                       .source = p.source,
                       .rank = node_.sampler.RankOf(p.id),
                       .samplable = peers_.IsSamplable(p.id, now),
                       .left = liveness == topology::Liveness::kLeft,
                       .dead = liveness == topology::Liveness::kDead});
  }
  return members;
}

std::optional<std::string> Membership::ViewEvictee(const std::string& peer, std::string_view source,
                                                   TimePoint now) const {
  return topology::Evictee(ViewMembers(now), peer, node_.sampler.NewcomerRank(peer), source,
                           ViewShare(), topology::ViewHashKey(config_.view_seed));
}

std::optional<std::string> Membership::WantedWitness(TimePoint now) const {
  const std::vector<topology::ViewMember> members = ViewMembers(now);
  for (const topology::OutsideEstimate& wanted : node_.sampler.outside_estimates()) {
    if (peers_.Find(wanted.peer) || !peers_.IsSamplable(wanted.witness, now)) continue;
    const topology::RowRank rank = topology::RankOfScore(wanted.score);
    if (topology::Evictee(members, wanted.peer, rank, wanted.witness, ViewShare(),
                          topology::ViewHashKey(config_.view_seed))) {
      return wanted.witness;
    }
  }
  return std::nullopt;
}

void Membership::Shuffle(TimePoint now, Actions& out) {
  peers_.AgeView();
  std::optional<std::string> target = WantedWitness(now);
  const std::vector<topology::ViewMember> members = ViewMembers(now);
  if (!target) target = topology::ShuffleTarget(members);
  if (!target) return;
  peers_.ResetViewAge(*target);
  PeerList list =
      ViewList(topology::RandomMembers(members, *target, config_.shuffle_length - 1,
                                       topology::ViewDrawKey(config_.view_seed, view_draws_++)));
  SendRequest request = node_.requests.Open(Part::kMembership, *peers_.Find(*target),
                                            std::move(list), now + config_.hello_deadline);
  peer_lists_.insert(request.request_id);
  out.push_back(std::move(request));
}

PeerList Membership::ViewList(const std::vector<std::string>& members) const {
  PeerList list;
  list.peers.push_back({node_.requests.self(), config_.listen_endpoint, config_.public_key});
  for (const std::string& id : members) {
    const topology::PeerEntry* p = peers_.Find(id);
    if (p) list.peers.push_back({p->id, p->endpoint, p->public_key});
  }
  for (const PeerInfo& sybil : config_.sybils) {
    if (list.peers.size() == Limits{}.max_peers) break;
    list.peers.push_back(sybil);
  }
  return list;
}

}  // namespace meshlearn::node
