#pragma once
// The node state machine: the round of DESIGN.md "The node's round", membership and serving,
// with no I/O. Events (decoded messages, replies, compute results, time) go in; actions
// (requests, replies, compute jobs, finished rounds) come out. It owns no thread, no socket and
// no clock, so its tests need neither sleeps nor ports.
//
// Specification.
// - Round 0 trains locally from the shared initial model (StartCompute with no peers).
//   Round t >= 1: sample m peers from p_i among samplable peers (topology/peer_table.h) ->
//   GetModel{min_round = t-1, wait = sync} to each, deadline now + round_deadline -> when every
//   request has an answer or failed -> StartCompute(peers that answered) -> OnComputeDone:
//   sampler update (scores, two-hop, softmax), publish snapshot t, RoundCompleted.
//   Rationale: file 004 Algorithm 1; a round never waits past its deadline because the
//   transport fails every request at its deadline and OnTick() also closes an overdue fetch.
// - A round starts only when no Hello is outstanding (bounded by the Hello deadline).
//   Rationale: with sync = true and a fixed seed two runs must sample the same peers; the set
//   of known peers at each round start must therefore not depend on reply timing.
// - Serving: GetModel is answered from the latest published snapshot. With wait = true and a
//   snapshot older than min_round the request is held until a new snapshot satisfies it or until
//   round_deadline, then answered Error(timeout). An early-stopped or finished node answers at
//   once with what it has.
//   Rationale: serving never waits for training; a stopped node's model never changes again.
// - Clustering policies (fetch_updates): the node's GetModel asks for the peer's last local
//   update too (with_update), and the peer's Model carries it when its snapshot has one (a
//   RoundOutcome's published_update); the learner receives it in PeerModel::update. A node
//   attaches its update only when asked.
//   Rationale: the update doubles a Model's size; ordinary runs neither need nor pay for it.
// - A peer joins the sampler once it answered our Hello (HelloAck) or sent us one, with the same
//   architecture id; a mismatch is refused on both sides with a clear log line.
// - With an allowlist (CURVE), a peer whose public key is not on it is never learned (from the
//   config, a checkpoint or gossip), greeted or admitted; a Hello carrying such a key is rejected
//   with Error(unknown_sender). The node's own key travels in its Hello and PeerList. A known
//   peer's key changes only when the peer proves a new one in a handshake, never by gossip, a
//   checkpoint (the config wins) or a HelloAck's claim.
//   Rationale: DESIGN.md "Reliability and security"; the transport could not reach such a peer
//   anyway, and listing it would only spread it by gossip and cost a deadline per round.
// - Membership gossip: at every round start the node sends its PeerList to one random active
//   peer, which answers with its own; unknown peers are greeted with Hello.
// - Bad peer input: an inbound message that failed to decode is answered with Error (its code
//   and text), counted, and logged at most once per peer per minute.
// - A round lasts at least `min_round` (pacing): the next one starts when it has passed.
//   Rationale: on a LAN a tiny model would otherwise gossip as fast as the network allows.
// - After the last round the node keeps serving for `linger` and then emits Finished; while its
//   EMD exchange is still in flight (its own requests and jobs, sessions it witnesses, and
//   decisions still owed by peers it measured) it waits up to 4 round deadlines longer.
//   Rationale: peers that are a little behind still fetch from it, and a one-shot exchange
//   that started late must not be cut off. A peer measures us after we measured it, and its
//   decision reaches us only while we run; leaving early left one-sided edges (ARI 0.80).
// - EMD witness mode: for each peer j the requester picks a random third peer w and a random
//   session; it sends j a WitnessEmbedRequest naming w and sends its own projected training rows
//   to w. j sends its projected validation rows to w. w checks each side comes from the node it
//   names, holds the first side until the second arrives (at most 4 round deadlines, at most 64
//   sessions), and answers both with the scalar EMD; j forwards it to i as its answer.
//   Rationale: DESIGN.md "EMD embedding exchange", emd_witness: the paper's server, which never
//   learns R, becomes a peer; the seed travels only between i and j.
// - FLT data signatures (signatures_enabled): at every round start the node asks each samplable
//   peer whose signature it lacks for it (GetSignature); a peer that answered with an Error or an
//   unusable signature is not asked again. Each signature received is kept, and its distance D
//   (similarity/centroid_signature.h) to our own and to every other kept signature is computed
//   once. With signature_metric the sampler gets s = -D at once (and the learner gets D as the
//   exchanged score of the peer's models); with signature_cluster_sampler the node reclusters
//   every known signature, its own included, by single linkage at signature_threshold (the
//   connected components of FLT's adjacency D < threshold) and samples within its own cluster.
//   Rationale: the node holds every peer's centroids, so it can build the whole matrix FLT's
//   server builds, from signatures alone; a signature never changes, so one request per peer
//   suffices.

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include <spdlog/logger.h>

