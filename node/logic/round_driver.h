#pragma once
// The round driver: the node's round of DESIGN.md "The node's round", one part of the node state
// machine (node/logic/state_machine.h). No I/O: replies, compute results and time in, actions out.
//
// Specification.
// - Round 0 trains locally from the shared initial model (StartCompute with no peers).
//   Round t >= 1: sample m peers from p_i among samplable peers (topology/peer_table.h) ->
//   GetModel{min_round = t-1, wait = sync} to each, deadline now + round_deadline -> when every
//   request has an answer or failed -> StartCompute(peers that answered) -> OnComputeDone:
//   sampler update (scores, two-hop, softmax), publish snapshot t, RoundCompleted.
//   Rationale: file 004 Algorithm 1; a round never waits past its deadline because the
//   transport fails every request at its deadline and OnTick() also closes an overdue fetch.
// - A round starts only when no first Hello is outstanding (bounded by round_deadline).
//   Rationale: with sync = true and a fixed seed two runs must sample the same peers; the set
//   of known peers at each round start must therefore not depend on reply timing.
// - The first round this driver fetches in (round 1, or the one after a resumed checkpoint)
//   also waits while the mesh is incomplete (Membership::MeshIncomplete), at most
//   max(6 round deadlines, 60 s); it then starts with the peers it has and logs how many.
//   Rationale: engine-started nodes know only rank 0 at start and learn the rest by gossip,
//   while the engine may start the last rank seconds after the first.
// - At every round start, before sampling, the exchanges run their round-start step
//   (RoundHooks::OnRoundStart) and membership gossips; gossip and sampling draw from the one
//   sampling generator, in that order.
// - A peer that misses the deadline or answers without a model is logged, counted, skipped this
//   round and kept; after dead_after_failures failures in a row it is dead for a while
//   (topology/peer_table.h). A peer that answers Error(unavailable), i.e. it has no model yet
//   (an asynchronous request before its round 0 ends, node/logic/model_server.h), is skipped this
//   round and logged, but neither counted as a missed deadline nor as a failure.
//   Rationale: it answered at once; a slow node is not a dead one.
// - Scores: the learner scores each model it receives; for metrics scored by an exchange (emd,
//   centroid) it gets the score the exchange measured (RoundHooks::ExchangedScore) with the model
//   and never computes it again.
// - Compressed models: a GetModel to a peer that announced kCompressedModelVersion, from a node
//   that announces it too, accepts every codec of ModelCodecs() (protocol/codec.h); the peer may
//   answer in its configured codec, and the learner receives the decoded floats. Other peers get
//   the GetModel of version 2 and answer float32.
//   Rationale: each node chooses how it sends ([node.compression]); every node decodes what it
//   can, and a version-2 peer never sees a field it does not know.
//   Top-k: with RoundConfig::peer_estimates > 0 the node also accepts topk and says which estimate
//   of the peer's model it holds (GetModel.estimate); a top-k reply's chain is applied to that
//   estimate (PeerEstimates). The learner receives x̂_j + γ (x_i − x̂_i) when the node sends
//   top-k itself (γ = RoundConfig::consensus_step, x_i its latest snapshot, x̂_i its own public
//   estimate), else x̂_j; metrics and merge alike see that model. A chain that cannot be applied
//   skips the peer for the round (logged and counted as a missed model), and its next reply
//   carries the estimate whole.
//   Rationale: an estimate lags its model by what top-k has not sent yet; merging x̂_j as is
//   pulls the node back by the peer's lag, and the correction cancels equal lags (with γ = 1 the
//   merge is CHOCO-gossip's consensus step x_i + Σ c_j (x̂_j − x̂_i)). With γ = 1 the node's
//   own lag stays in its model undamped, and label-swap diverged (mean validation loss 834 at
//   round 49); γ = 0.5 is stable there (docs/experiments.md, "Compressed gossip").
// - Clustering policies (fetch_updates): GetModel asks for the peer's last local update too, and
//   the learner receives it in PeerModel::update; when the learner's policy clusters, the
//   sampler samples within the node's cluster from then on.
// - A round lasts at least `min_round` (pacing): the next one starts when it has passed.
//   Rationale: on a LAN a tiny model would otherwise gossip as fast as the network allows.
// - A failed computation (e.g. a NaN loss) keeps the last snapshot, records the round as stopped
//   and stops learning; the node serves no model from then on (ModelServer::Halt: every GetModel
//   is answered Error(unavailable) naming the failure). A round that lost only a part
//   (RoundOutcome::round_errors: a merge left out, an attack plug-in that failed) goes on, with
//   one error line per part; a peer that could not be scored, one warning line.
// - A resting node (its last snapshot is early-stopped: patience ran out, or its privacy budget)
//   with RestingRule::kSilent (the default) samples and fetches nothing: its rounds go on with no
//   peers, its sampler is not updated, and it keeps serving its best model and its last score row.
//   With RestingRule::kFetch it still samples and fetches m models a round to score them.
//   Rationale: a resting node neither merges nor trains, so the models it would fetch only move
//   its scores, which nothing it does reads any more; they cost m model transfers a round
//   (most of top-k's late-run bytes). file 004's code does the same (a stopped client does not
//   sample); kFetch keeps this project's earlier procedure comparable (issue 45).
// - Sequential exchange schedule (RoundConfig::take_turns; the simulator's [network] schedule =
//   "sequential", sim/exchange_turns.h): in round t >= 1, after the round-start step and gossip,
//   the node emits AwaitTurn{t} and waits. On its turn (OnTurn) it samples and fetches as above,
//   but asks for the peer's latest snapshot (GetModel{min_round = t-1, wait = false}); the
//   learner job returns the merged model too (RoundJob::return_merged). When the job is done the
//   sampler is updated (scores, two-hop, softmax) and the node publishes a provisional snapshot
//   of round t: its merged model (no merge: the weights it served) with its updated score row,
//   and emits TurnOver{t}. At the round's end (OnRoundEnd) it publishes its trained snapshot t
//   and completes the round as above. A resting node emits AwaitTurn{t, exchanges = false} and,
//   at the round's end, runs its resting round. Round 0 takes no turn.
//   Rationale: file 004's code (run_experiment.py, utils/training_utils.py) lets the clients
//   exchange one after another, in place: a client whose turn comes later reads the merged
//   model and updated scores of those before it, and the models of those after it as trained in
//   the previous round; all clients train after every client exchanged. Every peer that takes
//   part has published round >= t-1 before round t's turns begin, so its latest snapshot is the
//   model the authors' client would read; a peer that lags (restarted from an older checkpoint)
//   serves what it has, at once.
// - Every snapshot carries the sampler's witness row (PeerSampler::WitnessRow), or, for a
//   score_lie attacker (RoundConfig::score_lie_allies), the lying row of
//   node/logic/sampler_attacks.h.
// - After the last round the node keeps serving for `linger` and then emits Finished; while an
//   exchange is in flight (RoundHooks::ExchangesInFlight) it waits up to `exchange_linger` longer.
//   Rationale: peers that are a little behind still fetch from it, and a one-shot exchange that
//   started late must not be cut off.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "node/logic/actions.h"
#include "node/logic/membership.h"
#include "node/logic/model_server.h"
#include "node/logic/requests.h"
#include "topology/comm_counters.h"
#include "topology/sampler.h"

