#include "tools/fuzz/fuzz_scenario.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <sstream>

#include <toml++/toml.h>

#include "base/stable_hash.h"
#include "tools/scenario/node_keys.h"

namespace meshlearn::launch {
namespace {

using similarity::MetricKind;
using topology::SamplerKind;
using training::AggregationKind;

constexpr double kLingerSeconds = 1;

// The draws of one aspect of a scenario (the specification: one generator per aspect).
class Draws {
 public:
  Draws(const char* aspect, uint64_t seed) : rng_(StableHash(aspect, seed)) {}
  // Uniform in [0, 1), the same on every standard library.
  double Unit() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }
  // Uniform in [lo, hi].
  double Between(double lo, double hi) { return lo + (hi - lo) * Unit(); }
  // A whole number in [lo, hi].
  int64_t Int(int64_t lo, int64_t hi) {
    return lo + std::min<int64_t>(hi - lo, static_cast<int64_t>(Unit() * (hi - lo + 1)));
  }
  bool Coin(double p = 0.5) { return Unit() < p; }
  // One of `options`.
  template <class T>
  const T& Pick(const std::vector<T>& options) {
    return options[static_cast<size_t>(Int(0, static_cast<int64_t>(options.size()) - 1))];
  }

 private:
  std::mt19937_64 rng_;
};

void DrawSize(FuzzScenario& s, const FuzzLimits& limits) {
  Draws d("size", s.seed);
  s.nodes = 3 + static_cast<int>(std::floor(37 * std::pow(d.Unit(), 3)));
  s.rounds = 5 + static_cast<int64_t>(std::floor(55 * std::pow(d.Unit(), 3)));
  if (limits.nodes) s.nodes = std::clamp(*limits.nodes, 3, s.nodes);
  if (limits.rounds) s.rounds = std::clamp<int64_t>(*limits.rounds, 1, s.rounds);
  s.clusters = static_cast<int>(d.Int(1, std::min(3, s.nodes / 2)));
}

void DrawMethod(FuzzScenario& s) {
  Draws d("method", s.seed);
  s.sampler = d.Pick<SamplerKind>({SamplerKind::kDac, SamplerKind::kDac, SamplerKind::kDac,
                                   SamplerKind::kRandom, SamplerKind::kOracle,
                                   SamplerKind::kLouvain, SamplerKind::kTemperature});
  s.metric = d.Pick<MetricKind>(
      {MetricKind::kCosWeights, MetricKind::kCosGrad, MetricKind::kInvL2, MetricKind::kInvLoss});
  s.aggregation = d.Coin() ? AggregationKind::kFedAvg : AggregationKind::kFedSim;
  s.peers_per_round = static_cast<int>(d.Int(1, std::min(4, s.nodes - 1)));
  s.sync = d.Coin(0.7);
  s.codec = d.Pick<CompressionCodec>({CompressionCodec::kNone, CompressionCodec::kNone,
                                      CompressionCodec::kFp16, CompressionCodec::kInt8});
  s.privacy = d.Coin(0.15);
  s.security = d.Coin(0.2);
  s.known_peers = d.Coin(0.2) ? static_cast<int>(d.Int(1, std::max(1, s.nodes / 2))) : 0;
  s.round_deadline_s = std::round(d.Between(2, 8));
  s.round_compute_s = d.Pick<double>({0.5, 1, 2});
  // The methods that exchange something drawn from the data (the EMD exchange, FLT's signatures)
  // and the topk codec, each from draws of its own, so that a seed's other draws are the ones it
  // had before they were added.
  Draws data("data-method", s.seed);
  if (data.Coin(0.25)) {
    // A sampler of its own, or DAC with a metric of this kind.
    struct DataMethod {
      SamplerKind sampler;
      std::optional<MetricKind> metric;
    };
    const DataMethod method = data.Pick<DataMethod>({{SamplerKind::kEmdCluster, std::nullopt},
                                                     {SamplerKind::kDac, MetricKind::kEmd},
                                                     {SamplerKind::kCentroidCluster, std::nullopt},
                                                     {SamplerKind::kDac, MetricKind::kCentroid}});
    s.sampler = method.sampler;
    if (method.metric) s.metric = *method.metric;
  }
  Draws topk("topk", s.seed);
  if (topk.Coin(0.1)) s.codec = CompressionCodec::kTopK;
}

// The plug-ins, from draws of their own (the specification): every draw is made whatever the
// method, so that which plug-in a seed runs does not hang on the other aspects' draws.
void DrawPlugIns(FuzzScenario& s, const FuzzLimits& limits) {
  Draws d("plugin", s.seed);
  const bool on = d.Coin(0.2);
  const double points = d.Unit();  // [0, 1/3): a metric; [1/3, 2/3): both; [2/3, 1): a merge
  const FuzzPlugIn metric = d.Coin(1.0 / 3) ? FuzzPlugIn::kLastLayer : FuzzPlugIn::kCosWeights;
  const FuzzPlugIn merge = d.Coin() ? FuzzPlugIn::kGeometricMedian : FuzzPlugIn::kFedAvg;
  const bool misbehaves = d.Coin(1.0 / 3);
  if (!on || !limits.plugins) return;
  const bool metric_fits = s.sampler == SamplerKind::kDac && s.metric != MetricKind::kEmd &&
                           s.metric != MetricKind::kCentroid;
  const bool with_metric = metric_fits && points < 2.0 / 3;
  const bool with_merge = !with_metric || points >= 1.0 / 3;
  if (with_metric) {
    s.metric = MetricKind::kTorchScript;
    s.metric_plugin = metric;
  }
  if (with_merge) s.merge_plugin = merge;
  if (!misbehaves) return;
  // With both, the metric misbehaves in the lower half of "both".
  if (with_metric && (!with_merge || points < 0.5)) {
    s.metric_plugin = FuzzPlugIn::kMisbehavingMetric;
  } else {
    s.merge_plugin = FuzzPlugIn::kMisbehavingMerge;
  }
}

// Whether the scenario's method runs the EMD exchange, and whether it uses FLT's signatures.
bool RunsEmdExchange(const FuzzScenario& s) {
  return s.sampler == SamplerKind::kEmdCluster ||
         (s.sampler == SamplerKind::kDac && s.metric == MetricKind::kEmd);
}
bool UsesSignatures(const FuzzScenario& s) {
  return s.sampler == SamplerKind::kCentroidCluster ||
         (s.sampler == SamplerKind::kDac && s.metric == MetricKind::kCentroid);
}

bool Wanted(FaultKind kind, const FuzzLimits& limits, Draws& d) {
  const bool on = d.Coin();
  return on && (!limits.kinds || limits.kinds->contains(kind));
}

void DrawNodeFaults(FuzzScenario& s, const FuzzLimits& limits) {
  const int64_t last = s.rounds;
  Draws death("death", s.seed), pause("pause", s.seed), part("partition", s.seed),
      slow("slow", s.seed);
  if (Wanted(FaultKind::kDeath, limits, death)) {
    const int64_t count = death.Int(1, 2);
    for (int64_t k = 0; k < count; ++k) {
      s.outages.push_back({static_cast<int>(death.Int(0, s.nodes - 1)), false,
                           death.Int(0, std::max<int64_t>(0, last - 2)),
                           std::round(death.Between(1, 3 * s.round_deadline_s))});
    }
    s.kinds.insert(FaultKind::kDeath);
  }
  if (Wanted(FaultKind::kPause, limits, pause)) {
    s.outages.push_back({static_cast<int>(pause.Int(0, s.nodes - 1)), true,
                         pause.Int(0, std::max<int64_t>(0, last - 2)),
                         std::round(s.round_deadline_s * pause.Between(1.5, 4))});
    s.kinds.insert(FaultKind::kPause);
  }
  if (Wanted(FaultKind::kPartition, limits, part) && last >= 2) {
    FuzzPartition p;
    std::vector<int> ids(static_cast<size_t>(s.nodes));
    for (int i = 0; i < s.nodes; ++i) ids[static_cast<size_t>(i)] = i;
    for (size_t i = ids.size() - 1; i > 0; --i) {
      std::swap(ids[i], ids[static_cast<size_t>(part.Int(0, static_cast<int64_t>(i)))]);
    }
    ids.resize(static_cast<size_t>(part.Int(1, s.nodes - 1)));
    std::sort(ids.begin(), ids.end());
    p.group_a = ids;
    p.from_round = part.Int(0, last - 1);
    p.to_round = part.Int(p.from_round + 1, std::min(last, p.from_round + 1 + last / 3));
    p.one_way = part.Coin(1.0 / 3);
    s.partitions.push_back(p);
    s.kinds.insert(FaultKind::kPartition);
  }
  if (Wanted(FaultKind::kSlow, limits, slow)) {
    s.slow_count = static_cast<int>(slow.Int(1, std::max(1, s.nodes / 4)));
    s.slow_factor = std::round(slow.Between(2, 10));
    s.kinds.insert(FaultKind::kSlow);
  }
}

// With fault kind `kind` on (its own draws, named as the kind), `rate` is drawn in [min, max] and
// rounded so that the scenario file shows it exactly.
void DrawRate(FuzzScenario& s, FaultKind kind, const FuzzLimits& limits, double& rate, double max,
              double min = 0.005) {
  Draws d(std::string(NameOf(FaultKindNames(), kind)).c_str(), s.seed);
  if (!Wanted(kind, limits, d)) return;
  rate = std::round(d.Between(min, max) * 1000) / 1000;
  s.kinds.insert(kind);
}

void DrawStorageFaults(FuzzScenario& s, const FuzzLimits& limits) {
  DrawRate(s, FaultKind::kWriteFail, limits, s.write_fail, 0.05);
  DrawRate(s, FaultKind::kDiskFull, limits, s.disk_full, 0.1);
  DrawRate(s, FaultKind::kTorn, limits, s.torn, 1, 0.1);
}

void DrawNetworkFaults(FuzzScenario& s, const FuzzLimits& limits) {
  DrawRate(s, FaultKind::kDuplicate, limits, s.duplicate, 0.1);
  DrawRate(s, FaultKind::kLoss, limits, s.loss, 0.3);
  DrawRate(s, FaultKind::kCorrupt, limits, s.corrupt, 0.1);
  DrawRate(s, FaultKind::kTruncate, limits, s.truncate, 0.1);
  Draws latency("latency", s.seed);
  if (Wanted(FaultKind::kLatency, limits, latency)) {
    s.latency_ms = std::round(latency.Between(1, 200));
    s.latency_sigma = std::round(latency.Between(0, 1) * 100) / 100;
    s.kinds.insert(FaultKind::kLatency);
  }
}

toml::array IdArray(const std::vector<int>& ids) {
  toml::array a;
  for (int id : ids) a.push_back(std::to_string(id));
  return a;
}

toml::table NetworkSection(const FuzzScenario& s) {
  toml::table network{{"round_compute_s", s.round_compute_s}};
  if (s.loss > 0) network.insert("loss", s.loss);
  if (s.corrupt > 0) network.insert("corrupt", s.corrupt);
  if (s.truncate > 0) network.insert("truncate", s.truncate);
  if (s.duplicate > 0) network.insert("duplicate", s.duplicate);
  if (s.write_fail > 0 || s.disk_full > 0 || s.torn > 0) {
    network.insert("storage",
                   toml::table{{"fail", s.write_fail}, {"full", s.disk_full}, {"torn", s.torn}});
  }
  if (s.latency_ms > 0) {
    network.insert("latency_ms", s.latency_ms);
    network.insert("latency",
                   toml::table{{"distribution", "lognormal"}, {"sigma", s.latency_sigma}});
  }
  if (s.slow_count > 0) {
    network.insert("slow", toml::table{{"count", s.slow_count}, {"factor", s.slow_factor}});
  }
  toml::array outages;
  for (const FuzzOutage& o : s.outages) {
    outages.push_back(toml::table{{"node", std::to_string(o.node)},
                                  {"kind", o.pause ? "pause" : "death"},
                                  {"after_round", o.after_round},
                                  {"seconds", o.seconds}});
  }
  if (!outages.empty()) network.insert("outages", std::move(outages));
  toml::array partitions;
  for (const FuzzPartition& p : s.partitions) {
    std::vector<int> rest;
    for (int i = 0; i < s.nodes; ++i) {
      if (!std::binary_search(p.group_a.begin(), p.group_a.end(), i)) rest.push_back(i);
    }
    partitions.push_back(toml::table{{"groups", toml::array{IdArray(p.group_a), IdArray(rest)}},
                                     {"from_round", p.from_round},
                                     {"to_round", p.to_round},
                                     {"one_way", p.one_way}});
  }
  if (!partitions.empty()) network.insert("partitions", std::move(partitions));
  return network;
}

}  // namespace

