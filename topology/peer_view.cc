#include "topology/peer_view.h"

#include <algorithm>

#include "base/stable_hash.h"

namespace meshlearn::topology {
namespace {

// A member for eviction: its rank, then its key hash (a larger one is lower), then its id.
struct EvictionKey {
  RowRank rank;
  uint64_t hash;
  std::string_view peer;
  // True when this is lower than `other` for eviction.
  bool Below(const EvictionKey& other) const {
    if (rank < other.rank) return true;
    if (other.rank < rank) return false;
    if (hash != other.hash) return hash > other.hash;
    return peer > other.peer;
  }
};

}  // namespace

uint64_t ViewDrawKey(uint64_t seed, uint64_t draw) { return Mix64(Mix64(seed) ^ draw); }

uint64_t ViewHashKey(uint64_t seed) { return Mix64(Mix64(seed) ^ 0xa5a5a5a5a5a5a5a5ull); }

uint64_t MemberHash(std::string_view peer, uint64_t key) { return Mix64(StableHash(peer) ^ key); }

std::optional<std::string> ShuffleTarget(std::span<const ViewMember> view) {
  const ViewMember* oldest = nullptr;
  for (const ViewMember& m : view) {
    if (!m.samplable) continue;
    if (!oldest || m.age > oldest->age || (m.age == oldest->age && m.peer < oldest->peer)) {
      oldest = &m;
    }
  }
  if (!oldest) return std::nullopt;
  return std::string(oldest->peer);
}

std::vector<std::string> RandomMembers(std::span<const ViewMember> view, std::string_view exclude,
                                       size_t count, uint64_t key) {
  std::vector<std::pair<uint64_t, std::string_view>> keyed;
  for (const ViewMember& m : view) {
    if (m.samplable && m.peer != exclude) keyed.emplace_back(MemberHash(m.peer, key), m.peer);
  }
  const size_t n = std::min(count, keyed.size());
  std::partial_sort(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(n), keyed.end());
  std::vector<std::string> out;
  for (size_t k = 0; k < n; ++k) out.emplace_back(keyed[k].second);
  return out;
}

std::vector<std::string> ShuffleAnswer(std::span<const ViewMember> view, std::string_view exclude,
                                       size_t count, uint64_t key) {
  std::vector<const ViewMember*> ranked;
  for (const ViewMember& m : view) {
    if (m.samplable && m.peer != exclude) ranked.push_back(&m);
  }
  std::sort(ranked.begin(), ranked.end(), [](const ViewMember* a, const ViewMember* b) {
    if (b->rank < a->rank) return true;
    if (a->rank < b->rank) return false;
    return a->peer < b->peer;
  });
  const size_t best = std::min((count + 1) / 2, ranked.size());
  std::vector<std::string> out;
  std::vector<ViewMember> rest;
  for (size_t k = 0; k < ranked.size(); ++k) {
    if (k < best) {
      out.emplace_back(ranked[k]->peer);
    } else {
      rest.push_back(*ranked[k]);
    }
  }
  for (std::string& peer : RandomMembers(rest, exclude, count - best, key)) {
    out.push_back(std::move(peer));
  }
  return out;
}

std::optional<std::string> Evictee(std::span<const ViewMember> view, std::string_view peer,
                                   const RowRank& rank, std::string_view source, size_t share,
                                   uint64_t key) {
  for (const bool left : {true, false}) {
    const ViewMember* gone = nullptr;
    for (const ViewMember& m : view) {
      if ((left ? m.left : m.dead) && (!gone || m.peer < gone->peer)) gone = &m;
    }
    if (gone) return std::string(gone->peer);
  }
  if (!source.empty()) {
    const size_t from_source = std::count_if(
        view.begin(), view.end(), [&](const ViewMember& m) { return m.source == source; });
    if (from_source >= share) return std::nullopt;
  }
  std::optional<EvictionKey> lowest;
  for (const ViewMember& m : view) {
    const EvictionKey k{m.rank, MemberHash(m.peer, key), m.peer};
    if (!lowest || k.Below(*lowest)) lowest = k;
  }
  if (!lowest || !lowest->Below({rank, MemberHash(peer, key), peer})) return std::nullopt;
  return std::string(lowest->peer);
}

}  // namespace meshlearn::topology
