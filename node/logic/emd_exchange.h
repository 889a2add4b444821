#pragma once
// The EMD embedding exchange (DESIGN.md "EMD embedding exchange", after EMD-CFL without any
// server), one part of the node state machine (node/logic/state_machine.h): the requester's and the
// responder's roles, direct and in witness mode; the witness's role is node/logic/emd_witness.h.
// No I/O: messages, learner results and time in, actions out.
//
// Specification.
// - When: after round 0 the node queues every samplable peer that greeted it (its Hello nonce
//   gives the projection seed); with `refresh` = R also after every R-th round. At each round
//   start it sends up to `peers_per_round` (0: all) of the queued peers a request.
// - Direct mode: i sends j φ_i (the model after round 0) and the agreed seed (EmbedRequest); j
//   embeds and projects at most max_samples of its validation samples and returns the rows
//   (EmbedReply); i measures EMD_ij and ref_i on its worker (EmdJob).
// - Witness mode: for each peer j the requester picks a random third peer w and a random
//   session; it sends j a WitnessEmbedRequest naming w and sends its own projected training rows
//   to w. j sends its projected validation rows to w. w answers both with the scalar EMD
//   (node/logic/emd_witness.h); j forwards it to i as its answer.
//   Rationale: the paper's server, which never learns R, becomes a peer; the seed travels only
//   between i and j.
// - i accepts j when EMD_ij − ref_i < ε and sends j its decision (EmdDecision); the edge holds
//   when both accept. Every change of a row bumps revision() (emd.csv follows it).
//   - A fixed ε (`epsilon` set): i decides each peer as soon as it has measured it.
//   - Automatic rule (`epsilon` empty; similarity/emd_decision.h): i decides once the exchange
//     it started has measured or given up on every queued peer, over the ratios ρ_ij of its row
//     (step 1), and sends every peer it measured its decision with the ids it leans to accept
//     (EmdDecision.accepts), again whenever a decision changes. Whenever its own or a peer's
//     leanings change, it computes the edge of every pair whose two decisions it holds: the
//     columns' agreement (step 2), kept in EmdRow::agreed.
//     Rationale: the largest gap of a row needs the whole row; the columns need every peer's
//     leanings, which arrive with the peers' decisions; a node decides its row without waiting
//     for anyone, so no two nodes wait for each other.
// - A measurement that fails (timeout, an error from the peer or the witness, a failed job) is
//   retried with a fresh request (and in witness mode a freshly drawn witness), up to kEmdAttempts
//   attempts in all; then the peer is given up with a log line. A finished node lingers while the
//   exchange is in flight, at most LingerLimit() past its linger time, and logs the peers it leaves
//   unmeasured.
//   Rationale: under load one request can time out (a 16-node run once left pair (15, 0)
//   unmeasured, which broke the clusters of both).
// - Scores: with `metric` the exchange scores j as s_ij = −max(0, EMD_ij − ref_i) (the `emd`
//   metric) and sets it in the sampler at once; with `cluster_sampler` it sets +1 / −1 for a
//   mutual / one-sided edge once both decisions are known. ScoreOf() hands the same s_ij to the
//   rounds, which pass it to the learner with j's model; nothing computes it again.
//   Rationale: one route for exchanged scores, computed where the measurement is.
// - Compressed embeddings (PROTOCOL.md, "Compressed embeddings"): an EmbedRequest to a peer that
//   announced kCompressedEmbeddingVersion, from a node that announces it too, accepts every codec
//   of EmbeddingCodecs(); the responder answers in its own codec (`embeddings`) when the request
//   accepts it, else float32. In witness mode each side sends its rows in its own codec to a
//   witness whose Hello or HelloAck announced that version, float32 to any other (a responder
//   may not have heard the requester's witness greet yet). The requester and the witness
//   measure the decoded floats; ref_i is always measured on the node's own float32 rows.
//   Rationale: a node chooses how it sends, not what it receives (as for models); a version-2 peer
//   never sees a new field and gets float32 byte for byte.
// - A node without the exchange refuses EmbedRequest, WitnessEmbedRequest and WitnessRows with
//   Error(unavailable).
// - InFlight() is true while requests or jobs of the exchange are outstanding, peers are queued,
//   a measurement is witnessed, or a peer we measured still owes its decision.
//   Rationale: a peer measures us after we measured it, and its decision reaches us only while we
//   run; leaving early left one-sided edges (ARI 0.80).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "base/param_layout.h"
#include "node/logic/actions.h"
#include "node/logic/emd_witness.h"
#include "node/logic/membership.h"
#include "node/logic/model_server.h"
#include "node/logic/requests.h"
#include "topology/sampler.h"

