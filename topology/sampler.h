#pragma once
// Peer samplers: whom node i asks for a model each round (DESIGN.md "DAC sampler", file 004
// Algorithm 1 lines 2-6).
//
// Specification.
// - A sampler keeps one record per known peer j: the score s_ij (absent = unscored), whether i
//   ever scored j itself ("sampled directly"), and the sampling probability p_ij. Node i itself is
//   never a peer: p_ii = 0.
//   Rationale: Algorithm 1 line 4 samples from p_i = [p_i1 .. p_i,K-1], the K-1 other nodes.
// - Records are kept in peer-id order, whatever the order peers joined in.
//   Rationale: gossip delivers peers in a timing-dependent order; sampling must depend only on the
//   set of peers, the seed and the scores (DESIGN.md "Determinism").
// - Peers join (AddPeer) and leave (RemovePeer) at any time. A joining peer is unscored and gets
//   the mass the sampler gives unscored peers (the DAC prior, or its floor); the probabilities of
//   all peers are recomputed at once, so they always sum to 1 (or are all 0 for a sampler that
//   never samples).
//   Rationale: the mesh is learned by gossip and nodes crash; a node never waits for a full view.
// - Sample(m) draws up to m distinct live peers, one after another, each with probability
//   proportional to p_ij among the live peers not drawn yet, and returns them with the p_ij they
//   had. Peers with p_ij = 0 and peers the liveness filter rejects are never drawn; when fewer
//   than m can be drawn, all of them are returned.
//   Rationale: sampling without replacement (Algorithm 1 line 4); a dead peer would only cost a
//   deadline. The returned p_ij are "the probabilities from before this round's update" that
//   FedSim weights by (DESIGN.md "Aggregation").
// - All randomness comes from the generator passed to Sample(); a uniform draw is built from its
//   raw 64-bit output, not from a std:: distribution.
//   Rationale: std::mt19937_64 is fully specified but the std:: distributions are not; the same
//   seed must give the same samples on every standard library (DESIGN.md "Determinism").
// - Update(round, observations) takes this round's scores s_ij of the sampled peers that answered,
//   each with the peer's own score row; it sets those scores and then lets the sampler recompute
//   its probabilities (DAC: two-hop and softmax). Invalid input (a non-finite score, self as a
//   peer, a peer twice) rejects the whole update and changes nothing. Observations of peers that
//   are no longer known are ignored.
//   Rationale: scores come from the network; a partial update would leave probabilities that
//   match no rule. A peer may leave between being sampled and the update.
// - Snapshot()/Restore() round-trip the whole state as plain data, for checkpoints (DESIGN.md
//   "Reliability"). Serialisation is the node's job.
// - A bounded row (SetCapacity(B), B >= 1; the bounded view of node/logic/membership.h): the
//   sampler holds at most B records, and AddPeer beyond B is refused (kTooMany). Each
//   record has a rank (RankOf): tier kPositive (a direct score or an estimate > 0, ordered by the
//   score) above tier kUnscored, above tier kNotAlike (a score <= 0). Whom a newcomer replaces
//   is decided by its rank against theirs (topology/peer_view.h, Evictee); membership removes
//   that peer before adding the newcomer.
//   Rationale: DAC draws in proportion to exp(τ s) over the positive scores, and gives every
//   other peer the floor 1e-6 (topology/dac_sampler.h), so beyond the best-scored peers an
//   entry matters only as a peer an estimate may yet score. An unscored peer may still be
//   vouched for; a peer scored <= 0 is known not to be alike, so it goes first.
// - Outside estimates (a bounded row that is full): Update() also runs the two-hop rule
//   (OutsideEstimates) for the peers that this round's rows name and that have no record, and
//   keeps the kMaxOutsideEstimates highest positive estimates (ties: the smaller id), each with
//   the witness whose row gave it, until the next update (an update of a row with room clears
//   them). NewcomerRank(peer) is such a peer's
//   estimate (else kUnscored), and AddPeer(peer) gives its record that estimate as its score
//   (not a direct one).
//   Rationale: a row names the witness's best peers, which a bounded view may not hold; an
//   estimate lets a peer of the node's own cluster take the place of a worse one, which is how
//   a bounded view keeps finding its cluster (the node greets it first, node/logic/
//   membership.h). Only the latest round's estimates are kept: they come from the newest rows,
//   and an old estimate of a peer never greeted would only hold memory. A row with room takes
//   every verified peer anyway, and then joins happen as in an unbounded row (unscored).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace meshlearn::topology {