#include "node/config.h"
#include "node/learner.h"
#include "protocol/messages.h"
#include "protocol/status.h"
#include "topology/comm_counters.h"
#include "topology/peer_table.h"
#include "topology/sampler.h"

namespace meshlearn::node {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

// Identifies an inbound request until it is answered (the runner maps it to a transport token).
using InboundId = uint64_t;

// Action: send `message` as a request to `peer` at `endpoint` (with CURVE, a server that must
// prove `public_key`); report the outcome to OnReply() with `request_id` by `deadline`.
struct SendRequest {
  std::string peer;
  std::string endpoint;
  std::string public_key;  // the peer's Z85 CURVE key; empty when unknown (plain text)
  uint64_t request_id = 0;
  Message message;
  TimePoint deadline;
};

// Action: answer inbound request `inbound` with `message`.
struct SendReply {
  InboundId inbound = 0;
  Message message;
};

// Action: run `job` on the learner (worker thread); report to OnComputeDone().
struct StartCompute {
  RoundJob job;
};

// One finished round, for rounds.csv, comm.csv, scores.csv and the checkpoint.
struct RoundRecord {
  int64_t round = 0;
  double wall_seconds = 0;  // since Start()
  RoundOutcome outcome;     // metrics and timings (published_weights and _update left empty)
  int sampled = 0;
  int answered = 0;
  bool stopped = false;
  std::vector<std::string> sampled_peers;  // the ids drawn this round, in draw order
};

// Where a responder sends its rows in witness mode (WitnessEmbedRequest).
struct WitnessTarget {
  PeerInfo witness;
  uint64_t session = 0;
};

// Peer side of an EMD exchange: embed our validation samples with the requester's model. With
// `witness` set the rows go to the witness, not back to the requester.
struct EmbedJob {
  InboundId inbound = 0;
  std::string requester;
  uint64_t request_id = 0;
  FloatArray weights;
  uint64_t projection_seed = 0;
  uint32_t max_samples = 0;
  std::optional<WitnessTarget> witness;
};

// Requester side: measure EMD against the peer's projected validation embeddings.
struct EmdJob {
  std::string peer;
  ProjectedEmbeddings peer_validation;
  uint64_t projection_seed = 0;
  uint32_t max_samples = 0;
};

// Requester side in witness mode: project our own training rows for the witness, measure ref_i.
struct OwnProjectionJob {
  std::string peer;  // j, the responder
  uint64_t projection_seed = 0;
  uint32_t max_samples = 0;
  WitnessTarget target;
};

// Witness side: W(train of the requester, validation of the responder) for one session.
struct WitnessEmdJob {
  uint64_t session = 0;
  std::string requester;
  std::string responder;
  ProjectedEmbeddings train;
  ProjectedEmbeddings validation;
};

// Action: run `job` on the learner (worker thread); report to OnEmbedDone().
struct StartEmbed {
  EmbedJob job;
};

// Action: run `job` on the learner (worker thread); report to OnEmdDone().
struct StartEmd {
  EmdJob job;
};

// Action: run `job` on the learner (worker thread); report to OnOwnProjectionDone().
struct StartOwnProjection {
  OwnProjectionJob job;
};

// Action: run `job` on the learner (worker thread); report to OnWitnessEmdDone().
struct StartWitnessEmd {
  WitnessEmdJob job;
};

// One node's view of a peer's FLT data signature (a row of signature.csv).
struct SignatureRow {
  std::string peer;
  double distance = 0;   // D(own signature, the peer's)
  bool related = false;  // distance < signature_threshold
};

// One node's view of its EMD exchange with a peer (a row of emd.csv).
struct EmdRow {
  std::string peer;
  std::optional<double> emd;          // EMD_ij
  std::optional<double> reference;    // ref_i
  std::optional<bool> accepted;       // our decision: EMD_ij - ref_i < epsilon
  std::optional<bool> peer_accepted;  // the peer's decision about us
  std::string witness;                // the peer that measured emd (witness mode), else empty
  // The edge holds when both sides accept.
  bool mutual() const { return accepted.value_or(false) && peer_accepted.value_or(false); }
};

// Action: round `record.round` is complete: write outputs and checkpoint.
struct RoundCompleted {
  RoundRecord record;
};

// Action: every round is done and the linger time has passed; the node may exit.
struct Finished {};

using Action = std::variant<SendRequest, SendReply, StartCompute, StartEmbed, StartEmd,
                            StartOwnProjection, StartWitnessEmd, RoundCompleted, Finished>;

// What the state machine needs to know about its node.
struct StateMachineConfig {
  std::string id;
  std::string listen_endpoint;
  std::string architecture_id;
  std::string metric;
  ParamLayout layout;
  uint64_t train_size = 0;
  int peers_per_round = 5;
  bool sync = true;
  // Ask sampled peers for their last local update with their model (clustering policies).
  bool fetch_updates = false;
  Clock::duration round_deadline = std::chrono::seconds(10);
  int64_t rounds = 50;
  Clock::duration linger = std::chrono::seconds(5);
  Clock::duration min_round = Clock::duration::zero();  // a round lasts at least this long
  int dead_after_failures = 3;
  uint64_t seed = 1;   // sampling randomness (mixed with the node id)
  uint64_t nonce = 0;  // sent in Hello
  std::vector<PeerAddress> initial_peers;
  // CURVE: this node's Z85 public key (sent in Hello and PeerList) and the allowlist of peer
  // keys. Without an allowlist (plain text) every peer is accepted and keys are only relayed.
  std::string public_key;
  std::optional<std::set<std::string>> allowed_keys;
  // The EMD exchange (DESIGN.md "EMD embedding exchange"); off unless emd_enabled.
  bool emd_enabled = false;
  double emd_epsilon = 0.1;
  uint32_t emd_max_samples = 512;
  int64_t emd_refresh = 0;           // 0: once after round 0; R: also every R rounds
  int emd_peers_per_round = 0;       // 0: every active peer at once
  bool emd_cluster_sampler = false;  // feed mutual decisions (+1 / -1) to the sampler
  bool emd_metric = false;           // feed -max(0, EMD - ref) to the sampler
  bool emd_witness = false;          // a random third peer measures EMD_ij (witness mode)
  // FLT's data signatures (DESIGN.md "Other seed methods", FLT); off unless signatures_enabled.
  bool signatures_enabled = false;
  ProjectedEmbeddings own_signature;       // served to GetSignature; k rows of centroids
  double signature_threshold = 1.0;        // peers closer than this are related
  bool signature_metric = false;           // feed s = -D to the sampler
  bool signature_cluster_sampler = false;  // sample within the single-linkage cluster
};

// The part of the state machine a checkpoint keeps.
struct MachineState {
  int64_t round = 0;  // last completed round
  topology::SamplerState sampler;
  std::vector<topology::CommRow> comm;
  std::vector<PeerAddress> peers;
  std::string rng_state;
};

// Counters for /status and /metrics.
struct MachineCounters {
  uint64_t rejected_inbound = 0;       // inbound messages that failed to decode or were refused
  uint64_t rejected_replies = 0;       // replies that failed to decode
  uint64_t missed_deadlines = 0;       // sampled peers that did not answer in time
  uint64_t refused_peers = 0;          // Hello refusals (architecture mismatch)
  uint64_t held_requests_expired = 0;  // held GetModel requests answered Error(timeout)
  uint64_t merge_excluded = 0;         // peers left out by merge_min_score
  std::map<std::string, uint64_t> rejected_by_code;
};

// The round logic of one node (see the specification above). Not thread-safe.
class NodeStateMachine {
 public:
  // `sampler` decides whom to sample; `logger` receives the node's log lines.
  NodeStateMachine(StateMachineConfig config, std::unique_ptr<topology::PeerSampler> sampler,
                   std::shared_ptr<spdlog::logger> logger);