node::NodeConfig NodeSettings(const FuzzScenario& s) {
  node::NodeConfig c;
  const bool emd = RunsEmdExchange(s), signatures = UsesSignatures(s);
  c.model.architecture =
      emd || signatures ? training::Architecture::kMlp : training::Architecture::kLinear;
  c.training.optimizer = training::OptimizerKind::kSgd;
  // The MLP diverges at the linear model's rate on the regression within its first round (seeds
  // 25, 27 and 46).
  c.training.learning_rate = emd || signatures ? 0.0003 : 0.003;
  c.training.batch_size = 8;
  c.training.rounds = s.rounds;
  c.training.patience = s.rounds + 1;
  c.learning.sampler = s.sampler;
  c.learning.metric = s.metric;
  c.learning.aggregation = s.aggregation;
  c.learning.peers_per_round = s.peers_per_round;
  c.learning.tau = 30;
  if (s.metric_plugin != FuzzPlugIn::kNone) c.learning.metric_path = PlugInFile(s, s.metric_plugin);
  if (s.merge_plugin != FuzzPlugIn::kNone) {
    c.learning.robust.kind = training::RobustKind::kTorchScript;
    c.learning.merge_path = PlugInFile(s, s.merge_plugin);
  }
  if (s.sampler == SamplerKind::kDac && (emd || signatures)) {
    // Their scores are never > 0 (configs/README.md [learning] metric).
    c.learning.unscored = topology::UnscoredRule::kZero;
    c.learning.normalize = topology::ScoreNormalization::kMinMax;
  }
  c.round.sync = s.sync;
  c.round.round_deadline_s = s.round_deadline_s;
  c.round.linger_s = kLingerSeconds;
  c.compression.codec = s.codec;
  c.emd.enabled = emd;
  if (signatures) c.signature.k = 1;
  if (s.privacy) {
    c.privacy.enabled = true;
    c.privacy.noise_multiplier = 0.5;
    c.privacy.allow_data_exchanges = emd || signatures;
  }
  return c;
}

