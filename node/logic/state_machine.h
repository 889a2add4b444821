#pragma once
// The node state machine: one node's logic with no I/O (DESIGN.md "The node's round"). Events
// (decoded messages, replies, learner results, time) go in; actions (node/logic/actions.h) come
// out. It owns no thread, no socket and no clock, so its tests need neither sleeps nor ports, and
// the same code runs on sockets (node/host/node.h) or under a simulator.
//
// It is a small router over parts that each own their state and have their own specification:
// - membership (node/logic/membership.h): Hello, PeerList gossip, liveness;
// - model serving (node/logic/model_server.h): snapshots and held GetModel requests;
// - the round driver (node/logic/round_driver.h): sample, fetch, compute, publish, linger;
// - the EMD exchange (node/logic/emd_exchange.h, emd_witness.h): direct and witness mode;
// - the signature exchange (node/logic/signature_exchange.h): FLT's data signatures.
// Request ids, the owner of each request, reply envelopes and refusals are the request book's
// (node/logic/requests.h), at the bottom, so that no part reaches back into the router.
//
// Router rules.
// - A reply goes to the part that sent its request; a reply nobody owns is dropped. A reply that
//   failed to decode (not a timeout or a disconnection) is counted.
// - An inbound request goes to the part that serves its type; Ping is answered with Pong; any
//   other type is refused with Error(invalid_argument), and one that failed to decode with its
//   own error (counted, logged at most once per peer per minute). With CURVE, a request whose
//   sender is not the node id bound to the key its connection proved is refused first
//   (Error(unknown_sender), node/logic/membership.h), whatever its type.
// - Exchanged scores (metrics emd and centroid) come from the exchange that measured them, which
//   also sets them in the sampler; the rounds pass them to the learner with the peer's model.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "node/logic/actions.h"
#include "node/logic/emd_exchange.h"
#include "node/logic/membership.h"
#include "node/logic/model_server.h"
#include "node/logic/peer_address.h"
#include "node/logic/requests.h"
#include "node/logic/round_driver.h"
#include "node/logic/signature_exchange.h"
#include "topology/comm_counters.h"
#include "topology/peer_table.h"
#include "topology/sampler.h"

namespace meshlearn::node {

// What the state machine needs to know about its node: one typed sub-config per part.
struct StateMachineConfig {
  std::string id;
  uint64_t seed = 1;  // sampling randomness (mixed with the node id)
  // The protocol version the node announces in its envelopes, kMinProtocolVersion to
  // kProtocolVersion; it uses no feature of a later version (protocol/version.h).
  // Rationale: interoperability tests run a node as an older one would talk ([round]
  // max_protocol_version), over the real code instead of a mock.
  uint16_t protocol_version = kProtocolVersion;
  MembershipConfig membership;
  ServingConfig serving;
  RoundConfig rounds;
  EmdExchangeConfig emd;
  SignatureConfig signatures;
};

// The part of the state machine a checkpoint keeps.
struct MachineState {
  int64_t round = 0;        // last completed round
  double wall_seconds = 0;  // its wall_s: the node's running time, summed over restarts
  topology::SamplerState sampler;
  std::vector<topology::CommRow> comm;
  std::vector<PeerAddress> peers;
  std::string rng_state;
  EstimatesState estimates;  // top-k: the node's public estimate and its copies of its peers'
  // Why the node's learning halted (ModelServer::Halt); empty while it learns. A resumed halted
  // node stays halted: it serves no model after a restart either.
  std::string halted;
};

// Counters for /status and /metrics.
struct MachineCounters {
  uint64_t rejected_inbound = 0;       // inbound messages that failed to decode or were refused
  uint64_t rejected_replies = 0;       // replies that failed to decode
  uint64_t missed_deadlines = 0;       // sampled peers that did not answer in time
  uint64_t refused_peers = 0;          // Hello refusals (architecture mismatch)
  uint64_t candidates_ignored = 0;     // candidates not kept: the list was full
  uint64_t peers_reached = 0;          // times a peer answered our Hello and was admitted
  uint64_t held_requests_expired = 0;  // held GetModel requests answered Error(timeout)
  uint64_t merge_excluded = 0;         // peers left out by merge_min_score
  uint64_t topk_whole_estimates = 0;   // top-k replies that carried the estimate whole
  std::map<std::string, uint64_t> rejected_by_code;
};

// One node's logic (see the header). Not thread-safe.
class NodeStateMachine : private RoundHooks {
 public:
  // `sampler` decides whom to sample; `logger` receives the node's log lines.
  NodeStateMachine(StateMachineConfig config, std::unique_ptr<topology::PeerSampler> sampler,
                   std::shared_ptr<spdlog::logger> logger);
  ~NodeStateMachine() override;
  NodeStateMachine(const NodeStateMachine&) = delete;
  NodeStateMachine& operator=(const NodeStateMachine&) = delete;

  // Restores a checkpointed state before Start(): the next round is state.round + 1 and the
  // published snapshot holds `weights`. kInvalidArgument when the state does not fit.
  Status Resume(const MachineState& state, FloatArray weights, bool stopped);

