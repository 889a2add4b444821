#pragma once
// The scenarios of the fault fuzzer (`meshlearn-launch fuzz`, tools/fuzz/fuzz.h): each seed draws
// a small mesh, a method and fault rates, swarm style (each fault kind is on or off per seed, and
// its rate is drawn when on), and writes them as an ordinary scenario file that
// `meshlearn-launch FILE --simulate` also runs.
//
// Specification.
// - A scenario is a function of its seed alone, through the draws below; nothing else (the
//   machine, the time, other seeds) enters, but the plug-in folder's path (below). Every aspect
//   (size, method, plug-ins, each fault kind) draws from its own generator, seeded by
//   StableHash(aspect, seed). Rationale: a reduction (FuzzLimits) that caps the nodes or turns a
//   fault kind or the plug-ins off leaves every other draw as it was, so the smaller scenario is
//   the same failure with less around it.
// - Size: 3 to 40 nodes and 5 to 60 rounds, biased to small (3 + floor(37 u^3), 5 + floor(55 u^3)),
//   in 1 to 3 clusters of file 004's synthetic regression (the cheapest data that runs the real
//   learner, codec and host).
// - Method: DAC with one of its metrics (cos_weights, cos_grad, inv_l2, inv_loss), random or
//   oracle gossip, FLIC's louvain or OCFL's temperature policy; in a quarter of the seeds instead
//   (draws of its own) a method that exchanges what it draws from the data, with the MLP: the EMD
//   exchange (emd_cluster, or DAC with emd) or FLT's signatures (centroid_cluster, or DAC with
//   centroid); FedAvg or FedSim; sync or async rounds; a compression codec (none, fp16, int8, and
//   topk in a tenth of the seeds, from draws of its own); sometimes DP-SGD, CURVE security, or
//   only a few known peers.
// - Plug-ins, in a fifth of the seeds (draws of their own, "plugin"): the worked examples of
//   plugins/examples/ that the build saves (docs/plugins.md), found in the scenario's plugin
//   folder: for DAC with a metric computed from the models (not emd or centroid) a plug-in
//   metric (cos_weights, or in a third of them last_layer, which on the linear model's 11 floats
//   is the whole model), and/or, with any method, a plug-in merge rule (fedavg or
//   geometric_median); in a third of those seeds one of them is replaced by its misbehaving
//   twin (misbehaving_metric: every 4th call fails; misbehaving_merge: every 3rd; in turn with
//   NaN, a wrong size and an exception). Rationale: a seed replays only if its plug-in fails on
//   the same calls every run, so a misbehaving plug-in counts its calls rather than drawing.
//   The folder is where the files are, not a draw: it enters only the paths of the scenario
//   file, and a seed that draws no plug-in writes the same file as before plug-ins were drawn.
// - Faults, each kind on with probability 1/2: message loss (up to 30%), corrupt and truncated
//   frames (up to 10% each), partitions into two groups (symmetric, or one-way in a third of the
//   seeds that draw one) that heal before the last round, deaths
//   with restart from the checkpoint, pauses longer than the round deadline, slow nodes (2-10x),
//   latency with a spread per node (which reorders messages between links), duplicated messages
//   (up to 10%), and storage faults through the simulated world (sim/storage_faults.h): failed
//   writes (up to 5% of writes), full disks (up to 10% of flushes) and torn checkpoints (10% to
//   all of the checkpoints written by dying nodes).

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"
#include "node/config/config.h"
#include "protocol/compression.h"
#include "similarity/metric.h"
#include "topology/sampler_factory.h"
#include "training/aggregation.h"

