// The one place where sampler config strings meet sampler types and option enums (STYLE.md).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "topology/baseline_samplers.h"
#include "topology/dac_sampler.h"
#include "topology/sampler.h"

namespace meshlearn::topology {
namespace {

template <typename Enum>
struct Choice {
  std::string_view name;
  Enum value;
};

// Sets `out` to the value named `given` in `choices`, or returns kInvalidArgument listing the
// accepted names.
template <typename Enum, size_t N>
Status ParseChoice(std::string_view option, const std::string& given,
                   const Choice<Enum> (&choices)[N], Enum& out) {
  std::string accepted;
  for (const Choice<Enum>& choice : choices) {
    if (choice.name == given) {
      out = choice.value;
      return Status::Ok();
    }
    accepted += (accepted.empty() ? "" : ", ") + std::string(choice.name);
  }
  return Status::InvalidArgument(std::string(option) + " = \"" + given +
                                 "\" is not accepted (accepted: " + accepted + ")");
}

constexpr Choice<UnscoredRule> kUnscoredRules[] = {
    {"exclude", UnscoredRule::kExclude},
    {"zero", UnscoredRule::kZero},
};
constexpr Choice<TauSchedule> kTauSchedules[] = {
    {"constant", TauSchedule::kConstant},
    {"sigmoid", TauSchedule::kSigmoid},
};
constexpr Choice<ScoreNormalization> kNormalizations[] = {
    {"none", ScoreNormalization::kNone},
    {"minmax", ScoreNormalization::kMinMax},
};
constexpr Choice<TwoHopRule> kTwoHopRules[] = {
    {"largest", TwoHopRule::kLargest},
    {"smallest", TwoHopRule::kSmallest},
    {"off", TwoHopRule::kOff},
};

Result<std::unique_ptr<PeerSampler>> MakeDac(const SamplerConfig& config) {
  DacOptions options;
  options.tau = config.tau;
  MESHLEARN_RETURN_IF_ERROR(
      ParseChoice("unscored", config.unscored, kUnscoredRules, options.unscored));
  MESHLEARN_RETURN_IF_ERROR(
      ParseChoice("tau_schedule", config.tau_schedule, kTauSchedules, options.tau_schedule));
  MESHLEARN_RETURN_IF_ERROR(
      ParseChoice("normalize", config.normalize, kNormalizations, options.normalize));
  MESHLEARN_RETURN_IF_ERROR(ParseChoice("two_hop", config.two_hop, kTwoHopRules, options.two_hop));
  Result<std::unique_ptr<DacSampler>> dac = DacSampler::Create(config.self, options);
  if (!dac.ok()) return dac.status();
  return std::unique_ptr<PeerSampler>(std::move(dac).value());
}

Result<std::unique_ptr<PeerSampler>> MakeRandom(const SamplerConfig& config) {
  return std::unique_ptr<PeerSampler>(std::make_unique<RandomSampler>(config.self));
}

Result<std::unique_ptr<PeerSampler>> MakeOracle(const SamplerConfig& config) {
  Result<std::unique_ptr<OracleSampler>> oracle =
      OracleSampler::Create(config.self, config.clusters);
  if (!oracle.ok()) return oracle.status();
  return std::unique_ptr<PeerSampler>(std::move(oracle).value());
}

Result<std::unique_ptr<PeerSampler>> MakeLocal(const SamplerConfig& config) {
  return std::unique_ptr<PeerSampler>(std::make_unique<LocalSampler>(config.self));
}

Result<std::unique_ptr<PeerSampler>> MakeEmdCluster(const SamplerConfig& config) {
  return std::unique_ptr<PeerSampler>(std::make_unique<EmdClusterSampler>(config.self));
}

template <const char* kName>
Result<std::unique_ptr<PeerSampler>> MakeCluster(const SamplerConfig& config) {
  return std::unique_ptr<PeerSampler>(std::make_unique<ClusterSampler>(config.self, kName));
}
constexpr char kLouvain[] = "louvain";
constexpr char kTemperature[] = "temperature";
constexpr char kCentroidCluster[] = "centroid_cluster";

struct SamplerEntry {
  std::string_view name;
  Result<std::unique_ptr<PeerSampler>> (*make)(const SamplerConfig&);
};

// Append new samplers here.
constexpr SamplerEntry kSamplerTable[] = {
    {"dac", &MakeDac},
    {"random", &MakeRandom},
    {"oracle", &MakeOracle},
    {"local", &MakeLocal},
    {"emd_cluster", &MakeEmdCluster},
    {kLouvain, &MakeCluster<kLouvain>},
    {kTemperature, &MakeCluster<kTemperature>},
    {kCentroidCluster, &MakeCluster<kCentroidCluster>},
};

}  // namespace

Result<std::unique_ptr<PeerSampler>> MakePeerSampler(const SamplerConfig& config) {
  if (config.self.empty()) return Status::InvalidArgument("sampler: empty node id");
  for (const SamplerEntry& entry : kSamplerTable) {
    if (entry.name == config.sampler) return entry.make(config);
  }
  std::string accepted;
  for (const std::string& name : PeerSamplerNames()) {
    accepted += (accepted.empty() ? "" : ", ") + name;
  }
  return Status::InvalidArgument("sampler = \"" + config.sampler +
                                 "\" is not accepted (accepted: " + accepted + ")");
}

std::vector<std::string> PeerSamplerNames() {
  std::vector<std::string> names;
  for (const SamplerEntry& entry : kSamplerTable) names.emplace_back(entry.name);
  return names;
}

}  // namespace meshlearn::topology