NameTable<FaultKind> FaultKindNames() {
  static constexpr NamedValue<FaultKind> kNames[] = {
      {"loss", FaultKind::kLoss},           {"corrupt", FaultKind::kCorrupt},
      {"truncate", FaultKind::kTruncate},   {"partition", FaultKind::kPartition},
      {"death", FaultKind::kDeath},         {"pause", FaultKind::kPause},
      {"slow", FaultKind::kSlow},           {"latency", FaultKind::kLatency},
      {"duplicate", FaultKind::kDuplicate}, {"write_fail", FaultKind::kWriteFail},
      {"disk_full", FaultKind::kDiskFull},  {"torn", FaultKind::kTorn}};
  return kNames;
}

NameTable<FuzzPlugIn> FuzzPlugInNames() {
  static constexpr NamedValue<FuzzPlugIn> kNames[] = {
      {"cos_weights", FuzzPlugIn::kCosWeights},
      {"last_layer", FuzzPlugIn::kLastLayer},
      {"misbehaving_metric", FuzzPlugIn::kMisbehavingMetric},
      {"fedavg", FuzzPlugIn::kFedAvg},
      {"geometric_median", FuzzPlugIn::kGeometricMedian},
      {"misbehaving_merge", FuzzPlugIn::kMisbehavingMerge}};
  return kNames;
}

