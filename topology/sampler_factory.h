#pragma once
// Building a peer sampler from the node config's choice (DESIGN.md "DAC sampler"). The name tables
// here are the only place where the config's sampler strings meet sampler types and DAC options
// (STYLE.md); the node config parser reads names through them.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"
#include "topology/dac_sampler.h"
#include "topology/fixed_graph.h"
#include "topology/sampler.h"

namespace meshlearn::topology {

// Whom a node samples (the config's `sampler`).
enum class SamplerKind {
  kDac,              // "dac": softmax over similarity scores (file 004)
  kRandom,           // "random": uniform gossip
  kOracle,           // "oracle": uniform within the ground-truth cluster
  kLocal,            // "local": no communication
  kEmdCluster,       // "emd_cluster": uniform within mutually accepted EMD peers
  kLouvain,          // "louvain": FLIC's policy clusters; uniform within the cluster
  kTemperature,      // "temperature": OCFL's policy clusters; uniform within the cluster
  kCentroidCluster,  // "centroid_cluster": FLT's signature clusters; uniform within the cluster
};

// The config names of the sampler kinds and of the DAC options, in documentation order.
NameTable<SamplerKind> SamplerKindNames();
NameTable<UnscoredRule> UnscoredRuleNames();
NameTable<TauSchedule> TauScheduleNames();
NameTable<ScoreNormalization> ScoreNormalizationNames();
NameTable<TwoHopRule> TwoHopRuleNames();
NameTable<TwoHopRow> TwoHopRowNames();
NameTable<TwoHopCap> TwoHopCapNames();
NameTable<GraphKind> GraphKindNames();

// The sampler a node config asks for.
struct SamplerConfig {
  SamplerKind sampler = SamplerKind::kDac;
  // This node's id.
  std::string self;
  // kDac: τ and the rules (topology/dac_sampler.h).
  DacOptions dac;
  // kOracle: ground-truth cluster of every node, self included (from the scenario).
  std::vector<std::pair<std::string, int>> clusters;
  // A fixed graph (topology/fixed_graph.h): the node samples uniformly among its neighbours
  // over the mesh `members` (self included), whatever `sampler` says; kNone: `sampler` decides.
  GraphKind graph = GraphKind::kNone;
  std::vector<std::string> members = {};
  std::vector<GraphEdge> edges = {};  // kEdges
};

// Builds the sampler of `config`. With a graph, a ClusterSampler named "graph" whose cluster is
// self's neighbours (topology/baseline_samplers.h). kInvalidArgument for an empty self, a DAC τ
// that is negative or not finite, a negative explore_rounds, an oracle without clusters, or a
// graph that GraphNeighbours refuses.
Result<std::unique_ptr<PeerSampler>> MakePeerSampler(const SamplerConfig& config);

}  // namespace meshlearn::topology
