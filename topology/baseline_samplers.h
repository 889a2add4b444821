#pragma once
// The baseline samplers of file 004's experiments (DESIGN.md "DAC sampler", "Baselines"). They
// share PeerSampler's joins, leaves, draws and checkpoints; they record the scores they are given
// (for scores.csv) but never let them change a probability.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "topology/sampler.h"

namespace meshlearn::topology {

// `random`: uniform gossip, p_ij = 1/(K-1) for every known peer.
class RandomSampler final : public PeerSampler {
 public:
  explicit RandomSampler(std::string self) : PeerSampler(std::move(self)) {}
  std::string_view Name() const override { return "random"; }

 protected:
  void Reweight(std::vector<PeerRecord>& records, int64_t round) const override;
};

// `oracle`: uniform within node i's ground-truth cluster, taken from the scenario; p_ij = 0 for
// peers of other clusters and for peers the cluster map does not name.
class OracleSampler final : public PeerSampler {
 public:
  // `clusters` maps node ids to cluster labels and must name `self`; otherwise kInvalidArgument.
  static Result<std::unique_ptr<OracleSampler>> Create(
      std::string self, const std::vector<std::pair<std::string, int>>& clusters);

  std::string_view Name() const override { return "oracle"; }

 protected:
  void Reweight(std::vector<PeerRecord>& records, int64_t round) const override;

 private:
  OracleSampler(std::string self, std::vector<std::string> cluster_mates);

  // The other nodes of self's cluster, sorted.
  std::vector<std::string> cluster_mates_;
};

// `local`: no communication; every p_ij = 0, so Sample() returns nothing.
class LocalSampler final : public PeerSampler {
 public:
  explicit LocalSampler(std::string self) : PeerSampler(std::move(self)) {}
  std::string_view Name() const override { return "local"; }

 protected:
  void Reweight(std::vector<PeerRecord>& records, int64_t round) const override;
};

// `emd_cluster`: uniform within the peers whose EMD edge is mutually accepted (DESIGN.md "EMD
// embedding exchange", step 5; EMD-CFL's hard clusters). The node feeds each decided edge as a
// score: +1 when both sides accepted, -1 otherwise. Before any edge is decided it samples
// uniformly among all peers; once some are decided, only accepted ones (none: no sampling).
// Rationale: the exchange runs after round 0 and takes a few rounds; learning alone meanwhile
// would waste them, and an undecided peer is as likely a cluster mate as any.
class EmdClusterSampler final : public PeerSampler {
 public:
  explicit EmdClusterSampler(std::string self) : PeerSampler(std::move(self)) {}
  std::string_view Name() const override { return "emd_cluster"; }

 protected:
  void Reweight(std::vector<PeerRecord>& records, int64_t round) const override;
};

// `louvain` (FLIC), `temperature` (OCFL) and `centroid_cluster` (FLT's hard clusters): uniform
// within node i's cluster as a clustering policy decides it (similarity/cluster_policy.h, or the
// signature clusters of node/logic/state_machine.h); the node passes the cluster mates to
// SetCluster() whenever it reclusters. Before any cluster is set, uniform over all known peers;
// once one is set, uniform over the known peers it names, p_ij = 0 for the others (a peer joining
// later counts only if the cluster names it; an empty cluster means no sampling). Scores passed to
// Update() are recorded for the outputs but never change a probability. Rationale: both papers run
// FedAvg over everyone until they cluster, then within each cluster (file 002 Algorithm 1 lines
// 15-19; file 003 Algorithm 1 lines 26-29); the clustering itself needs the peers' update
// directions, which the node holds, not the sampler. The cluster is not part of SamplerState: after
// Restore() the node calls SetCluster() again. The same sampler, named "graph", samples a fixed
// graph's neighbours ([learning] graph, topology/fixed_graph.h): its cluster is set once, when it
// is made (topology/sampler_factory.h).
class ClusterSampler final : public PeerSampler {
 public:
  // `name` is the config name this sampler answers to ("louvain", "temperature" or
  // "centroid_cluster").
  ClusterSampler(std::string self, std::string_view name)
      : PeerSampler(std::move(self)), name_(name) {}
  std::string_view Name() const override { return name_; }

  // Sets node i's cluster mates (std::nullopt: not clustered yet), recomputes the probabilities
  // and returns true. Ids may come in any order; repeats, self and ids that are not known peers
  // do no harm.
  bool SetCluster(std::optional<std::vector<std::string>> mates) override;
  // The cluster mates last set (sorted, without repeats), or nullopt.
  const std::optional<std::vector<std::string>>& cluster() const { return mates_; }

 protected:
  void Reweight(std::vector<PeerRecord>& records, int64_t round) const override;

 private:
  std::string name_;
  std::optional<std::vector<std::string>> mates_;
};

}  // namespace meshlearn::topology