bool Misbehaves(FuzzPlugIn plugin) {
  return plugin == FuzzPlugIn::kMisbehavingMetric || plugin == FuzzPlugIn::kMisbehavingMerge;
}

std::string DefaultPlugInDir() { return MESHLEARN_PLUGIN_EXAMPLES_DIR; }

FuzzScenario DrawScenario(uint64_t seed, const FuzzLimits& limits, const std::string& plugin_dir) {
  FuzzScenario s;
  s.seed = seed;
  s.plugin_dir = plugin_dir;
  DrawSize(s, limits);
  DrawMethod(s);
  DrawPlugIns(s, limits);
  DrawNodeFaults(s, limits);
  DrawNetworkFaults(s, limits);
  DrawStorageFaults(s, limits);
  return s;
}

bool DrawsMisbehavingPlugIn(const FuzzScenario& s) {
  return Misbehaves(s.metric_plugin) || Misbehaves(s.merge_plugin);
}

std::string PlugInFile(const FuzzScenario& s, FuzzPlugIn plugin) {
  return (std::filesystem::path(s.plugin_dir) /
          (std::string(NameOf(FuzzPlugInNames(), plugin)) + ".pt"))
      .string();
}

Status CheckPlugInFiles(const FuzzScenario& s) {
  for (FuzzPlugIn plugin : {s.metric_plugin, s.merge_plugin}) {
    if (plugin == FuzzPlugIn::kNone) continue;
    const std::string file = PlugInFile(s, plugin);
    std::error_code ec;
    if (std::filesystem::is_regular_file(file, ec)) continue;
    return Status::NotFound(
        "seed " + std::to_string(s.seed) + " draws the plug-in " +
        std::string(NameOf(FuzzPlugInNames(), plugin)) + ", but " + file +
        " does not exist: a build with tests saves the worked examples there (cmake --build "
        "build --target meshlearn_plugin_examples), or --plugins names the folder that holds "
        "them (or --no-plugins runs the seeds without)");
  }
  return Status::Ok();
}

