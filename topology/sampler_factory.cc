// The one place where sampler config names meet sampler types and option enums (STYLE.md).
#include "topology/sampler_factory.h"

#include <memory>

#include "topology/baseline_samplers.h"

namespace meshlearn::topology {
namespace {

constexpr NamedValue<SamplerKind> kSamplerNames[] = {
    {"dac", SamplerKind::kDac},
    {"random", SamplerKind::kRandom},
    {"oracle", SamplerKind::kOracle},
    {"local", SamplerKind::kLocal},
    {"emd_cluster", SamplerKind::kEmdCluster},
    {"louvain", SamplerKind::kLouvain},
    {"temperature", SamplerKind::kTemperature},
    {"centroid_cluster", SamplerKind::kCentroidCluster}};
constexpr NamedValue<UnscoredRule> kUnscoredRuleNames[] = {{"exclude", UnscoredRule::kExclude},
                                                           {"zero", UnscoredRule::kZero}};
constexpr NamedValue<TauSchedule> kTauScheduleNames[] = {{"constant", TauSchedule::kConstant},
                                                         {"sigmoid", TauSchedule::kSigmoid}};
constexpr NamedValue<ScoreNormalization> kNormalizationNames[] = {
    {"none", ScoreNormalization::kNone}, {"minmax", ScoreNormalization::kMinMax}};
constexpr NamedValue<TwoHopRule> kTwoHopRuleNames[] = {{"largest", TwoHopRule::kLargest},
                                                       {"smallest", TwoHopRule::kSmallest},
                                                       {"off", TwoHopRule::kOff}};

}  // namespace

NameTable<SamplerKind> SamplerKindNames() { return kSamplerNames; }
NameTable<UnscoredRule> UnscoredRuleNames() { return kUnscoredRuleNames; }
NameTable<TauSchedule> TauScheduleNames() { return kTauScheduleNames; }
NameTable<ScoreNormalization> ScoreNormalizationNames() { return kNormalizationNames; }
NameTable<TwoHopRule> TwoHopRuleNames() { return kTwoHopRuleNames; }

Result<std::unique_ptr<PeerSampler>> MakePeerSampler(const SamplerConfig& config) {
  if (config.self.empty()) return Status::InvalidArgument("sampler: empty node id");
  switch (config.sampler) {
    case SamplerKind::kDac: {
      auto dac = DacSampler::Create(config.self, config.dac);
      if (!dac.ok()) return dac.status();
      return std::unique_ptr<PeerSampler>(std::move(dac).value());
    }
    case SamplerKind::kRandom:
      return std::unique_ptr<PeerSampler>(std::make_unique<RandomSampler>(config.self));
    case SamplerKind::kOracle: {
      auto oracle = OracleSampler::Create(config.self, config.clusters);
      if (!oracle.ok()) return oracle.status();
      return std::unique_ptr<PeerSampler>(std::move(oracle).value());
    }
    case SamplerKind::kLocal:
      return std::unique_ptr<PeerSampler>(std::make_unique<LocalSampler>(config.self));
    case SamplerKind::kEmdCluster:
      return std::unique_ptr<PeerSampler>(std::make_unique<EmdClusterSampler>(config.self));
    case SamplerKind::kLouvain:
    case SamplerKind::kTemperature:
    case SamplerKind::kCentroidCluster:
      return std::unique_ptr<PeerSampler>(std::make_unique<ClusterSampler>(
          config.self, NameOf(SamplerKindNames(), config.sampler)));
  }
  return Status::InvalidArgument("sampler: unknown kind");
}

}  // namespace meshlearn::topology