namespace meshlearn::node {

// What a resting (early-stopped) node does in its remaining rounds (see the specification).
enum class RestingRule { kSilent, kFetch };

// What the round driver needs to know about its node.
struct RoundConfig {
  int peers_per_round = 5;  // m
  bool sync = true;
  RestingRule resting = RestingRule::kSilent;
  // Ask sampled peers for their last local update with their model (clustering policies).
  bool fetch_updates = false;
  Clock::duration round_deadline = std::chrono::seconds(10);
  int64_t rounds = 50;
  Clock::duration linger = std::chrono::seconds(5);
  // After `linger`, a finished node waits at most this much longer for an exchange in flight.
  Clock::duration exchange_linger = std::chrono::seconds(40);
  Clock::duration min_round = Clock::duration::zero();  // a round lasts at least this long
  // Top-k replies: the shared initial model, where every peer's first estimate lineage starts,
  // and the most peers whose estimates are kept (PeerEstimates, node/logic/public_estimates.h).
  // With 0 (or no initial model) the node does not accept topk.
  FloatArray shared_initial;
  size_t peer_estimates = 0;
  // γ in [0, 1]: how much of its own estimate's lag a top-k node adds to every peer estimate it
  // receives (CorrectedEstimate); 0, or a node that does not send top-k, adds nothing.
  double consensus_step = 0;
  // The sequential exchange schedule (see the specification): the node waits for its turn in
  // every round t >= 1 and for the round's end before publishing its trained model.
  bool take_turns = false;
  // [attack] kind = "score_lie": the allies the score row of every snapshot promotes in place of
  // the sampler's witness row (node/logic/sampler_attacks.h); nullopt: the honest row.
  std::optional<std::vector<std::string>> score_lie_allies;
};

// What the round driver asks of the node's exchanges (the state machine's router implements it).
class RoundHooks {
 public:
  virtual ~RoundHooks() = default;
  // Round `round` begins at `now`: the exchanges start or continue their requests.
  virtual void OnRoundStart(int64_t round, TimePoint now, Actions& out) = 0;
  // The score s_ij an exchange measured for `peer`, for metrics scored by an exchange; nullopt
  // for other metrics or a peer not measured yet.
  virtual std::optional<double> ExchangedScore(const std::string& peer) const = 0;
  // Adds to the record of a finished round what the exchanges have to record with it.
  virtual void Annotate(RoundRecord& record) = 0;
  // True while an exchange is still in flight (a finished node lingers for it).
  virtual bool ExchangesInFlight() const = 0;
  // The node finishes at `now`: the exchanges answer what they still hold.
  virtual void OnFinish(TimePoint now, Actions& out) = 0;
};

// Counters of the rounds, for /status and /metrics.
struct RoundCounters {
  uint64_t missed_deadlines = 0;  // sampled peers that did not answer in time
  uint64_t merge_excluded = 0;    // peers left out by merge_min_score
};

// The node's rounds (see the specification). Not thread-safe.
class RoundDriver {
 public:
  // The driver of the node of `node`, sampling among `membership`'s peers (drawing from a
  // generator seeded with `sampling_seed`), publishing through `server` and telling the
  // exchanges through `hooks`.
  RoundDriver(RoundConfig config, uint64_t sampling_seed, NodeServices node, Membership& membership,
              ModelServer& server, RoundHooks& hooks);

