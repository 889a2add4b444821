#pragma once
// The cluster observer: FLIC / OCFL (similarity/cluster_policy.h) in the learner's round. It
// stores the update directions of the peers that answered and of this node, then lets the policy
// decide whether to cluster.
//
// Specification.
// - Every direction is a node's own local update: Δ = its weights after local training − the
//   weights it trained from (its model after that round's merge). The node's own is computed
//   from this round's merged model and served with its snapshot (RoundOutcome::
//   published_update); a peer's is the one it sent with its model (PeerModel::update).
// - A peer that sent none (an older build, or one that stopped training) keeps its stored
//   direction; one whose update is refused is skipped.
//   Rationale: files 002/003 measure each client's update δ = w^{t-1} − w_k^t from the global
//   model it started from (the sign is immaterial to cosines); in a mesh, a node's merged model
//   is that starting point. Measured from the shared initial model w0 instead (DESIGN.md's
//   wording), gossip averaging makes every node's displacement nearly the same within a few
//   rounds: the temperature only fell (15 nodes, 3 label clusters, 14 rounds) and no cluster was
//   found. Measured as w_j − (this node's merged model), a same-cluster peer differs from it
//   mostly by noise that depends on which peers were merged that round, and FLIC's communities
//   fragmented (flic-label-swap, clustering once at round 10, seeds 1-3: ARI 0.83, 0.88, 0.82;
//   with the peers' own Δ_j: 0.94, 0.97, 0.92). The peer's own Δ_j does not depend on the
//   receiver.

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/logic/learner.h"
#include "similarity/cluster_policy.h"

namespace meshlearn::node {

class ClusterObserver {
 public:
  // Observes for node `self` with `policy`.
  ClusterObserver(std::string self, std::unique_ptr<similarity::ClusterPolicy> policy)
      : self_(std::move(self)), policy_(std::move(policy)) {}

  // Observes the round of `job`: the peers' updates, and this node's own from `base` (this
  // round's merged model) to `trained`; ends the policy's round and fills out.published_update,
  // out.temperature and, when the policy clustered, out.cluster_mates and out.cluster_partition.
  Status Observe(const RoundJob& job, const std::vector<float>& base,
                 const std::vector<float>& trained, RoundOutcome& out);

 private:
  std::string self_;
  std::unique_ptr<similarity::ClusterPolicy> policy_;
};

}  // namespace meshlearn::node