namespace meshlearn::node {

// What the EMD exchange needs to know about its node ([emd] of the node config).
struct EmdExchangeConfig {
  bool enabled = false;
  std::optional<double> epsilon = 0.1;  // empty: automatic (see the specification)
  uint32_t max_samples = 512;
  int64_t refresh = 0;           // 0: once after round 0; R: also every R rounds
  int peers_per_round = 0;       // 0: every queued peer at once
  bool cluster_sampler = false;  // feed mutual decisions (+1 / -1) to the sampler
  bool metric = false;           // feed s_ij = -max(0, EMD - ref) to the sampler
  bool witness = false;          // a random third peer measures EMD_ij (witness mode)
  ParamLayout layout;            // the layout of φ_i
  uint64_t nonce = 0;            // this node's Hello nonce (half of every projection seed)
  Clock::duration round_deadline = std::chrono::seconds(10);
  // How this node's projected rows travel (EmbedReply, WitnessRows): codec none, fp16 or int8 (and
  // int8's block size); see the specification.
  CompressionSettings embeddings = {};
};

// One node's view of its EMD exchange with a peer (a row of emd.csv).
struct EmdRow {
  std::string peer;
  std::optional<double> emd;          // EMD_ij
  std::optional<double> reference;    // ref_i
  std::optional<bool> accepted;       // our decision
  std::optional<bool> peer_accepted;  // the peer's decision about us
  // Automatic rule: whether the pair's columns agree (similarity/emd_decision.h, step 2), once
  // both decisions are known.
  std::optional<bool> agreed;
  // What our decision compared against: the fixed ε (accepted iff EMD_ij − ref_i < ε), or the
  // automatic threshold t (accepted iff our ratio ρ_ij = EMD_ij / ref_i < t).
  std::optional<double> threshold;
  // When our measurement completed: the round then in progress, and the seconds since the
  // exchange started (the round start that queued the peer).
  std::optional<int64_t> measured_round;
  std::optional<double> measured_seconds;
  std::string witness;  // the peer that measured emd (witness mode), else empty
  // The edge: with a fixed ε both sides accept; with the automatic rule the columns agree.
  bool mutual() const {
    return agreed ? *agreed : accepted.value_or(false) && peer_accepted.value_or(false);
  }
};

// Attempts at measuring one peer, the first included (see the specification).
inline constexpr int kEmdAttempts = 3;

// The node's EMD exchange (see the specification). Not thread-safe.
class EmdExchange {
 public:
  // How long past its linger time a finished node waits for the exchange: every attempt of a
  // measurement, each up to its request's deadline.
  static Clock::duration LingerLimit(Clock::duration round_deadline);
  // The exchange of the node of `node` with `membership`'s peers; φ_i comes from `server`'s
  // round-0 snapshot, and scores go to the node's sampler.
  EmdExchange(EmdExchangeConfig config, NodeServices node, Membership& membership,
              const ModelServer& server);

  // Round `round` begins: queues the peers when the exchange is due, then sends requests.
  void OnRoundStart(int64_t round, TimePoint now, Actions& out);
  // Requests from peers (each refused when the exchange is off).
  void OnEmbedRequest(InboundId inbound, const Envelope& env, const EmbedRequest& request,
                      TimePoint now, Actions& out);
  void OnWitnessEmbedRequest(InboundId inbound, const Envelope& env,
                             const WitnessEmbedRequest& request, TimePoint now, Actions& out);
  void OnWitnessRows(InboundId inbound, const Envelope& env, const WitnessRows& rows, TimePoint now,
                     Actions& out);
  void OnDecision(InboundId inbound, const Envelope& env, const EmdDecision& decision,
                  Actions& out);
  // The outcome of one of our requests; `failure` is why there is no usable reply.
  void OnReply(uint64_t request_id, const Result<Message>& reply, const Status& failure,
               TimePoint now, Actions& out);
  // The learner finished a job of the exchange.
  void OnEmbedDone(const EmbedJob& job, const Result<ProjectedEmbeddings>& result, TimePoint now,
                   Actions& out);
  void OnEmdDone(const EmdJob& job, const Result<EmdMeasure>& result, TimePoint now, Actions& out);
  void OnOwnProjectionDone(const OwnProjectionJob& job, const Result<OwnProjection>& result,
                           TimePoint now, Actions& out);
  void OnWitnessEmdDone(const WitnessEmdJob& job, const Result<double>& result, Actions& out);
  // Expires witnessed measurements past their hold limit (all of them with `expire_all`).
  void OnTick(TimePoint now, bool expire_all, Actions& out);
  // The node finishes: logs the peers left unmeasured (given up), and expires every held request.
  void OnFinish(TimePoint now, Actions& out);

  // True while the exchange is in flight (see the specification).
  bool InFlight() const;
  // s_ij of `peer` when the exchange scores for the `emd` metric and has measured it.
  std::optional<double> ScoreOf(const std::string& peer) const;
  // The rows, ordered by peer id (emd.csv).
  std::vector<EmdRow> Rows() const;
  // Changes whenever Rows() does (starts at 0).
  uint64_t revision() const { return revision_; }

