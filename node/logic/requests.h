#pragma once
// Request bookkeeping shared by the parts of the node state machine (node/logic/state_machine.h):
// the ids of outgoing requests and which part owns each, the envelopes of replies, and the refusal
// of bad inbound requests.
//
// Specification.
// - Every outgoing request gets a fresh id, unique for the machine's lifetime, and is recorded
//   with the part that sent it until its reply (or failure) comes back or the part forgets it.
//   The router hands each reply to the part that owns its id; a reply to an id nobody owns
//   (late, forgotten, unknown) is dropped.
//   Rationale: each part keeps its own per-request context; none needs to see another's.
// - Replies carry the node's id and its last completed round (0 before round 0).
// - A refused inbound request is answered with Error (its code and text), counted by code, and
//   logged at most once per peer per minute (the last 1024 peers are remembered).
//   Rationale: a hostile peer can send thousands of bad messages; the log must stay readable.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "base/status.h"
#include "node/logic/actions.h"
#include "protocol/messages.h"
#include "protocol/version.h"
#include "topology/peer_table.h"
#include "topology/sampler.h"

namespace meshlearn::node {

// The part of the state machine that sent a request and receives its reply.
enum class Part {
  kMembership,  // Hello, PeerList
  kRounds,      // GetModel
  kEmd,         // the EMD exchange, direct and witness
  kSignatures,  // FLT's GetSignature
};

// Counters of refused inbound requests, for /status and /metrics.
struct Rejections {
  uint64_t total = 0;                       // inbound requests answered with an Error
  std::map<std::string, uint64_t> by_code;  // the same, by error code name
};

// Ids, owners and envelopes of one node's requests (see the specification). Not thread-safe.
class RequestBook {
 public:
  // The book of node `self`; `log` receives the refusal lines. Every envelope it makes announces
  // `protocol_version` (kMinProtocolVersion..kProtocolVersion; StateMachineConfig).
  RequestBook(std::string self, std::shared_ptr<spdlog::logger> log,
              uint16_t protocol_version = kProtocolVersion);

  // A request with a fresh id, owned by `owner`, carrying `body` to `peer` until `deadline`.
  SendRequest Open(Part owner, const topology::PeerEntry& peer, Body body, TimePoint deadline);
  // The same to a peer known only by its description (e.g. a witness named by another node).
  SendRequest Open(Part owner, const PeerInfo& peer, Body body, TimePoint deadline);
  // The owner of request `request_id`, which is closed by this call; nullopt when nobody owns it.
  std::optional<Part> Close(uint64_t request_id);
  // Closes request `request_id` without a reply: its late reply will be dropped.
  void Forget(uint64_t request_id);

  // Answers inbound request `inbound` (request id `request_id`) with `body`.
  SendReply ReplyTo(InboundId inbound, uint64_t request_id, Body body) const;
  // A reply message to request `request_id`, carrying `body`.
  Message Reply(uint64_t request_id, Body body) const;
  // Refuses inbound request `inbound` from `sender` ("" when unknown) with Error(why), counts it
  // and logs it at most once a minute per peer (see the specification).
  SendReply Reject(InboundId inbound, const std::string& sender, uint64_t request_id,
                   const Status& why, TimePoint now);

  // Sets the round replies carry: the node's last completed round.
  void set_round(int64_t completed_round) { round_ = completed_round; }
  // The node's last completed round (-1 before round 0).
  int64_t round() const { return round_; }
  // This node's id.
  const std::string& self() const { return self_; }
  // The protocol version this node's envelopes announce.
  uint16_t protocol_version() const { return protocol_version_; }
  // What Reject() refused so far.
  const Rejections& rejections() const { return rejections_; }

 private:
  std::string self_;
  std::shared_ptr<spdlog::logger> log_;
  uint16_t protocol_version_;
  int64_t round_ = -1;
  uint64_t last_id_ = 0;
  std::map<uint64_t, Part> owners_;
  Rejections rejections_;
  std::map<std::string, TimePoint> last_rejection_log_;
};

// The frames that answer `reply`: its encoded body under its message's envelope when it has one,
// else its whole message encoded. Either way the bytes of Encode(reply.message).
std::vector<Frame> FramesOf(const SendReply& reply);

// What the parts of one node's state machine share: its sampler (scores, probabilities, whom to
// sample), its request book and its log. The router owns all three; parts hold references.
struct NodeServices {
  topology::PeerSampler& sampler;
  RequestBook& requests;
  spdlog::logger& log;
};

}  // namespace meshlearn::node
