#pragma once
// Model serving: the snapshots a node publishes and the GetModel requests it answers from them
// (DESIGN.md "The node's round"), one part of the node state machine (node/logic/state_machine.h).
// No I/O: messages and time in, actions out.
//
// Specification.
// - A published snapshot is immutable: model weights, round, train-set size, the node's score
//   row, the early-stopped flag and, with a clustering policy, the local update that produced
//   the weights. The newest snapshots are kept: at least kMinSnapshotHistory of them, and more
//   while all kept snapshots' floats (weights and updates) fit in ServingConfig::history_bytes.
//   Rationale: in sync mode a peer that lags (a slow start, a loaded host) asks for an older
//   round, and only a kept snapshot of that round keeps the run deterministic; small models can
//   afford every round, large ones the last few.
// - GetModel is answered from the snapshots: in sync mode (wait = true) with the oldest kept
//   snapshot of round >= min_round, so that a fast peer returns exactly the round asked for and
//   runs stay deterministic; otherwise with the latest. With with_update the reply carries the
//   snapshot's update when it has one.
//   Rationale: serving never waits for training; the update doubles a Model's size, so ordinary
//   runs neither need nor pay for it.
// - A snapshot's Model body is encoded at its first request, once for each encoding asked for
//   (with or without the update), and every reply of that snapshot carries the same encoded
//   frames (SendReply::encoded_body), sent zero-copy; only the envelope is encoded per reply. A
//   snapshot's encodings go with it when it leaves the history. They share the snapshot's floats,
//   so they add only their body frames to what the history holds. The Model itself is built only
//   to make a missing encoding: a reply's message holds its envelope and an empty Model that only
//   names the body's type, and its body is the encoding (read it with FramesOf).
//   Rationale: every sampler of this node asks for the same snapshot in a round; serving it then
//   costs moving its bytes, not copying the layout and the score row into a Model. An encoding
//   that costs more than a copy (a compressed model) is paid once per snapshot too: the codec is
//   part of the encoding's key.
// - A GetModel whose accepts lists the node's codec (ServingConfig::compression, fp16 or int8)
//   is answered in that codec (Model.encoding); any other GetModel (a version-2 requester's, or
//   one that does not list the codec) gets the float32 model, the bytes it got before version 3.
//   A compressed encoding adds its blobs (a half or a quarter of the floats) to the history's
//   memory, outside history_bytes.
//   Rationale: PROTOCOL.md, "Compressed models": compression is negotiated per request.
// - With codec topk the node keeps a public estimate of its model (EstimateOwner,
//   node/logic/public_estimates.h): every published snapshot becomes a top-k update of it. A
//   GetModel that accepts topk and says which estimate it holds (GetModel.estimate) gets the
//   chain from that estimate to the chosen snapshot's round (Model.chain); any other gets the
//   float32 model. A resumed node starts a new lineage at the snapshot it resumes with
//   (PublishResumed) unless its checkpoint kept the estimate. Chain replies are encoded once per
//   snapshot and starting round.
// - A halted node (its learning failed, Halt()) answers every GetModel, held ones included, with
//   Error(unavailable) naming the failure, and serves no snapshot again; it still keeps the ones
//   published (a checkpoint and the node's rest read them).
//   Rationale (issue 61): its last model is the one whose next merge and training failed. Under
//   `scaling` such weights grew until the losses overflowed while still finite (robustness.md,
//   result set (c)), and nothing the node can check tells them from good ones; so it serves none,
//   and its peers, finding it unavailable, sample others and in time mark it dead. An
//   early-stopped node is healthy and serves its best model as before.
// - With wait = false and no snapshot yet (round 0 is still running), the request is answered at
//   once with Error(unavailable, kNoModelYet).
//   Rationale: an asynchronous requester takes whatever the node has; holding its request to the
//   deadline cost it the whole deadline (5 s a time against a ×10 straggler in
//   results/stragglers/) and counted a failure against a node that is merely slow.
// - With wait = true and no snapshot of round >= min_round, the request is held until one is
//   published or until its deadline (round_deadline after arrival), then answered
//   Error(timeout). A node that is early-stopped or done (lingering, finished) answers at once
//   with what it has: its model never changes again.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "base/float_array.h"
#include "base/param_layout.h"
#include "node/logic/actions.h"
#include "node/logic/public_estimates.h"
#include "node/logic/requests.h"
#include "protocol/codec.h"

