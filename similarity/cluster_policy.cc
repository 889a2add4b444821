#include "similarity/cluster_policy.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace meshlearn::similarity {

void ClusterPolicy::SetClustering(int64_t round, const std::vector<std::string>& ids,
                                  const std::vector<int>& labels) {
  clustered_round_ = round;
  partition_.clear();
  int own = -1;
  for (size_t k = 0; k < ids.size(); ++k) {
    partition_.emplace_back(ids[k], labels[k]);
    if (ids[k] == self_) own = labels[k];
  }
  std::sort(partition_.begin(), partition_.end());
  std::vector<std::string> mates;
  for (const auto& [node, label] : partition_) {
    if (label == own && node != self_) mates.push_back(node);
  }
  mates_ = std::move(mates);
}

Result<std::unique_ptr<LouvainPolicy>> LouvainPolicy::Create(std::string self,
                                                             int64_t cluster_after,
                                                             int64_t recluster_every,
                                                             uint64_t seed) {
  if (self.empty()) return Status::InvalidArgument("louvain policy: empty node id");
  if (cluster_after < 0 || recluster_every < 0) {
    return Status::InvalidArgument(
        "louvain policy: cluster_after and recluster_every must be >= 0");
  }
  return std::unique_ptr<LouvainPolicy>(
      new LouvainPolicy(std::move(self), cluster_after, recluster_every, seed));
}

LouvainPolicy::LouvainPolicy(std::string self, int64_t cluster_after, int64_t recluster_every,
                             uint64_t seed)
    : ClusterPolicy(std::move(self)),
      cluster_after_(cluster_after),
      recluster_every_(recluster_every),
      seed_(seed) {}

Result<bool> LouvainPolicy::EndRound(int64_t round) {
  if (round < cluster_after_ || !directions_.Has(self())) return false;
  if (clustered_round()) {
    if (recluster_every_ == 0 || round - *clustered_round() < recluster_every_) return false;
  }
  const NodeMatrix similarity = directions_.Similarity();
  Result<std::vector<int>> labels = LouvainCommunities(similarity, seed_);
  if (!labels.ok()) return labels.status();
  SetClustering(round, similarity.ids, *labels);
  return true;
}

Result<std::unique_ptr<TemperaturePolicy>> TemperaturePolicy::Create(
    std::string self, int64_t cluster_after, TemperatureClustering clustering) {
  if (self.empty()) return Status::InvalidArgument("temperature policy: empty node id");
  if (cluster_after < 0) {
    return Status::InvalidArgument("temperature policy: cluster_after must be >= 0");
  }
  if (!std::isfinite(clustering.distance_threshold) || !(clustering.distance_threshold > 0)) {
    return Status::InvalidArgument("temperature policy: distance_threshold must be finite and > 0");
  }
  return std::unique_ptr<TemperaturePolicy>(
      new TemperaturePolicy(std::move(self), cluster_after, clustering));
}

TemperaturePolicy::TemperaturePolicy(std::string self, int64_t cluster_after,
                                     TemperatureClustering clustering)
    : ClusterPolicy(std::move(self)), cluster_after_(cluster_after), clustering_(clustering) {}

Result<bool> TemperaturePolicy::EndRound(int64_t round) {
  if (!directions_.Has(self()) || directions_.size() < 2) return false;
  const NodeMatrix distance = directions_.CosineDistance();
  Result<double> now = ClusteringTemperature(distance);
  if (!now.ok()) return now.status();
  bool rises = false;
  const bool same_nodes_stored =
      std::all_of(evaluated_.begin(), evaluated_.end(),
                  [&](const std::string& id) { return directions_.Has(id); });
  if (temperature_ && same_nodes_stored && evaluated_.size() >= 2) {
    Result<double> over_previous = ClusteringTemperature(directions_.CosineDistance(evaluated_));
    if (!over_previous.ok()) return over_previous.status();
    rises = *over_previous > *temperature_;
  }
  temperature_ = *now;
  evaluated_ = distance.ids;
  if (clustered() || round < cluster_after_ || !rises) return false;

  Result<std::vector<int>> labels =
      clustering_.algorithm == ClusterAlgorithm::kLouvain
          ? LouvainCommunities(directions_.Similarity(), clustering_.seed)
          : AgglomerativeClusters(distance, clustering_.distance_threshold, clustering_.linkage);
  if (!labels.ok()) return labels.status();
  SetClustering(round, distance.ids, *labels);
  return true;
}

namespace {

constexpr NamedValue<ClusterAlgorithm> kAlgorithms[] = {
    {"agglomerative", ClusterAlgorithm::kAgglomerative}, {"louvain", ClusterAlgorithm::kLouvain}};
constexpr NamedValue<Linkage> kLinkages[] = {
    {"average", Linkage::kAverage}, {"complete", Linkage::kComplete}, {"single", Linkage::kSingle}};

}  // namespace

NameTable<ClusterAlgorithm> ClusterAlgorithmNames() { return kAlgorithms; }
NameTable<Linkage> LinkageNames() { return kLinkages; }

Result<std::unique_ptr<ClusterPolicy>> MakeClusterPolicy(const ClusterPolicyConfig& config) {
  if (config.policy == ClusterPolicyKind::kLouvain) {
    auto policy = LouvainPolicy::Create(config.self, config.cluster_after, config.recluster_every,
                                        config.seed);
    if (!policy.ok()) return policy.status();
    return std::unique_ptr<ClusterPolicy>(std::move(policy).value());
  }
  TemperatureClustering clustering;
  clustering.algorithm = config.algorithm;
  clustering.linkage = config.linkage;
  clustering.distance_threshold = config.distance_threshold;
  clustering.seed = config.seed;
  auto policy = TemperaturePolicy::Create(config.self, config.cluster_after, clustering);
  if (!policy.ok()) return policy.status();
  return std::unique_ptr<ClusterPolicy>(std::move(policy).value());
}

}  // namespace meshlearn::similarity