namespace meshlearn::launch {

// A kind of fault a fuzz scenario may inject.
enum class FaultKind {
  kLoss,       // messages lost
  kCorrupt,    // a message's body damaged
  kTruncate,   // a message's last frame cut
  kPartition,  // two groups cut off from each other for some rounds, then healed
  kDeath,      // a node dies and restarts from its checkpoint
  kPause,      // a node stops for longer than the round deadline, then continues
  kSlow,       // some nodes compute several times slower
  kLatency,    // link latency, with a spread per node
  kDuplicate,  // a message arrives twice
  kWriteFail,  // a write of a node's outputs fails
  kDiskFull,   // a node's disk is full when it writes its outputs
  kTorn,       // the checkpoint a dying node writes is torn
};

// The config name of every FaultKind, in documentation order.
NameTable<FaultKind> FaultKindNames();

// A plug-in a fuzz scenario may run: a worked example of plugins/examples/, the file
// "<name>.pt" of its FuzzPlugInNames() name in the scenario's plugin folder.
enum class FuzzPlugIn {
  kNone,
  kCosWeights,         // metric cos_weights.py
  kLastLayer,          // metric layer_cosine.py --start -650
  kMisbehavingMetric,  // metric misbehaving.py --point metric --every 4
  kFedAvg,             // merge fedavg.py
  kGeometricMedian,    // merge geometric_median.py
  kMisbehavingMerge,   // merge misbehaving.py --point merge --every 3
};

// The file name (without ".pt") of every FuzzPlugIn but kNone.
NameTable<FuzzPlugIn> FuzzPlugInNames();

// Whether `plugin` fails some of its calls on purpose (the misbehaving ones).
bool Misbehaves(FuzzPlugIn plugin);

// The folder this build saves the worked examples in (MESHLEARN_PLUGIN_EXAMPLES_DIR, compiled in;
// an absolute path).
std::string DefaultPlugInDir();

// Caps on a drawn scenario (a reduction, or the command line's --nodes, --rounds, --faults,
// --no-plugins).
struct FuzzLimits {
  std::optional<int> nodes;                  // at most this many nodes (at least 3)
  std::optional<int64_t> rounds;             // at most this many rounds (at least 1)
  std::optional<std::set<FaultKind>> kinds;  // only these fault kinds (nullopt: any)
  bool plugins = true;                       // false: no plug-in, whatever the seed draws
};

// One outage of a fuzz scenario.
struct FuzzOutage {
  int node = 0;
  bool pause = false;  // else a death
  int64_t after_round = 0;
  double seconds = 0;
};

// One partition of a fuzz scenario: nodes [0, nodes) split into `group_a` and the rest.
struct FuzzPartition {
  std::vector<int> group_a;
  int64_t from_round = 0;
  int64_t to_round = 0;  // exclusive, at most the last round: it heals before the end
  bool one_way = false;  // only messages from group_a to the rest are lost
};

// What one seed runs.
struct FuzzScenario {
  uint64_t seed = 0;
  int nodes = 3;
  int clusters = 1;
  int64_t rounds = 5;
  // Method.
  // dac, random, oracle, louvain (FLIC), temperature (OCFL), emd_cluster (the EMD exchange) or
  // centroid_cluster (FLT); dac's metric may also be emd or centroid.
  topology::SamplerKind sampler = topology::SamplerKind::kDac;
  similarity::MetricKind metric = similarity::MetricKind::kCosWeights;
  training::AggregationKind aggregation = training::AggregationKind::kFedAvg;
  int peers_per_round = 1;
  bool sync = true;
  CompressionCodec codec = CompressionCodec::kNone;
  bool privacy = false;
  bool security = false;
  int known_peers = 0;  // 0: every node knows every other
  double round_deadline_s = 5;
  double round_compute_s = 1;
  // Plug-ins: metric_plugin with metric kTorchScript, merge_plugin with [learning] robust =
  // "torchscript" (kNone: built in); their files are in plugin_dir (not drawn: where they are).
  FuzzPlugIn metric_plugin = FuzzPlugIn::kNone;
  FuzzPlugIn merge_plugin = FuzzPlugIn::kNone;
  std::string plugin_dir;
  // Faults (zero or empty when their kind is off).
  std::set<FaultKind> kinds;
  double loss = 0, corrupt = 0, truncate = 0, duplicate = 0;
  double write_fail = 0, disk_full = 0, torn = 0;
  double latency_ms = 0, latency_sigma = 0;
  int slow_count = 0;
  double slow_factor = 1;
  std::vector<FuzzOutage> outages;
  std::vector<FuzzPartition> partitions;
};

// The scenario of `seed` under `limits` (see the specification), its plug-ins' files in
// `plugin_dir`.
FuzzScenario DrawScenario(uint64_t seed, const FuzzLimits& limits = {},
                          const std::string& plugin_dir = DefaultPlugInDir());

// Whether `s` runs a plug-in that fails some of its calls on purpose (Misbehaves).
bool DrawsMisbehavingPlugIn(const FuzzScenario& s);

// The file of `plugin` (not kNone) in `s`'s plugin folder.
std::string PlugInFile(const FuzzScenario& s, FuzzPlugIn plugin);

// Ok when the file of every plug-in `s` drew exists; else kNotFound naming the seed, the
// plug-in, the file, and how to save it or name another folder (--plugins).
Status CheckPlugInFiles(const FuzzScenario& s);

// One line describing `s`: nodes, rounds, method and the faults with their rates.
std::string DescribeScenario(const FuzzScenario& s);

// The node settings every node of `s` runs with (the scenario's [node] template), as a value.
node::NodeConfig NodeSettings(const FuzzScenario& s);

// The scenario file of `s` (TOML, configs/README.md "Scenario"), with [network] for --simulate;
// its [node] template holds the keys in which NodeSettings(s) differs from the defaults, written
// by the node's own key writer.
std::string ScenarioToml(const FuzzScenario& s);

// Parses a --faults list ("loss,death" or "none") into fault kinds; kInvalidArgument naming the
// word that is not one, and the kinds there are.
Result<std::set<FaultKind>> ParseFaultKinds(const std::string& list);

// The fault kinds `kinds` as a --faults list ("none" when empty).
std::string FaultKindList(const std::set<FaultKind>& kinds);

// The simulated seconds within which every node of `s` must have finished its rounds: (rounds + 1)
// x R + the outages' seconds + the linger time + 60 s, where R = the slowest node's
// round_compute_s + 3 x round_deadline_s + 1 s; with torn checkpoints, each death adds
// (after_round + 2) x R (a node restarted clean does its rounds again).
double LivenessBoundSeconds(const FuzzScenario& s);

}  // namespace meshlearn::launch