  // Restores a checkpointed state before Start(): the next round is state.round + 1 and the
  // published snapshot holds `weights`. kInvalidArgument when the state does not fit.
  Status Resume(const MachineState& state, FloatArray weights, bool stopped);

  // Starts the node at `now`: greets the configured peers and starts round 0 (or the round
  // after the resumed one).
  std::vector<Action> Start(TimePoint now);
  // A decoded inbound request `inbound` from the transport.
  std::vector<Action> OnInbound(InboundId inbound, const Message& message, TimePoint now);
  // An inbound request that failed to decode with `why`. `sender` and `request_id` come from its
  // envelope when that much decoded (else "" and 0), so the Error reply reaches the requester.
  std::vector<Action> OnInboundRejected(InboundId inbound, const std::string& sender,
                                        uint64_t request_id, const Status& why, TimePoint now);
  // The outcome of request `request_id`: the decoded reply, or why there is none.
  std::vector<Action> OnReply(uint64_t request_id, const Result<Message>& reply, TimePoint now);
  // The learner finished a StartCompute job.
  std::vector<Action> OnComputeDone(const Result<RoundOutcome>& outcome, TimePoint now);
  // The learner finished an EmbedJob (peer side of the EMD exchange).
  std::vector<Action> OnEmbedDone(const EmbedJob& job, const Result<ProjectedEmbeddings>& result,
                                  TimePoint now);
  // The learner finished an EmdJob (requester side).
  std::vector<Action> OnEmdDone(const EmdJob& job, const Result<EmdMeasure>& result, TimePoint now);
  // The learner finished an OwnProjectionJob (requester side, witness mode).
  std::vector<Action> OnOwnProjectionDone(const OwnProjectionJob& job,
                                          const Result<OwnProjection>& result, TimePoint now);
  // The learner finished a WitnessEmdJob (witness side): both sides get the result.
  std::vector<Action> OnWitnessEmdDone(const WitnessEmdJob& job, const Result<double>& result,
                                       TimePoint now);
  // The EMD exchange's rows, ordered by peer id (emd.csv).
  std::vector<EmdRow> EmdRows() const;
  // Changes whenever EmdRows() does (starts at 0).
  uint64_t emd_revision() const { return emd_revision_; }
  // The signatures received so far, as distances to ours, ordered by peer id (signature.csv).
  std::vector<SignatureRow> SignatureRows() const;
  // Changes whenever SignatureRows() does (starts at 0).
  uint64_t signature_revision() const { return signature_revision_; }
  // Time passed: expires held requests, retries Hellos, closes overdue fetches, ends lingering.
  std::vector<Action> OnTick(TimePoint now);