  // Restores a checkpoint before Start(): round `round` was the last completed one, `wall_seconds`
  // its wall_s, and the node serves `weights` (`stopped`: early-stopped). The sampler must be
  // restored first. kInvalidArgument when the counters or the generator state do not parse.
  // Rationale for `wall_seconds`: wall_s goes on from the checkpointed round's, so that it stays
  // monotonic across a restart (the time the node was down does not count).
  // `estimates`: the top-k estimates of the checkpoint (ExportEstimates()); a peer estimate of
  // the wrong size is refused with kLayoutMismatch. `halted`: why the node's learning halted
  // (MachineState::halted), empty when it did not: a halted node resumes serving no model.
  Status Restore(int64_t round, double wall_seconds, const std::vector<topology::CommRow>& comm,
                 const std::string& rng_state, FloatArray weights, bool stopped,
                 const EstimatesState& estimates, const std::string& halted = "");
  // The top-k estimates, the node's own and its peers', for a checkpoint.
  EstimatesState ExportEstimates() const;
  // Why the node's learning halted (ModelServer::halted); nullopt while it learns.
  const std::optional<std::string>& halted() const { return server_.halted(); }
  // Starts at `now`: round 0, the round after the restored one, or lingering.
  void Start(TimePoint now, Actions& out);
  // Rounds from `round` on never begin: the driver waits after round - 1 (still serving) until
  // it is taken apart. Rationale: the simulator's snapshot barrier (sim/simulation.h) holds every
  // node there, then restarts all of them from their checkpoints.
  void HoldBefore(int64_t round) { hold_before_ = round; }
  // The outcome of one of our GetModel requests; `failure` is why there is no usable reply.
  void OnReply(uint64_t request_id, const Result<Message>& reply, const Status& failure,
               TimePoint now, Actions& out);
  // The learner finished the round's StartCompute job.
  void OnComputeDone(const Result<RoundOutcome>& outcome, TimePoint now, Actions& out);
  // take_turns: the node's turn of the round it awaits (AwaitTurn) has come. A node not waiting
  // for a turn ends it at once (TurnOver), so that no turn is ever held by a node that cannot use
  // it.
  void OnTurn(TimePoint now, Actions& out);
  // take_turns: the round the node took its turn in (or rested in) has ended for every node:
  // it publishes its trained snapshot and completes the round.
  void OnRoundEnd(TimePoint now, Actions& out);
  // A first Hello was answered: the round waiting for it may begin.
  void MaybeBeginPendingRound(TimePoint now, Actions& out);
  // Time passed: begins due rounds, closes an overdue fetch, ends lingering.
  void OnTick(TimePoint now, Actions& out);

