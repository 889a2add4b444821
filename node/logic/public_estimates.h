#pragma once
// Public estimates for top-k gossip (issue 31; PROTOCOL.md "Top-k update chains"): the owner's
// side, which turns each published snapshot into a top-k update of its public estimate x̂ and
// answers a requester with the chain of updates since the estimate it holds, and the requester's
// side, which keeps an estimate per peer and rebuilds the peer's x̂ from a chain. No I/O, no torch.
//
// Specification.
// - A lineage starts at a value every requester can know: the shared initial model before round 0
//   (start_round -1), or, after a resume from a checkpoint of round R, the model served at R
//   (start_round R; requesters get it whole). Publishing round r (rounds increase) encodes
//   Q(x − x̂) with the node's top-k settings, applies it to x̂ (PublicEstimate) and keeps the blob
//   with the checksum of the new x̂. A publish that cannot be encoded (a non-finite model) or
//   whose round does not increase starts a new lineage at it.
//   Rationale: CHOCO-gossip (Koloskova et al. 2019): what top-k leaves out stays in x − x̂ and is
//   sent later (error feedback), and every requester that applies the same blobs holds the same
//   x̂ bit for bit, so one chain serves every requester that is at the same round.
// - Kept updates: the newest, while their bytes total at most one float32 copy of the model, and
//   always those after `keep_from` (the oldest round a reply may still target). Older ones are
//   folded into the base, the estimate just before the oldest kept update.
//   Rationale: a longer chain costs a requester more than the estimate whole.
// - The chain to round t for a requester holding (s, h): when s is the lineage and h is the base's
//   round or a kept update's, with h <= t, the updates of the rounds in (h, t]; otherwise the base
//   whole and the updates of the rounds in (base round, t]. With the checksum of x̂ at t.
// - Owner memory: x̂ and the base, each with a scratch copy (four float vectors of the model's
//   size), and the kept updates (one float32 model's bytes, or more while the snapshots need them).
// - The requester keeps, for at most `capacity` peers (the least recently used is dropped), the
//   estimate of the peer's model and what it holds of it (HeldEstimate). A peer without one is
//   held as the shared initial model, (-1, -1). Applying a chain: the base replaces the copy, then
//   the updates are added in order, and the result must match the chain's checksum. Any failure
//   drops the peer's copy, so that the next request gets the base, and returns the error: the
//   merge never sees a half-applied or mismatched estimate.
//   Requester memory: two float vectors of the model's size per kept peer.

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <string>
#include <vector>

#include "base/float_array.h"
#include "base/status.h"
#include "protocol/compression.h"
#include "protocol/messages.h"

namespace meshlearn::node {

// The owner's side (see the specification). Not thread-safe.
class EstimateOwner {
 public:
  // A lineage starting at `shared_initial` before round 0; updates are encoded with `settings`
  // (codec kTopK).
  EstimateOwner(CompressionSettings settings, std::vector<float> shared_initial);

  // Starts a new lineage at `round` from `model` (the model served after a resume).
  void Restart(int64_t round, std::span<const float> model);
  // Publishes round `round`'s model (see the specification); updates of rounds >= keep_from are
  // never folded.
  void Publish(int64_t round, std::span<const float> model, int64_t keep_from);
  // The chain to published round `to_round` for a requester holding `held`; kNotFound when
  // `to_round` is neither the base's round nor a kept update's.
  Result<EstimateChain> ChainTo(int64_t to_round, const HeldEstimate& held) const;

  // The lineage's start round.
  int64_t start_round() const { return start_round_; }
  // The base's round: the lineage's start or the round of the last folded update.
  int64_t base_round() const { return base_round_; }
  // The number of kept updates.
  size_t kept_updates() const { return updates_.size(); }

 private:
  struct Kept {
    int64_t round = 0;
    std::vector<uint8_t> blob;
    uint32_t checksum = 0;  // of x̂ after this update
  };

  CompressionSettings settings_;
  int64_t start_round_ = -1;
  int64_t base_round_ = -1;
  PublicEstimate base_;      // x̂ at base_round_
  uint32_t base_checksum_;   // of base_
  PublicEstimate estimate_;  // x̂ after the newest update
  std::deque<Kept> updates_;
  size_t update_bytes_ = 0;
};

// The requester's side (see the specification). Not thread-safe.
class PeerEstimates {
 public:
  // Estimates of peers whose lineages start at `shared_initial`, kept for at most `capacity`
  // peers.
  PeerEstimates(FloatArray shared_initial, size_t capacity);

  // What this node holds of `peer`'s estimate: (-1, -1), the shared initial model, when nothing.
  HeldEstimate Held(const std::string& peer) const;
  // Rebuilds `peer`'s estimate from `chain` and returns it. Errors (the peer's copy is dropped):
  // kInvalidArgument when the chain starts from an estimate this node does not hold, the errors
  // of PublicEstimate::Apply for a bad update, and kMalformed when the result does not match the
  // checksum.
  Result<FloatArray> Apply(const std::string& peer, const EstimateChain& chain);
  // The number of peers whose estimates are kept.
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    HeldEstimate held;
    PublicEstimate estimate;
    std::list<std::string>::iterator recency;
  };

  FloatArray shared_initial_;
  size_t capacity_;
  std::map<std::string, Entry> entries_;
  std::list<std::string> recency_;  // most recently used first
};

}  // namespace meshlearn::node