// The random generator every sampler draws from; the caller seeds and owns it.
using Rng = std::mt19937_64;

// Returns true when a peer may be sampled now (not known dead). An empty function means every peer
// is live.
using PeerFilter = std::function<bool(std::string_view peer)>;

// One entry of a score row: s_jk as node j knows it.
struct ScoreEntry {
  std::string peer;
  double score = 0;
};

// A node's scores of the peers it has scored, ordered by peer id; carried in model replies so
// that the requester can run the two-hop rule.
using ScoreRow = std::vector<ScoreEntry>;

// What node i learnt from one sampled peer j that answered this round.
struct PeerObservation {
  // j's node id.
  std::string peer;
  // s_ij computed this round by i's metric (similarity/metric.h).
  double score = 0;
  // j's own score row (s_jk), from its reply; may be empty.
  ScoreRow row;
};

// The most outside estimates a bounded row keeps (see the specification).
// Rationale: membership greets a few peers per tick and shuffles once a round, so more than a
// shuffle's worth of wanted peers would wait for rounds while newer rows replace them.
inline constexpr size_t kMaxOutsideEstimates = 16;

// Where a peer stands in a bounded row (see the specification): tiers first, then the score
// within kPositive.
struct RowRank {
  enum Tier { kNotAlike = 0, kUnscored = 1, kPositive = 2 };
  Tier tier = kUnscored;
  double score = 0;  // kPositive and kNotAlike: the score; kUnscored: 0
  // True when this rank is below `other`'s.
  bool operator<(const RowRank& other) const {
    if (tier != other.tier) return tier < other.tier;
    return tier != kUnscored && score < other.score;
  }
};

// The rank a score gives (see the specification).
RowRank RankOfScore(const std::optional<double>& score);

// A two-hop estimate of a peer without a record (see the specification), with the witness whose
// row gave it.
struct OutsideEstimate {
  std::string peer;
  double score = 0;
  std::string witness;
};

// A peer drawn by Sample(), with its probability p_ij at the time of the draw.
struct SampledPeer {
  std::string peer;
  double probability = 0;
};

// The sampler's knowledge of one peer.
struct PeerRecord {
  std::string peer;
  // s_ij: a direct score or a two-hop estimate; empty when unscored.
  std::optional<double> score;
  // True once i has scored j itself; such a peer never takes a two-hop estimate again.
  bool sampled_directly = false;
  // p_ij.
  double probability = 0;
};

// The complete state of a sampler, for checkpoints.
struct SamplerState {
  // The sampler's Name(); Restore() refuses another sampler's state.
  std::string sampler;
  // The round of the last Update() (0 before any).
  int64_t round = 0;
  // One record per known peer, ordered by peer id.
  std::vector<PeerRecord> peers;
};

// A peer sampler. Concrete samplers (topology/dac_sampler.h, topology/baseline_samplers.h) differ
// only in how scores become probabilities; joins, leaves, draws and checkpoints are shared here.
class PeerSampler {
 public:
  // A sampler for node `self` with no known peers.
  explicit PeerSampler(std::string self);
  virtual ~PeerSampler() = default;
  PeerSampler(const PeerSampler&) = delete;
  PeerSampler& operator=(const PeerSampler&) = delete;

  // The config name of this sampler ("dac"; topology/sampler_factory.h).
  virtual std::string_view Name() const = 0;

  // Node i's own id.
  const std::string& self() const { return self_; }

  // Adds `peer` as unscored (with a bounded row: with its outside estimate, if it has one) and
  // recomputes the probabilities. Adding a known peer is a no-op. Returns kInvalidArgument for
  // an empty id or for self, and kTooMany when a bounded row is full.
  Status AddPeer(std::string_view peer);
  // Forgets `peer` (score, probability) and recomputes the probabilities. Returns kNotFound if the
  // peer is not known.
  Status RemovePeer(std::string_view peer);
  // True when `peer` is known.
  bool HasPeer(std::string_view peer) const;

