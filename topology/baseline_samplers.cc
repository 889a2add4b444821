#include "topology/baseline_samplers.h"

#include <algorithm>

namespace meshlearn::topology {
namespace {

// Uniform over the records `member` accepts; 0 elsewhere.
template <typename Member>
void UniformOver(std::vector<PeerRecord>& records, Member member) {
  const auto count = std::count_if(records.begin(), records.end(), member);
  for (PeerRecord& record : records) {
    record.probability = member(record) ? 1.0 / static_cast<double>(count) : 0;
  }
}

}  // namespace

void RandomSampler::Reweight(std::vector<PeerRecord>& records, int64_t /*round*/) const {
  UniformOver(records, [](const PeerRecord&) { return true; });
}

Result<std::unique_ptr<OracleSampler>> OracleSampler::Create(
    std::string self, const std::vector<std::pair<std::string, int>>& clusters) {
  const auto own = std::find_if(clusters.begin(), clusters.end(),
                                [&](const auto& entry) { return entry.first == self; });
  if (own == clusters.end()) {
    return Status::InvalidArgument("oracle: the cluster map does not name this node (" + self +
                                   ")");
  }
  std::vector<std::string> mates;
  for (const auto& [node, cluster] : clusters) {
    if (cluster == own->second && node != self) mates.push_back(node);
  }
  std::sort(mates.begin(), mates.end());
  return std::unique_ptr<OracleSampler>(new OracleSampler(std::move(self), std::move(mates)));
}

OracleSampler::OracleSampler(std::string self, std::vector<std::string> cluster_mates)
    : PeerSampler(std::move(self)), cluster_mates_(std::move(cluster_mates)) {}

void OracleSampler::Reweight(std::vector<PeerRecord>& records, int64_t /*round*/) const {
  UniformOver(records, [this](const PeerRecord& record) {
    return std::binary_search(cluster_mates_.begin(), cluster_mates_.end(), record.peer);
  });
}

void LocalSampler::Reweight(std::vector<PeerRecord>& records, int64_t /*round*/) const {
  UniformOver(records, [](const PeerRecord&) { return false; });
}

void EmdClusterSampler::Reweight(std::vector<PeerRecord>& records, int64_t /*round*/) const {
  bool any_decided = std::any_of(records.begin(), records.end(),
                                 [](const PeerRecord& r) { return r.score.has_value(); });
  UniformOver(records, [&](const PeerRecord& r) {
    return !any_decided || (r.score.has_value() && *r.score > 0);
  });
}

bool ClusterSampler::SetCluster(std::optional<std::vector<std::string>> mates) {
  if (mates) {
    std::sort(mates->begin(), mates->end());
    mates->erase(std::unique(mates->begin(), mates->end()), mates->end());
  }
  mates_ = std::move(mates);
  RecomputeProbabilities();
  return true;
}

void ClusterSampler::Reweight(std::vector<PeerRecord>& records, int64_t /*round*/) const {
  UniformOver(records, [this](const PeerRecord& r) {
    return !mates_ || std::binary_search(mates_->begin(), mates_->end(), r.peer);
  });
}

}  // namespace meshlearn::topology