std::string DescribeScenario(const FuzzScenario& s) {
  std::ostringstream out;
  out << s.nodes << " nodes, " << s.rounds << " rounds, " << s.clusters << " clusters, "
      << NameOf(topology::SamplerKindNames(), s.sampler);
  if (s.sampler == SamplerKind::kDac) out << '/' << NameOf(similarity::MetricKindNames(), s.metric);
  if (s.metric_plugin != FuzzPlugIn::kNone) {
    out << '(' << NameOf(FuzzPlugInNames(), s.metric_plugin) << ".pt)";
  }
  out << ' ' << NameOf(training::AggregationKindNames(), s.aggregation);
  if (s.merge_plugin != FuzzPlugIn::kNone) {
    out << " robust=torchscript(" << NameOf(FuzzPlugInNames(), s.merge_plugin) << ".pt)";
  }
  out << (s.sync ? " sync" : " async");
  if (s.codec != CompressionCodec::kNone) out << ' ' << NameOf(CompressionCodecNames(), s.codec);
  if (s.privacy) out << " dp";
  if (s.security) out << " curve";
  if (s.known_peers > 0) out << " known-peers=" << s.known_peers;
  out << "; faults: " << FaultKindList(s.kinds);
  if (s.loss > 0) out << " loss=" << s.loss;
  if (s.corrupt > 0) out << " corrupt=" << s.corrupt;
  if (s.truncate > 0) out << " truncate=" << s.truncate;
  if (s.duplicate > 0) out << " duplicate=" << s.duplicate;
  if (s.write_fail > 0) out << " write_fail=" << s.write_fail;
  if (s.disk_full > 0) out << " disk_full=" << s.disk_full;
  if (s.torn > 0) out << " torn=" << s.torn;
  return out.str();
}

std::string ScenarioToml(const FuzzScenario& s) {
  toml::array sizes;
  for (int c = 0; c < s.clusters; ++c) {
    sizes.push_back(s.nodes / s.clusters + (c < s.nodes % s.clusters ? 1 : 0));
  }
  toml::table root{
      {"name", "fuzz-" + std::to_string(s.seed)},
      {"description", DescribeScenario(s)},
      {"seed", static_cast<int64_t>(s.seed % (uint64_t{1} << 62))},
      {"security", s.security},
      {"data", toml::table{{"dataset", "synthetic"},
                           {"clients", s.nodes},
                           {"cluster_sizes", std::move(sizes)},
                           {"train_per_client", 50},
                           {"validation_per_client", 50},
                           {"test_per_client", 50}}},
      {"node", ChangedNodeKeys(node::NodeConfig{}, NodeSettings(s))},
      {"network", NetworkSection(s)},
  };
  std::ostringstream out;
  out << "# meshlearn-launch fuzz, seed " << s.seed << ": " << DescribeScenario(s) << "\n"
      << root << "\n";
  return out.str();
}

Result<std::set<FaultKind>> ParseFaultKinds(const std::string& list) {
  std::set<FaultKind> kinds;
  if (list == "none") return kinds;
  std::stringstream words(list);
  std::string word;
  while (std::getline(words, word, ',')) {
    auto kind = ValueNamed(FaultKindNames(), word);
    if (!kind) {
      std::string known;
      for (const std::string& name : NamesOf(FaultKindNames())) known += " " + name;
      return Status::InvalidArgument("--faults: '" + word +
                                     "' is not a fault kind (allowed:" + known + ", or none)");
    }
    kinds.insert(*kind);
  }
  return kinds;
}

std::string FaultKindList(const std::set<FaultKind>& kinds) {
  std::string list;
  for (FaultKind k : kinds)
    list += (list.empty() ? "" : ",") + std::string(NameOf(FaultKindNames(), k));
  return list.empty() ? "none" : list;
}

double LivenessBoundSeconds(const FuzzScenario& s) {
  const double round = s.round_compute_s * s.slow_factor + 3 * s.round_deadline_s + 1;
  double away = 0;
  for (const FuzzOutage& o : s.outages) {
    away += o.seconds;
    if (s.torn > 0 && !o.pause) away += static_cast<double>(o.after_round + 2) * round;
  }
  return static_cast<double>(s.rounds + 1) * round + away + kLingerSeconds + 60;
}

}  // namespace meshlearn::launch