 private:
  enum class Kind {
    kEmbed,                  // requester -> responder (direct)
    kDecision,               // our decision -> the peer
    kWitnessEmbed,           // requester -> responder (witness mode)
    kWitnessTrainRows,       // requester -> witness
    kWitnessValidationRows,  // responder -> witness
  };
  // The context of one of our requests.
  struct Pending {
    Kind kind;
    std::string peer;              // whom it concerns: the responder, or for witness rows the
                                   // pair's other node
    uint64_t projection_seed = 0;  // kEmbed
    uint64_t session = 0;          // witness kinds
    InboundId inbound = 0;         // kWitnessValidationRows: the requester's request to answer
    uint64_t inbound_request_id = 0;
    double reference = 0;  // kWitnessTrainRows: ref_i
  };

  bool Refused(InboundId inbound, const Envelope& env, TimePoint now, Actions& out);
  void SendRequests(TimePoint now, Actions& out);
  // Sends the request that measures `peer` with φ_i = `phi`; false when the peer is unknown.
  bool RequestMeasure(const std::string& peer, const FloatArray& phi, TimePoint now, Actions& out);
  void Track(SendRequest request, Pending pending, Actions& out);
  // Records i's measurement of `peer`; with a fixed ε decides and sends the decision to the peer.
  void CompleteMeasure(const std::string& peer, double emd, double reference,
                       const std::string& witness, TimePoint now, Actions& out);
  // The measurement of `peer` ended without a value (`why`, with where it failed): logs it once,
  // and asks again or gives the peer up after kEmdAttempts attempts.
  void AbandonMeasure(const std::string& peer, const Status& why, TimePoint now, Actions& out);
  // Automatic rule: once nothing is queued or being measured, decides every measured peer and,
  // when a decision is new or changed, sends every measured peer its decision and our leanings.
  void DecideWhenMeasured(TimePoint now, Actions& out);
  // Fixed ε: sets our decision about `peer` and sends it when it is new or changed.
  void Decide(const std::string& peer, bool accepted, double threshold, TimePoint now,
              Actions& out);
  // Sets our decision about `peer` (`accepted`, compared against `threshold`); true when it is
  // new or changed (and then logged).
  bool SetDecision(const std::string& peer, bool accepted, double threshold);
  // Sends `peer` our decision about it, with our leanings `accepts` under the automatic rule.
  void SendDecision(const std::string& peer, std::optional<std::vector<std::string>> accepts,
                    TimePoint now, Actions& out);
  // Automatic rule: sets EmdRow::agreed of every pair whose two decisions are known, from the
  // leanings known so far, and hands the changed edges to the sampler.
  void Agree();
  // `id`'s number in the automatic rule's columns (ours is 0), given at first call.
  uint32_t ColumnNumber(const std::string& id);
  void ApplyDecision(const std::string& peer);
  // A WitnessRows request to `witness`, with the hold limit as deadline.
  SendRequest RequestToWitness(const PeerInfo& witness, WitnessRows rows, TimePoint now);
  // True when both this node and `peer` announce kCompressedEmbeddingVersion.
  bool SpeaksCompressedEmbeddings(const std::string& peer) const;
  // How our rows travel to `peer` in a WitnessRows: our embedding codec when it speaks compressed
  // embeddings, else float32.
  CompressionSettings RowsEncodingFor(const std::string& peer) const;
  // Witness mode: a random samplable peer other than `peer` that can take part, or nullptr.
  const topology::PeerEntry* PickWitness(const std::string& peer, TimePoint now);
  Clock::duration HoldLimit() const;
  // witness_rng_, seeded by our id and the nonce, made when first asked for.
  std::mt19937_64& WitnessRng();

  EmdExchangeConfig config_;
  NodeServices node_;
  Membership& membership_;
  const ModelServer& server_;
  EmdWitness witness_;
  // Witness choice and session ids (not sampling); made at its first use, on the heap. Rationale:
  // its 2.5 KB would be most of a node's fixed state when no exchange runs, as in simulations of
  // 100,000 nodes (an optional would hold them inline even while empty).
  std::unique_ptr<std::mt19937_64> witness_rng_;
  std::map<uint64_t, Pending> pending_;
  std::map<std::string, EmdRow> rows_;  // by peer
  // Automatic rule: each node's number in LeaningColumns (us 0, peers as first met), and, by
  // peer, the numbers of the nodes its decision leans to accept (only us and our peers).
  std::map<std::string, uint32_t> column_numbers_;
  std::map<std::string, std::vector<uint32_t>> peer_leanings_;
  std::map<std::string, double> scores_;  // s_ij of the `emd` metric, by peer
  std::vector<std::string> queue_;        // peers still to exchange with
  std::set<std::string> measuring_;       // peers whose measurement is under way
  std::map<std::string, int> attempts_;   // requests sent per peer since it was last queued
  TimePoint started_at_{};                // when the peers were last queued
  int jobs_running_ = 0;                  // learner jobs of the requester and responder roles
  uint64_t revision_ = 0;
};

}  // namespace meshlearn::node