namespace meshlearn::node {

// What serving needs to know about its node.
struct ServingConfig {
  ParamLayout layout;       // the layout every served model carries
  uint64_t train_size = 0;  // n_i, sent with the model (FedAvg weights)
  Clock::duration hold_limit = std::chrono::seconds(10);  // how long a GetModel may be held
  size_t history_bytes = size_t{16} << 20;  // the kept snapshots' budget (see the specification)
  // How the model travels to requesters that accept it: codec none, fp16, int8 or topk (and the
  // codec's parameters).
  CompressionSettings compression = {};
  // topk: the shared initial model, where the public estimate's first lineage starts.
  FloatArray shared_initial = {};
};

// The text of the Error(unavailable) that answers an asynchronous GetModel before the node has a
// model (see the specification); the requester recognises the code, not the text.
inline constexpr const char* kNoModelYet = "no model yet: round 0 is still running";

// The fewest snapshots kept, whatever their size.
inline constexpr size_t kMinSnapshotHistory = 4;

// One published snapshot (see the specification).
struct Snapshot {
  int64_t round = -1;
  FloatArray weights;
  bool early_stopped = false;
  std::vector<PeerScore> score_row;
  std::optional<FloatArray> update;  // the local update that produced `weights`, if any
};

// The node's published snapshots and the GetModel requests held for them. Not thread-safe.
class ModelServer {
 public:
  // Serving for the node of `requests`.
  ModelServer(ServingConfig config, RequestBook& requests);

  // Publishes `snapshot` (the newest); the oldest beyond the kept history is dropped.
  void Publish(Snapshot snapshot);
  // Publishes the snapshot a resumed node serves first. With topk, the public estimate goes on
  // from `estimate` (the checkpointed ExportEstimate()) when that ends at this snapshot's round;
  // otherwise a new lineage starts at the snapshot.
  void PublishResumed(Snapshot snapshot, const std::optional<EstimateOwnerState>& estimate);
  // The public estimate's state for a checkpoint; nullopt unless the codec is topk.
  std::optional<EstimateOwnerState> ExportEstimate() const;
  // The public estimate x̂ of the latest snapshot; empty unless the codec is topk.
  std::span<const float> PublicEstimateValues() const {
    return estimate_ ? estimate_->values() : std::span<const float>();
  }
  // A GetModel from `env.sender`: answered now, or held (see the specification). `done`: the
  // node has finished its rounds, so its model never changes again.
  void OnGetModel(InboundId inbound, const Envelope& env, const GetModel& get, TimePoint now,
                  bool done, Actions& out);
  // Answers the held requests a snapshot now satisfies and expires those past their deadline
  // (all of them with `expire_all`).
  void AnswerHeld(TimePoint now, bool expire_all, bool done, Actions& out);

  // The node's learning halted because of `reason`: answers the held requests and every later
  // GetModel with Error(unavailable, `reason`) (see the specification).
  void Halt(std::string reason, Actions& out);
  // Why the node halted; nullopt while it serves.
  const std::optional<std::string>& halted() const { return halted_; }
  // True once a snapshot was published.
  bool HavePublished() const { return !history_.empty(); }
  // The newest snapshot; requires HavePublished().
  const Snapshot& Latest() const { return history_.back().snapshot; }
  // The weights of the round-0 snapshot while it is kept, else of the oldest kept one; empty
  // before any.
  FloatArray RoundZeroWeights() const;
  // Held requests answered Error(timeout).
  uint64_t held_requests_expired() const { return held_requests_expired_; }
  // Top-k replies that carried the estimate whole (the requester held nothing usable of it).
  uint64_t whole_estimates_sent() const { return whole_estimates_sent_; }

 private:
  struct Held {
    InboundId inbound = 0;
    uint64_t request_id = 0;
    int64_t min_round = 0;
    TimePoint deadline;
    bool with_update = false;
    CompressionCodec codec = CompressionCodec::kNone;  // the codec its reply travels in
    HeldEstimate estimate;  // topk: what the requester holds of our estimate
  };

  // Which encoding of a snapshot's Model body a reply needs.
  struct EncodingKey {
    bool with_update = false;
    CompressionCodec codec = CompressionCodec::kNone;
    // topk: the round the chain starts from; kFromBase when it carries the base whole.
    int64_t chain_from = 0;
    auto operator<=>(const EncodingKey&) const = default;
  };
  static constexpr int64_t kFromBase = INT64_MIN;
  // A published snapshot and the encodings of its Model body made so far.
  struct Kept {
    Snapshot snapshot;
    std::map<EncodingKey, std::shared_ptr<const EncodedBody>> encodings;
  };

  SendReply ModelReply(InboundId inbound, uint64_t request_id, int64_t min_round, bool wait,
                       bool with_update, CompressionCodec codec, const HeldEstimate& estimate);
  // The Model body of snapshot `s` in encoding `key`, carrying `chain` (topk).
  Model SnapshotModel(const Snapshot& s, const EncodingKey& key,
                      std::optional<EstimateChain> chain) const;
  // The codec a reply to `get` travels in: ours when it accepts it, else none.
  CompressionCodec CodecFor(const GetModel& get) const;
  bool Satisfies(int64_t min_round, bool done) const;
  // Adds `snapshot` as the newest kept one and drops the oldest beyond the kept history.
  void Keep(Snapshot snapshot);

  ServingConfig config_;
  RequestBook& requests_;
  std::deque<Kept> history_;  // oldest first
  size_t history_bytes_ = 0;  // the floats of history_'s weights and updates, in bytes
  std::vector<Held> held_;
  std::optional<EstimateOwner> estimate_;  // topk only
  uint64_t held_requests_expired_ = 0;
  uint64_t whole_estimates_sent_ = 0;
  std::optional<std::string> halted_;  // why the node serves no model any more
};

}  // namespace meshlearn::node
