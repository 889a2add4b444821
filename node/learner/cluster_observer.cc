#include "node/learner/cluster_observer.h"

#include <utility>

namespace meshlearn::node {

Status ClusterObserver::Observe(const RoundJob& job, const std::vector<float>& base,
                                const std::vector<float>& trained, RoundOutcome& out) {
  for (const PeerModel& peer : job.peers) {
    if (peer.update) (void)policy_->ObserveUpdate(peer.peer, peer.update->view());
  }
  std::vector<float> update(base.size());
  for (size_t k = 0; k < update.size(); ++k) update[k] = trained[k] - base[k];
  MESHLEARN_RETURN_IF_ERROR(
      policy_->ObserveUpdate(self_, update).WithContext("own update direction"));
  out.published_update = FloatArray::Own(std::move(update));
  auto clustered = policy_->EndRound(job.round);
  if (!clustered.ok()) return clustered.status().WithContext("clustering");
  out.temperature = policy_->Temperature().value_or(out.temperature);
  if (*clustered) {
    out.cluster_mates = policy_->ClusterMates();
    out.cluster_partition = policy_->Partition();
  }
  return Status::Ok();
}

}  // namespace meshlearn::node