  // The state a checkpoint keeps (valid after a RoundCompleted action).
  MachineState ExportState() const;
  // The last completed round (-1 before round 0 completes).
  int64_t completed_round() const { return completed_round_; }
  // True after Finished was emitted.
  bool finished() const { return phase_ == Phase::kFinished; }
  // The sampler (scores, probabilities).
  const topology::PeerSampler& sampler() const { return *sampler_; }
  // The peer table (endpoints, liveness).
  const topology::PeerTable& peers() const { return peers_; }
  // Communication counters.
  const topology::CommCounters& comm() const { return comm_; }
  // Rejection and deadline counters.
  const MachineCounters& counters() const { return counters_; }

 private:
  enum class Phase {
    kIdle,
    kWaitingForPeers,
    kPacing,
    kFetching,
    kComputing,
    kLingering,
    kFinished
  };
  enum class RequestKind {
    kHello,
    kGetModel,
    kPeerList,
    kEmbed,
    kEmdDecision,
    kWitnessEmbed,           // requester -> responder (witness mode)
    kWitnessTrainRows,       // requester -> witness
    kWitnessValidationRows,  // responder -> witness
    kGetSignature,
  };

  struct Pending {
    RequestKind kind;
    std::string peer;  // whom the request went to; for witness rows: the pair's other node
    int64_t round = 0;
    uint64_t projection_seed = 0;  // kEmbed
    uint64_t session = 0;          // witness kinds
    InboundId inbound = 0;         // kWitnessValidationRows: the requester's request to answer
    uint64_t inbound_request_id = 0;
    double reference = 0;  // kWitnessTrainRows: ref_i
  };
  // One side of a witnessed measurement held by the witness until the other side arrives.
  struct WitnessHeld {
    InboundId inbound = 0;
    uint64_t request_id = 0;
    std::string sender;
    ProjectedEmbeddings rows;
  };
  struct WitnessSession {
    std::optional<WitnessHeld> train;
    std::optional<WitnessHeld> validation;
    TimePoint deadline;
    bool computing = false;
  };
  // (session, requester, responder)
  using WitnessKey = std::tuple<uint64_t, std::string, std::string>;
  struct Fetch {
    int64_t round = 0;
    std::vector<topology::SampledPeer> sampled;
    std::vector<PeerModel> answered;
    std::map<std::string, topology::ScoreRow> rows;
    int outstanding = 0;
    TimePoint deadline;
  };
  struct Held {
    InboundId inbound = 0;
    std::string sender;
    uint64_t request_id = 0;
    int64_t min_round = 0;
    TimePoint deadline;
    bool with_update = false;  // GetModel.with_update
  };
  struct Snapshot {
    int64_t round = -1;
    FloatArray weights;
    bool early_stopped = false;
    std::vector<PeerScore> score_row;
    std::optional<FloatArray> update;  // the local update that produced `weights`, if any
  };

