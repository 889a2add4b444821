#pragma once
// The peer table: every peer a node knows, where it listens, and whether it is worth asking.
//
// Specification.
// - A peer is learned from the config, a checkpoint, gossip or its own Hello (Learn) and starts as
//   a candidate: it is not sampled (and not gossiped, node/logic/membership.h) until it answered
//   our own Hello with a compatible architecture (MarkActive); from then on it is verified.
//   Rationale: a peer whose model layout differs would only produce rejected messages, and an id
//   that never answered at the endpoint it claims may not exist at all.
// - A verified peer keeps its endpoint: Learn changes only a candidate's; MarkActive at another
//   endpoint moves a verified one (the node verified the new endpoint first).
// - A verified peer that said Goodbye has left (MarkLeft): it is not sampled until it is verified
//   again (MarkActive), e.g. when it greets us after a restart.
// - Each failed request (timeout, error reply, undecodable reply) counts one consecutive failure;
//   any success resets the count. At `dead_after_failures` consecutive failures the peer is
//   dead until now + backoff, where backoff = base_backoff * 2^(times it died before), capped at
//   max_backoff.
//   Rationale: a crashed peer must stop costing every round a deadline (DESIGN.md "Reliability"),
//   yet a restarted one must be found again without operator action.
// - A dead peer whose backoff has passed is live again "on probation": it can be sampled; one more
//   failure makes it dead again with twice the backoff, one success revives it fully.
// - Time is passed in; the table owns no clock and no thread.
// - For a bounded view (topology/peer_view.h) each entry also carries the source that told the
//   node of it (SetSource; empty for the config, a checkpoint or the peer's own Hello) and its
//   view age (AgeView, ResetViewAge); the table only keeps them.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <vector>

namespace meshlearn::topology {

using Clock = std::chrono::steady_clock;

// What the node knows about one peer.
struct PeerEntry {
  std::string id;
  std::string endpoint;
  std::string public_key;  // Z85 CURVE key, empty when unknown
  bool active = false;     // verified: answered our Hello (else a candidate)
  bool pinned = false;     // from the node's config: never forgotten for failing to answer
  bool left = false;       // said Goodbye; not sampled until verified again
  int consecutive_failures = 0;
  int times_died = 0;              // doubles the backoff each time
  Clock::time_point dead_until{};  // meaningful while consecutive_failures >= threshold
  uint64_t failures_total = 0;
  uint64_t successes_total = 0;
  std::string source;  // the peer whose PeerList told us of it; empty: none
  int view_age = 0;    // a verified peer's shuffles since it joined or was last shuffled with
};

// The liveness state of a peer, for /status and logs.
enum class Liveness { kCandidate, kAlive, kDead, kProbation, kLeft };

// Returns "candidate", "alive", "dead", "probation" or "left".
const char* LivenessName(Liveness liveness);

// Every peer a node knows (see the specification above).
class PeerTable {
 public:
  // A table for node `self`: `dead_after_failures` >= 1 consecutive failures make a peer dead for
  // `base_backoff`, doubling per death up to `max_backoff`.
  PeerTable(std::string self, int dead_after_failures, Clock::duration base_backoff,
            Clock::duration max_backoff);

  // Records that `id` listens at `endpoint` (with `public_key`, possibly empty) as a candidate, and
  // `pinned` when it comes from the node's config. Returns true when the peer is new. An existing
  // peer keeps its state (and a verified one its endpoint; a candidate takes the new endpoint);
  // `pinned` is only ever added. Learning self or an empty id is ignored and returns false.
  bool Learn(const std::string& id, const std::string& endpoint, const std::string& public_key,
             bool pinned = false);
  // Marks `id` as verified (it becomes samplable, and has not left). No-op if unknown.
  void MarkActive(std::string_view id);
  // Marks verified peer `id` as verified at `endpoint` with `public_key` (it moved there).
  void MoveVerified(std::string_view id, const std::string& endpoint,
                    const std::string& public_key);
  // Marks `id` as having left (Goodbye): not samplable until MarkActive. No-op if unknown.
  void MarkLeft(std::string_view id);
  // Forgets `id` (e.g. refused at Hello). No-op if unknown.
  void Forget(std::string_view id);
  // Records that `source` told us of `id`. No-op if unknown.
  void SetSource(std::string_view id, std::string source);
  // Adds one to the view age of every verified peer.
  void AgeView();
  // Sets the view age of `id` to 0. No-op if unknown.
  void ResetViewAge(std::string_view id);
  // Records a successful request to `id`; revives a dead peer. No-op if unknown.
  void RecordSuccess(std::string_view id);
  // Records a failed request to `id` at `now`. Returns true when this failure made it dead.
  bool RecordFailure(std::string_view id, Clock::time_point now);

  // The liveness of `id` at `now` (kCandidate for an unknown peer).
  Liveness LivenessOf(std::string_view id, Clock::time_point now) const;
  // True when `id` is active and alive or on probation at `now`: the sampler may draw it.
  bool IsSamplable(std::string_view id, Clock::time_point now) const;
  // The entry of `id`, or nullptr when unknown.
  const PeerEntry* Find(std::string_view id) const;
  // Every entry, ordered by id: a view into the table, valid until the table next changes (copy
  // what must outlive a change).
  auto Entries() const { return std::views::values(peers_); }
  // The number of known peers, candidates included.
  size_t size() const { return peers_.size(); }
  // The number of verified peers.
  size_t verified() const { return verified_; }
  // A verified peer that may make room for a new one at `now`: one that left, else one that is
  // dead (the first by id); nullopt when every verified peer is alive or on probation.
  std::optional<std::string> Replaceable(Clock::time_point now) const;

 private:
  std::string self_;
  int dead_after_failures_;
  Clock::duration base_backoff_;
  Clock::duration max_backoff_;
  std::map<std::string, PeerEntry, std::less<>> peers_;
  size_t verified_ = 0;  // entries with `active`
};

}  // namespace meshlearn::topology
