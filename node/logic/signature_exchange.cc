#include "node/logic/signature_exchange.h"

#include <cmath>
#include <limits>

#include <spdlog/fmt/ranges.h>

#include "similarity/centroid_signature.h"
#include "similarity/clustering.h"
#include "similarity/point_set.h"

namespace meshlearn::node {
namespace {

// The similarity view of a signature's centroids.
similarity::PointSet Points(const ProjectedEmbeddings& set) {
  return {set.values.view(), set.rows, set.cols};
}

}  // namespace

SignatureExchange::SignatureExchange(SignatureConfig config, NodeServices node,
                                     const Membership& membership)
    : config_(std::move(config)), node_(node), membership_(membership) {}

void SignatureExchange::OnRoundStart(TimePoint now, Actions& out) {
  if (!config_.enabled) return;
  std::set<std::string> asking;
  for (const auto& [id, peer] : asking_) asking.insert(peer);
  const topology::PeerTable& peers = membership_.peers();
  for (const topology::PeerEntry& p : peers.Entries()) {
    if (!peers.IsSamplable(p.id, now) || !std::isnan(Distance("", p.id)) || refused_.count(p.id) ||
        asking.count(p.id)) {
      continue;
    }
    SendRequest request =
        node_.requests.Open(Part::kSignatures, p, GetSignature{}, now + config_.request_deadline);
    asking_[request.request_id] = p.id;
    out.push_back(std::move(request));
  }
}

void SignatureExchange::OnGetSignature(InboundId inbound, const Envelope& env, TimePoint now,
                                       Actions& out) {
  if (!config_.enabled) {
    out.push_back(node_.requests.Reject(
        inbound, env.sender, env.request_id,
        Status::Unavailable("this node does not use data signatures (metric \"centroid\" or "
                            "sampler \"centroid_cluster\")"),
        now));
    return;
  }
  out.push_back(node_.requests.ReplyTo(
      inbound, env.request_id, Signature{config_.own.rows, config_.own.cols, config_.own.values}));
}

void SignatureExchange::OnReply(uint64_t request_id, const Result<Message>& reply,
                                const Status& failure) {
  auto it = asking_.find(request_id);
  if (it == asking_.end()) return;
  std::string peer = it->second;
  asking_.erase(it);
  if (!failure.ok()) {
    // A timeout is asked again next round; a peer that answered otherwise will answer the same.
    bool transient =
        failure.code() == ErrorCode::kTimeout || failure.code() == ErrorCode::kUnavailable;
    if (!transient || reply.ok()) refused_.insert(peer);
    node_.log.warn("no data signature from {}: {}", peer, failure.ToString());
    return;
  }
  const auto* signature = std::get_if<Signature>(&reply->body);
  if (!signature) {
    refused_.insert(peer);
    node_.log.warn("no data signature from {}: GetSignature was not answered with a Signature",
                   peer);
    return;
  }
  Keep(peer, *signature);
}

void SignatureExchange::Keep(const std::string& peer, const Signature& signature) {
  ProjectedEmbeddings theirs{signature.rows, signature.cols, signature.centroids};
  auto to_own = similarity::CentroidSetDistance(Points(config_.own), Points(theirs));
  if (!to_own.ok()) {
    refused_.insert(peer);
    node_.log.warn("unusable data signature from {}: {}", peer, to_own.status().ToString());
    return;
  }
  distances_[{"", peer}] = *to_own;
  if (config_.cluster_sampler) {
    // Only the clustering needs the signatures kept and the distances between peers.
    for (const auto& [other, set] : signatures_) {
      auto d = similarity::CentroidSetDistance(Points(set), Points(theirs));
      if (d.ok()) distances_[std::minmax(other, peer)] = *d;
    }
    signatures_[peer] = std::move(theirs);
  }
  ++revision_;
  bool related = similarity::CentroidsRelated(*to_own, config_.threshold);
  node_.log.info("data signature of {}: distance {:.4f}: {}", peer, *to_own,
                 related ? "related" : "unrelated");

  if (config_.metric) {
    similarity::MetricInput input;
    input.exchanged_score = *to_own;
    auto score = similarity::CentroidMetric().Score(input);
    if (score.ok()) scores_[peer] = *score;
    if (node_.sampler.HasPeer(peer)) {
      std::vector<topology::PeerObservation> observation;
      if (score.ok()) observation.push_back({peer, *score, {}});
      Status updated = score.ok() ? node_.sampler.Update(
                                        std::max<int64_t>(1, node_.requests.round()), observation)
                                  : score.status();
      if (!updated.ok())
        node_.log.warn("signature score of {} rejected: {}", peer, updated.ToString());
    }
  }
  if (config_.cluster_sampler) Recluster();
}

std::optional<double> SignatureExchange::ScoreOf(const std::string& peer) const {
  auto it = scores_.find(peer);
  if (it == scores_.end()) return std::nullopt;
  return it->second;
}

double SignatureExchange::Distance(const std::string& a, const std::string& b) const {
  auto it = distances_.find(std::minmax(a, b));
  return it == distances_.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

void SignatureExchange::Recluster() {
  similarity::NodeMatrix distance;
  distance.ids.push_back(node_.requests.self());
  for (const auto& [peer, set] : signatures_) distance.ids.push_back(peer);
  size_t n = distance.ids.size();
  distance.values.assign(n * n, 0.0);
  auto key = [&](size_t i) { return i == 0 ? std::string() : distance.ids[i]; };
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      double d = Distance(key(i), key(j));
      // A pair that could not be measured is never related.
      if (std::isnan(d)) d = std::numeric_limits<double>::max();
      distance.values[i * n + j] = distance.values[j * n + i] = d;
    }
  }
  auto labels =
      similarity::AgglomerativeClusters(distance, config_.threshold, similarity::Linkage::kSingle);
  if (!labels.ok()) {
    node_.log.warn("signature clustering failed: {}", labels.status().ToString());
    return;
  }
  std::vector<std::string> mates;
  std::vector<std::pair<std::string, int>> partition;
  for (size_t i = 0; i < n; ++i) {
    partition.emplace_back(distance.ids[i], (*labels)[i]);
    if (i > 0 && (*labels)[i] == (*labels)[0]) mates.push_back(distance.ids[i]);
  }
  node_.sampler.SetCluster(mates);
  node_.log.info("signature clusters over {} nodes; cluster mates: {}", n, fmt::join(mates, " "));
  unrecorded_partition_ = std::move(partition);
}

std::optional<std::vector<std::pair<std::string, int>>>
SignatureExchange::TakeUnrecordedPartition() {
  auto partition = std::move(unrecorded_partition_);
  unrecorded_partition_.reset();
  return partition;
}

std::vector<SignatureRow> SignatureExchange::Rows() const {
  std::vector<SignatureRow> rows;
  for (const auto& [pair, d] : distances_) {
    if (!pair.first.empty()) continue;  // between two peers, not ours
    rows.push_back({pair.second, d, similarity::CentroidsRelated(d, config_.threshold)});
  }
  return rows;
}

}  // namespace meshlearn::node