  void BeginRound(int64_t round, TimePoint now, std::vector<Action>& out, bool may_wait = true);
  bool HelloOutstanding() const;
  bool EmdInFlight() const;
  void MaybeBeginPendingRound(TimePoint now, std::vector<Action>& out);
  void FinishFetch(std::vector<Action>& out);
  void SendHello(const std::string& peer, TimePoint now, std::vector<Action>& out);
  void Learn(const std::vector<PeerInfo>& peers, TimePoint now);
  bool KeyAllowed(const std::string& public_key) const;
  bool LearnPeer(const std::string& id, const std::string& endpoint, const std::string& public_key);
  SendRequest RequestTo(const topology::PeerEntry& peer, uint64_t request_id, Body body,
                        TimePoint deadline) const;
  void Admit(const std::string& peer, const Hello& hello, const std::string& public_key);
  void Publish(int64_t round, FloatArray weights, bool stopped,
               std::optional<FloatArray> update = std::nullopt);
  void AnswerHeld(TimePoint now, bool expire_all, std::vector<Action>& out);
  void Reject(InboundId inbound, const std::string& sender, uint64_t request_id, const Status& why,
              TimePoint now, std::vector<Action>& out);
  std::vector<PeerInfo> KnownPeers() const;
  Message Reply(uint64_t request_id, Body body) const;
  // The Model reply to a GetModel{min_round, wait, with_update}: in sync mode the oldest kept
  // snapshot of round >= min_round (so a fast peer returns exactly the round asked for and runs
  // stay deterministic), otherwise the latest; with the snapshot's update when asked for.
  Message ModelMessage(uint64_t request_id, int64_t min_round, bool wait, bool with_update) const;
  const Snapshot& Latest() const { return history_.back(); }
  bool HavePublished() const { return !history_.empty(); }
  uint64_t NextRequestId() { return ++last_request_id_; }
  Hello OwnHello() const;
  void StartEmdExchange(TimePoint now);
  void SendEmdRequests(TimePoint now, std::vector<Action>& out);
  void ApplyEmdDecision(const std::string& peer);
  // Records i's measurement of `peer`, decides, and sends the decision to the peer.
  void CompleteMeasure(const std::string& peer, double emd, double reference,
                       const std::string& witness, TimePoint now, std::vector<Action>& out);
  // A WitnessRows request to `witness`, with the hold limit as deadline.
  SendRequest RequestToWitness(const PeerInfo& witness, uint64_t request_id, WitnessRows rows,
                               TimePoint now) const;
  // Witness mode: a random samplable peer other than `peer` that can take part, or nullptr.
  const topology::PeerEntry* PickWitness(const std::string& peer, TimePoint now);
  void OnWitnessRows(InboundId inbound, const Envelope& env, const WitnessRows& rows, TimePoint now,
                     std::vector<Action>& out);
  // Answers both held sides of `key` with `body` and forgets the session.
  void AnswerWitnessSession(const WitnessKey& key, const Body& body, std::vector<Action>& out);
  void ExpireWitnessSessions(TimePoint now, bool expire_all, std::vector<Action>& out);
  // FLT: asks every samplable peer whose signature we lack and have not given up on.
  void RequestSignatures(TimePoint now, std::vector<Action>& out);
  // FLT: keeps `peer`'s signature, measures it against every kept one, feeds the sampler.
  void OnSignature(const std::string& peer, const Result<Message>& reply, const Status& failure);
  // FLT: the single-linkage clusters of every kept signature and ours.
  void ReclusterSignatures();
  // D(a, b) between two kept signatures (the empty id is ours); NaN when not measured.
  double SignatureDistance(const std::string& a, const std::string& b) const;