  // Starts the node at `now`: greets the configured peers and starts round 0 (or the round
  // after the resumed one).
  Actions Start(TimePoint now);
  // Rounds from `round` on never begin (RoundDriver::HoldBefore); call before Start().
  void HoldBefore(int64_t round) { driver_.HoldBefore(round); }
  // A decoded inbound request `inbound` from the transport; with CURVE, `proven_key` is the public
  // key its connection proved in the handshake (it replaces the one a Hello claims).
  Actions OnInbound(InboundId inbound, const Message& message, TimePoint now,
                    const std::string& proven_key = "");
  // An inbound request that failed to decode with `why`. `sender` and `request_id` come from its
  // envelope when that much decoded (else "" and 0), so the Error reply reaches the requester.
  Actions OnInboundRejected(InboundId inbound, const std::string& sender, uint64_t request_id,
                            const Status& why, TimePoint now);
  // The outcome of request `request_id`: the decoded reply, or why there is none.
  Actions OnReply(uint64_t request_id, const Result<Message>& reply, TimePoint now);
  // The learner finished a StartCompute job.
  Actions OnComputeDone(const Result<RoundOutcome>& outcome, TimePoint now);
  // Sequential exchange schedule (RoundConfig::take_turns): the node's turn has come
  // (RoundDriver::OnTurn).
  Actions OnTurn(TimePoint now);
  // Sequential exchange schedule: the round the node awaits the end of has ended
  // (RoundDriver::OnRoundEnd).
  Actions OnRoundEnd(TimePoint now);
  // The learner finished an EmbedJob (peer side of the EMD exchange).
  Actions OnEmbedDone(const EmbedJob& job, const Result<ProjectedEmbeddings>& result,
                      TimePoint now);
  // The learner finished an EmdJob (requester side).
  Actions OnEmdDone(const EmdJob& job, const Result<EmdMeasure>& result, TimePoint now);
  // The learner finished an OwnProjectionJob (requester side, witness mode).
  Actions OnOwnProjectionDone(const OwnProjectionJob& job, const Result<OwnProjection>& result,
                              TimePoint now);
  // The learner finished a WitnessEmdJob (witness side): both sides get the result.
  Actions OnWitnessEmdDone(const WitnessEmdJob& job, const Result<double>& result, TimePoint now);
  // Time passed: expires held requests, retries Hellos, closes overdue fetches, ends lingering.
  Actions OnTick(TimePoint now);
  // The node leaves because of `reason` (it stops, or finished): a Goodbye to every verified peer
  // that can take one (node/logic/membership.h). Their replies come back through OnReply().
  Actions Leave(const std::string& reason, TimePoint now);
  // True while a Goodbye of Leave() is unanswered (each has a deadline of at most 2 s).
  bool GoodbyesOutstanding() const { return membership_.GoodbyesOutstanding(); }

  // The EMD exchange's rows, ordered by peer id (emd.csv).
  std::vector<EmdRow> EmdRows() const { return emd_.Rows(); }
  // Changes whenever EmdRows() does (starts at 0).
  uint64_t emd_revision() const { return emd_.revision(); }
  // The signatures received so far, as distances to ours, ordered by peer id (signature.csv).
  std::vector<SignatureRow> SignatureRows() const { return signatures_.Rows(); }
  // Changes whenever SignatureRows() does (starts at 0).
  uint64_t signature_revision() const { return signatures_.revision(); }
  // The state a checkpoint keeps (valid after a RoundCompleted action).
  MachineState ExportState() const;
  // The last completed round (-1 before round 0 completes).
  int64_t completed_round() const { return driver_.completed_round(); }
  // True after Finished was emitted.
  bool finished() const { return driver_.finished(); }
  // The sampler (scores, probabilities).
  const topology::PeerSampler& sampler() const { return *sampler_; }
  // The peer table (endpoints, liveness).
  const topology::PeerTable& peers() const { return membership_.peers(); }
  // Why greeting `peer` last failed while it is unverified (Membership::JoinProblemOf).
  const std::string& JoinProblemOf(const std::string& peer) const {
    return membership_.JoinProblemOf(peer);
  }
  // Communication counters.
  const topology::CommCounters& comm() const { return driver_.comm(); }
  // Rejection and deadline counters.
  MachineCounters counters() const;

 private:
  // What the parts share: the sampler, the request book and the log.
  NodeServices Services() { return {*sampler_, requests_, *log_}; }

  // RoundHooks: the exchanges, as the round driver sees them.
  void OnRoundStart(int64_t round, TimePoint now, Actions& out) override;
  std::optional<double> ExchangedScore(const std::string& peer) const override;
  void Annotate(RoundRecord& record) override;
  bool ExchangesInFlight() const override;
  void OnFinish(TimePoint now, Actions& out) override;

  StateMachineConfig config_;
  std::unique_ptr<topology::PeerSampler> sampler_;
  std::shared_ptr<spdlog::logger> log_;
  RequestBook requests_;
  Membership membership_;
  ModelServer server_;
  EmdExchange emd_;
  SignatureExchange signatures_;
  RoundDriver driver_;
  uint64_t rejected_replies_ = 0;
};

}  // namespace meshlearn::node
