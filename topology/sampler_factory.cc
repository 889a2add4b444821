// The one factory table that maps sampler config names to sampler types, and the name tables of
// the DAC options (STYLE.md: the only place where config strings meet types).
#include "topology/sampler_factory.h"

#include <array>
#include <memory>

#include "topology/baseline_samplers.h"

namespace meshlearn::topology {
namespace {

using MadeSampler = Result<std::unique_ptr<PeerSampler>>;

MadeSampler MakeDac(const SamplerConfig& config) {
  auto dac = DacSampler::Create(config.self, config.dac);
  if (!dac.ok()) return dac.status();
  return std::unique_ptr<PeerSampler>(std::move(dac).value());
}

MadeSampler MakeOracle(const SamplerConfig& config) {
  auto oracle = OracleSampler::Create(config.self, config.clusters);
  if (!oracle.ok()) return oracle.status();
  return std::unique_ptr<PeerSampler>(std::move(oracle).value());
}

template <typename Sampler>
MadeSampler Make(const SamplerConfig& config) {
  return std::unique_ptr<PeerSampler>(std::make_unique<Sampler>(config.self));
}

template <SamplerKind kKind>
MadeSampler MakeCluster(const SamplerConfig& config);

struct SamplerEntry {
  NamedValue<SamplerKind> named;
  MadeSampler (*make)(const SamplerConfig&);
};

// Append new samplers here.
constexpr SamplerEntry kSamplers[] = {
    {{"dac", SamplerKind::kDac}, &MakeDac},
    {{"random", SamplerKind::kRandom}, &Make<RandomSampler>},
    {{"oracle", SamplerKind::kOracle}, &MakeOracle},
    {{"local", SamplerKind::kLocal}, &Make<LocalSampler>},
    {{"emd_cluster", SamplerKind::kEmdCluster}, &Make<EmdClusterSampler>},
    {{"louvain", SamplerKind::kLouvain}, &MakeCluster<SamplerKind::kLouvain>},
    {{"temperature", SamplerKind::kTemperature}, &MakeCluster<SamplerKind::kTemperature>},
    {{"centroid_cluster", SamplerKind::kCentroidCluster},
     &MakeCluster<SamplerKind::kCentroidCluster>},
};

constexpr auto kSamplerNames = [] {
  std::array<NamedValue<SamplerKind>, std::size(kSamplers)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kSamplers[i].named;
  return names;
}();

// The cluster samplers answer to their own config name.
template <SamplerKind kKind>
MadeSampler MakeCluster(const SamplerConfig& config) {
  return std::unique_ptr<PeerSampler>(
      std::make_unique<ClusterSampler>(config.self, NameOf(SamplerKindNames(), kKind)));
}

}  // namespace

NameTable<SamplerKind> SamplerKindNames() { return kSamplerNames; }

NameTable<UnscoredRule> UnscoredRuleNames() {
  static constexpr NamedValue<UnscoredRule> kNames[] = {{"exclude", UnscoredRule::kExclude},
                                                        {"zero", UnscoredRule::kZero}};
  return kNames;
}

NameTable<TauSchedule> TauScheduleNames() {
  static constexpr NamedValue<TauSchedule> kNames[] = {{"constant", TauSchedule::kConstant},
                                                       {"sigmoid", TauSchedule::kSigmoid}};
  return kNames;
}

NameTable<ScoreNormalization> ScoreNormalizationNames() {
  static constexpr NamedValue<ScoreNormalization> kNames[] = {
      {"none", ScoreNormalization::kNone}, {"minmax", ScoreNormalization::kMinMax}};
  return kNames;
}

NameTable<TwoHopRule> TwoHopRuleNames() {
  static constexpr NamedValue<TwoHopRule> kNames[] = {{"largest", TwoHopRule::kLargest},
                                                      {"smallest", TwoHopRule::kSmallest},
                                                      {"off", TwoHopRule::kOff}};
  return kNames;
}

NameTable<TwoHopRow> TwoHopRowNames() {
  static constexpr NamedValue<TwoHopRow> kNames[] = {{"all", TwoHopRow::kAll},
                                                     {"direct", TwoHopRow::kDirect}};
  return kNames;
}

NameTable<TwoHopCap> TwoHopCapNames() {
  static constexpr NamedValue<TwoHopCap> kNames[] = {{"witness", TwoHopCap::kWitness},
                                                     {"off", TwoHopCap::kOff}};
  return kNames;
}

NameTable<GraphKind> GraphKindNames() {
  static constexpr NamedValue<GraphKind> kNames[] = {{"none", GraphKind::kNone},
                                                     {"ring", GraphKind::kRing},
                                                     {"dumbbell", GraphKind::kDumbbell},
                                                     {"edges", GraphKind::kEdges}};
  return kNames;
}

Result<std::unique_ptr<PeerSampler>> MakePeerSampler(const SamplerConfig& config) {
  if (config.self.empty()) return Status::InvalidArgument("sampler: empty node id");
  if (config.graph != GraphKind::kNone) {
    auto neighbours = GraphNeighbours(config.graph, config.self, config.members, config.edges);
    if (!neighbours.ok()) return neighbours.status();
    auto graph = std::make_unique<ClusterSampler>(config.self, "graph");
    graph->SetCluster(std::move(*neighbours));
    return std::unique_ptr<PeerSampler>(std::move(graph));
  }
  for (const SamplerEntry& entry : kSamplers) {
    if (entry.named.value == config.sampler) return entry.make(config);
  }
  return Status::InvalidArgument("sampler: unknown kind");  // unreachable: the table has every kind
}

}  // namespace meshlearn::topology