  // Draws up to `m` distinct live peers without replacement from p_i (see the specification).
  std::vector<SampledPeer> Sample(size_t m, const PeerFilter& is_live, Rng& rng) const;

  // Applies this round's observations (see the specification). `round` is t >= 1 of the round
  // that produced them.
  Status Update(int64_t round, std::span<const PeerObservation> observations);

  // Restricts sampling to node i's cluster mates `mates` (nullopt: not clustered yet) and
  // recomputes the probabilities; returns true. A sampler that does not sample within clusters
  // ignores it and returns false.
  virtual bool SetCluster(std::optional<std::vector<std::string>> mates);

  // Bounds the row at `capacity` records (0: unbounded, the default; see the specification).
  // Records beyond it are kept (membership removes them); only AddPeer is refused.
  void SetCapacity(size_t capacity) { capacity_ = capacity; }
  // The bound of SetCapacity (0: unbounded).
  size_t capacity() const { return capacity_; }
  // The rank of `peer`'s record (kUnscored for an unknown peer).
  RowRank RankOf(std::string_view peer) const;
  // The rank `peer` would join with: its outside estimate's, else kUnscored.
  RowRank NewcomerRank(std::string_view peer) const;
  // The last update's outside estimates, highest first (ties: the smaller id); empty with an
  // unbounded row.
  const std::vector<OutsideEstimate>& outside_estimates() const { return outside_; }

  // Every known peer's record, ordered by peer id.
  const std::vector<PeerRecord>& Records() const { return records_; }
  // The record of `peer`, or nullptr when unknown.
  const PeerRecord* Find(std::string_view peer) const;
  // The scored peers' scores, ordered by peer id.
  ScoreRow Scores() const;
  // The row a reply carries for the requester's two-hop rule, ordered by peer id: Scores(), unless
  // the sampler passes on less (topology/dac_sampler.h, TwoHopRow).
  virtual ScoreRow WitnessRow() const { return Scores(); }

  // The complete state, as plain data.
  SamplerState Snapshot() const;
  // Replaces the state with `state`. Returns kInvalidArgument (and changes nothing) when the state
  // belongs to another sampler, names self, repeats or misorders peers, or holds non-finite scores
  // or probabilities outside [0, 1].
  Status Restore(const SamplerState& state);

 protected:
  // Recomputes every record's probability from the records and the last round. Called after
  // joins, leaves and updates; must keep the probabilities summing to 1 or all 0.
  virtual void Reweight(std::vector<PeerRecord>& records, int64_t round) const = 0;
  // Calls Reweight() now: for a sampler whose own state, which Reweight() reads, has changed.
  void RecomputeProbabilities() { Reweight(records_, round_); }
  // Called by Update() after the direct scores are set, before Reweight(). `observations` are
  // the valid observations of known peers, sorted by peer id. The default does nothing (baselines
  // keep the scores for the outputs but ignore them).
  virtual void AfterDirectScores(std::vector<PeerRecord>& records,
                                 std::span<const PeerObservation* const> observations) const;
  // Called by Update() of a bounded row after AfterDirectScores(): the two-hop estimates of the
  // peers that `observations` (valid, of known peers, sorted by peer id) name and that have no
  // record, by the sampler's own rule, in any order; the caller keeps the best. The default
  // gives none (baselines draw without scores).
  virtual std::vector<OutsideEstimate> OutsideEstimates(
      const std::vector<PeerRecord>& records,
      std::span<const PeerObservation* const> observations) const;

 private:
  size_t LowerBound(std::string_view peer) const;
  void KeepOutsideEstimates(std::vector<OutsideEstimate> estimates);

  std::string self_;
  int64_t round_ = 0;
  std::vector<PeerRecord> records_;
  size_t capacity_ = 0;
  std::vector<OutsideEstimate> outside_;
};

}  // namespace meshlearn::topology
