#pragma once
// FLT's data signatures (DESIGN.md "Other seed methods", FLT; file 001), one part of the node
// state machine (node/logic/state_machine.h). No I/O: messages and time in, actions out.
//
// Specification.
// - At every round start the node asks each samplable peer whose signature it lacks for it
//   (GetSignature); a peer that answered with an Error or an unusable signature is not asked
//   again, one that timed out is asked again next round.
// - Each signature received is kept, and its distance D (similarity/centroid_signature.h) to our
//   own and, for the clustering, to every other kept signature is computed once. Every change
//   bumps revision() (signature.csv follows it).
// - With `metric` the exchange scores the peer s = −D (the `centroid` metric) and sets it in the
//   sampler at once; ScoreOf() hands the same s to the rounds, which pass it to the learner with
//   the peer's model; nothing computes it again.
// - With `cluster_sampler` the node reclusters every known signature, its own included, by
//   single linkage at `threshold` (the connected components of FLT's adjacency D < threshold),
//   samples within its own cluster, and records the partition with the next round.
//   Rationale: the node holds every peer's centroids, so it can build the whole matrix FLT's
//   server builds, from signatures alone; a signature never changes, so one request per peer
//   suffices.
// - A node without signatures refuses GetSignature with Error(unavailable).

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/logger.h>

#include "node/logic/actions.h"
#include "node/logic/membership.h"
#include "node/logic/requests.h"
#include "topology/sampler.h"

namespace meshlearn::node {

// What the signature exchange needs to know about its node.
struct SignatureConfig {
  bool enabled = false;
  ProjectedEmbeddings own;       // served to GetSignature; k rows of centroids
  double threshold = 1.0;        // peers closer than this are related
  bool metric = false;           // feed s = -D to the sampler
  bool cluster_sampler = false;  // sample within the single-linkage cluster
  Clock::duration request_deadline = std::chrono::seconds(10);
};

// One node's view of a peer's FLT data signature (a row of signature.csv).
struct SignatureRow {
  std::string peer;
  double distance = 0;   // D(own signature, the peer's)
  bool related = false;  // distance < threshold
};

// The node's signature exchange (see the specification). Not thread-safe.
class SignatureExchange {
 public:
  // The exchange of the node of `node` with `membership`'s peers; scores and clusters go to the
  // node's sampler.
  SignatureExchange(SignatureConfig config, NodeServices node, const Membership& membership);

  // Round start: asks every samplable peer whose signature we lack and have not given up on.
  void OnRoundStart(TimePoint now, Actions& out);
  // A GetSignature from a peer: our signature, or a refusal when signatures are off.
  void OnGetSignature(InboundId inbound, const Envelope& env, TimePoint now, Actions& out);
  // The outcome of one of our GetSignature requests; `failure` is why there is no usable reply.
  void OnReply(uint64_t request_id, const Result<Message>& reply, const Status& failure);

  // True while one of our GetSignature requests is unanswered.
  bool InFlight() const { return !asking_.empty(); }
  // s = -D of `peer` when the exchange scores for the `centroid` metric and holds its signature.
  std::optional<double> ScoreOf(const std::string& peer) const;
  // The partition computed since the last call, to record with a round (its node ids and labels).
  std::optional<std::vector<std::pair<std::string, int>>> TakeUnrecordedPartition();
  // The signatures received so far, as distances to ours, ordered by peer id (signature.csv).
  std::vector<SignatureRow> Rows() const;
  // Changes whenever Rows() does (starts at 0).
  uint64_t revision() const { return revision_; }

 private:
  void Keep(const std::string& peer, const Signature& signature);
  void Recluster();
  // D(a, b) between two kept signatures (the empty id is ours); NaN when not measured.
  double Distance(const std::string& a, const std::string& b) const;

  SignatureConfig config_;
  NodeServices node_;
  const Membership& membership_;
  std::map<uint64_t, std::string> asking_;  // our requests in flight, by request id
  // The peers' signatures (kept for the clustering only) and D between every two (keyed by the
  // ordered id pair; ours is ""), the peers not to ask again, and the scores of the metric.
  std::map<std::string, ProjectedEmbeddings> signatures_;
  std::map<std::pair<std::string, std::string>, double> distances_;
  std::set<std::string> refused_;
  std::map<std::string, double> scores_;
  std::optional<std::vector<std::pair<std::string, int>>> unrecorded_partition_;
  uint64_t revision_ = 0;
};

}  // namespace meshlearn::node