  StateMachineConfig config_;
  std::unique_ptr<topology::PeerSampler> sampler_;
  std::shared_ptr<spdlog::logger> log_;
  topology::PeerTable peers_;
  topology::CommCounters comm_;
  MachineCounters counters_;
  std::mt19937_64 rng_;

  Phase phase_ = Phase::kIdle;
  TimePoint started_at_{};
  int64_t completed_round_ = -1;
  std::optional<int64_t> pending_round_;  // round waiting for outstanding Hellos
  TimePoint pending_round_deadline_{};
  TimePoint linger_until_{};
  TimePoint round_started_at_{};  // when the current round began (for min_round pacing)
  TimePoint next_round_at_{};     // kPacing: when the next round may begin
  Fetch fetch_;
  std::deque<Snapshot> history_;  // the last kSnapshotHistory published snapshots, oldest first
  std::map<uint64_t, Pending> pending_;
  std::vector<Held> held_;
  std::map<std::string, TimePoint> next_hello_at_;
  std::map<std::string, int> hello_attempts_;
  std::map<std::string, TimePoint> last_rejection_log_;
  uint64_t last_request_id_ = 0;
  std::map<std::string, uint64_t> nonces_;  // peers' Hello nonces (projection seeds)
  std::map<std::string, EmdRow> emd_;       // the EMD exchange, by peer
  std::vector<std::string> emd_queue_;      // peers still to exchange with
  int emd_jobs_running_ = 0;                // EMD learner jobs not yet done
  uint64_t emd_revision_ = 0;
  std::mt19937_64 witness_rng_;  // witness choice and session ids (not sampling)
  std::map<WitnessKey, WitnessSession> witness_sessions_;  // as a witness, by key
  // FLT: D between our signature and each peer's and, for the clustering, the peers' signatures
  // and D between every two of them (keyed by the ordered id pair; ours is ""), the peers not to
  // ask again, and the clustering not yet written to a round record.
  std::map<std::string, ProjectedEmbeddings> signatures_;
  std::map<std::pair<std::string, std::string>, double> signature_distances_;
  std::set<std::string> signature_refused_;
  std::optional<std::vector<std::pair<std::string, int>>> unrecorded_signature_partition_;
  uint64_t signature_revision_ = 0;
};

}  // namespace meshlearn::node