  // The last completed round (-1 before round 0 completes).
  int64_t completed_round() const { return completed_round_; }
  // The wall_s of the last completed round (0 before round 0 completes).
  double completed_wall_seconds() const { return completed_wall_seconds_; }
  // True after the last round: the node's model never changes again.
  bool done() const { return phase_ == Phase::kLingering || phase_ == Phase::kFinished; }
  // True after Finished was emitted.
  bool finished() const { return phase_ == Phase::kFinished; }
  // Communication counters.
  const topology::CommCounters& comm() const { return comm_; }
  // Deadline and merge counters.
  const RoundCounters& counters() const { return counters_; }
  // The sampling generator's state, for a checkpoint.
  std::string RngState() const;

 private:
  enum class Phase {
    kIdle,
    kWaitingForPeers,
    kPacing,
    kFetching,
    kComputing,
    kAwaitingTurn,      // take_turns: AwaitTurn emitted
    kAwaitingRoundEnd,  // take_turns: TurnOver emitted, or resting
    kLingering,
    kFinished
  };
  struct Fetch {
    int64_t round = 0;
    bool resting = false;  // a silent resting round: nothing sampled, no sampler update
    std::vector<topology::SampledPeer> sampled;
    std::vector<PeerModel> answered;
    std::map<std::string, topology::ScoreRow> rows;
    std::map<uint64_t, std::string> requests;  // GetModel requests in flight, by request id
    TimePoint deadline;
  };

  void BeginRound(int64_t round, TimePoint now, Actions& out, bool may_wait = true);
  // True while a round should wait for peers (see the specification).
  bool MustWaitForPeers() const;
  // Samples m peers and asks each for its model (the fetch of round fetch_.round).
  void SampleAndFetch(TimePoint now, Actions& out);
  void FinishFetch(Actions& out);
  // Takes a round's scores into the sampler (skipped in round 0 and resting rounds) and its
  // cluster into the sampler when the policy clustered.
  void UpdateSampler(const RoundOutcome& outcome);
  // Publishes the outcome of round fetch_.round, records and completes it, and goes on.
  void CompleteRound(const Result<RoundOutcome>& result, TimePoint now, Actions& out);
  void Publish(int64_t round, FloatArray weights, bool stopped,
               std::optional<FloatArray> update = std::nullopt);
  // Takes `peer`'s reply into this round's fetch; an error when its weights cannot be used (a
  // top-k chain that does not apply).
  Status AcceptModel(const std::string& peer, const Model& model);
  // A top-k peer's rebuilt estimate x̂_j as the learner receives it: x̂_j + γ (x_i − x̂_i), or
  // x̂_j as it is when γ is 0 or this node does not send top-k.
  FloatArray CorrectedEstimate(FloatArray peer_estimate) const;
  // The snapshot of round `round` serving `weights`, with the sampler's current score row.
  Snapshot SnapshotOf(int64_t round, FloatArray weights, bool stopped,
                      std::optional<FloatArray> update) const;

  RoundConfig config_;
  NodeServices node_;
  Membership& membership_;
  ModelServer& server_;
  RoundHooks& hooks_;
  topology::Rng rng_;
  topology::CommCounters comm_;
  RoundCounters counters_;

  Phase phase_ = Phase::kIdle;
  TimePoint started_at_{};
  Clock::duration resumed_wall_{};  // wall_s of the restored round; Start() counts on from it
  int64_t completed_round_ = -1;
  double completed_wall_seconds_ = 0;
  std::optional<int64_t> pending_round_;  // round waiting for outstanding Hellos
  TimePoint pending_round_deadline_{};
  bool mesh_wait_done_ = false;  // the first fetching round waited for the mesh
  TimePoint linger_until_{};
  TimePoint round_started_at_{};        // when the current round began (for min_round pacing)
  TimePoint next_round_at_{};           // kPacing: when the next round may begin
  std::optional<int64_t> hold_before_;  // HoldBefore()
  Fetch fetch_;
  std::optional<Result<RoundOutcome>> turn_outcome_;  // take_turns: until the round's end
  std::optional<PeerEstimates> estimates_;            // accepting topk
};

}  // namespace meshlearn::node
