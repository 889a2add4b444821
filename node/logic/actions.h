#pragma once
// The bottom of the node's logic: what the state machine's parts (node/logic/state_machine.h) hand
// to the runner that drives them (node/host/node.h, or a simulator). The parts take time and
// messages in and give these actions out; they own no thread, no socket and no clock.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "node/logic/learner.h"
#include "protocol/codec.h"
#include "protocol/messages.h"

namespace meshlearn::node {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

// Identifies an inbound request until it is answered (the runner maps it to a transport token).
using InboundId = uint64_t;

// Action: send `message` as a request to `peer` at `endpoint` (with CURVE, a server that must
// prove `public_key`); report the outcome to NodeStateMachine::OnReply() with `request_id` by
// `deadline`.
struct SendRequest {
  std::string peer;
  std::string endpoint;
  std::string public_key;  // the peer's Z85 CURVE key; empty when unknown (plain text)
  uint64_t request_id = 0;
  Message message;
  TimePoint deadline;
};

// Action: answer inbound request `inbound` with `message`. When `encoded_body` is set it holds
// the body already encoded, shared by every reply of the same body (a model snapshot,
// node/logic/model_server.h), and message.body only names its type (an empty value of it): the
// runner sends the encoded body under the message's envelope (FramesOf, node/logic/requests.h).
struct SendReply {
  InboundId inbound = 0;
  Message message;
  std::shared_ptr<const EncodedBody> encoded_body;
};

// Action: run `job` on the learner (worker thread); report to OnComputeDone().
struct StartCompute {
  RoundJob job;
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
  // Direct mode: the codec the EmbedReply travels in, the node's embedding codec when the
  // request accepts it, else none (PROTOCOL.md, "Compressed embeddings").
  CompressionCodec reply_codec = CompressionCodec::kNone;
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

// Action: round `record.round` is complete: write outputs and checkpoint.
struct RoundCompleted {
  RoundRecord record;
};

// Action: every round is done and the linger time has passed; the node may exit.
struct Finished {};

// Action (sequential exchange schedule, RoundConfig::take_turns): the node is ready for round
// `round`. With `exchanges` it waits for its turn (NodeStateMachine::OnTurn); without (a resting
// node) it takes no turn and waits for the round's end (NodeStateMachine::OnRoundEnd).
struct AwaitTurn {
  int64_t round = 0;
  bool exchanges = true;
};

// Action (sequential exchange schedule): the node's turn of round `round` is over. It now serves
// its merged model with its updated score row, and serves its trained model of the round at the
// round's end (NodeStateMachine::OnRoundEnd).
struct TurnOver {
  int64_t round = 0;
};

// Everything the state machine asks of its runner.
using Action =
    std::variant<SendRequest, SendReply, StartCompute, StartEmbed, StartEmd, StartOwnProjection,
                 StartWitnessEmd, RoundCompleted, Finished, AwaitTurn, TurnOver>;

// Where a part appends the actions of one event, in order.
using Actions = std::vector<Action>;

// The seconds in `d`.
inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace meshlearn::node
