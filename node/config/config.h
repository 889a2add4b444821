#pragma once
// The node config file (TOML, read with toml++). Every key, its default and what it allows is
// documented in configs/README.md; this header holds the parsed form, one struct per section.
//
// Unknown keys and bad values are rejected when the node starts, with a message that names the
// file, the line, the key, the value and what is allowed. A config never half-loads.
//
// One description per section. Each section struct declares its keys once, in a static
// `Describe(keys, section)`: the key's name, the member it fills (whose initializer is the
// default) and what it allows (a range, a name table). The reader (ParseNodeConfig) and the
// writer (RenderNodeConfig) both run that description, with a `keys` object that reads a TOML
// table into `section` or writes `section` out as TOML (node/config/config_keys.h), so parsing
// and rendering cannot drift apart. A `keys` object offers one call per kind of key:
//   NodeId(name, s)                      a node id (protocol/wire_text.h); required
//   Endpoint(name, s, use)               "tcp://host:port" (EndpointUse says whose and if required)
//   String(name, s, need, written)       any string; with kUnlessDefault, unwritten when empty
//   PublicKey(name, s)                   a Z85 CURVE public key; optional, unwritten when empty
//   PublicKeyList(name, v)               an array of them, each optionally "<key> <node id>"
//   Choice(name, e, names)               one of a NameTable's names
//   Integer(name, i, min, max, written)  an integer in [min, max]
//   Number(name, d, min, max, bound)     a number in [min, max] or (min, max]
//   OptionalNumber(name, o)              any finite number; unwritten when absent
//   PositiveNumber(name, o, max)         a number in (0, max]; unwritten when absent
//   NumberOrWord(name, o, word, min, max)  a number in [min, max], or `word` for nullopt
//   Port(name, o)                        a port in [0, 65535]; unwritten when absent
//   Bool(name, b)                        true or false
//   ClusterIds(name, v)                  a sub-table of node id = cluster id; unwritten when empty
//   NodeIdList(name, v)                  an array of node ids; unwritten when empty
//   Edges(name, v)                       an array of [id, id] pairs; unwritten when empty
//   Section(name, s, written)            a section, by its Describe (and its Check, if any)
//   OptionalSection(name, o)             a section that may be absent
//   Peers(name, v)                       an array of tables of peers ([[peers]])
// Rules that tie keys of several sections together are checked after reading
// (ParseNodeConfig); a section's own cross-key rules are its Check(file).
//
// The state machine's settings are built by the sections that own them (RoundSection::Driver,
// EmdSection::Exchange, ...; NodeConfig::Machine composes them), so the node host copies no
// field.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"
#include "node/config/logging.h"
#include "node/logic/learner.h"
#include "node/logic/peer_address.h"
#include "node/logic/sampler_attacks.h"
#include "node/logic/state_machine.h"
#include "protocol/compression.h"
#include "protocol/version.h"
#include "similarity/cluster_policy.h"
#include "similarity/emd.h"
#include "similarity/metric.h"
#include "topology/sampler_factory.h"
#include "training/aggregation.h"
#include "training/model.h"
#include "training/robust_merge.h"
#include "training/staleness.h"
#include "training/trainer.h"

namespace meshlearn::node {

// Whether a key must be present.
enum class Need { kOptional, kRequired };
// Which endpoint a key holds: the node's own (any interface or port; required), a peer's
// (required), or the advertised one (optional; unwritten when empty); and, optional and unwritten
// when empty, one more the node binds (any interface or port) or dials.
enum class EndpointUse { kListen, kPeer, kAdvertise, kOptionalListen, kOptionalPeer };
// True for the uses whose key may be absent (and is unwritten when empty).
constexpr bool IsOptional(EndpointUse use) {
  return use == EndpointUse::kAdvertise || use == EndpointUse::kOptionalListen ||
         use == EndpointUse::kOptionalPeer;
}
// Whether the writer writes a key or section always, or only when it differs from its default.
// The writer knows a section's default (a default-constructed one) but not a key's: an integer
// written kUnlessDefault is left out when it holds the value its description names as unwritten
// (0 unless it names another), which must therefore be its default.
enum class Written { kAlways, kUnlessDefault };
// Whether a number's lower bound is allowed itself.
enum class Bound { kClosed, kOpen };

// [data]
struct DataSection {
  std::string shard;  // required: the node's shard file (training/shard_file.h format)

  bool operator==(const DataSection&) const = default;
  // The keys of [data] (see "One description per section" above).
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.String("shard", s.shard, Need::kRequired);
  }
};

// [model]
struct ModelSection {
  training::Architecture architecture = training::Architecture::kMlp;
  int64_t hidden = 200;          // mlp hidden width
  std::string torchscript_path;  // torchscript only

  bool operator==(const ModelSection&) const = default;
  // The keys of [model].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Choice("architecture", s.architecture, training::ArchitectureNames());
    keys.Integer("hidden", s.hidden, 1, 1 << 20);
    keys.String("torchscript_path", s.torchscript_path);
  }
};

// What an early-stopped node serves ([training] stopped_serves; node/learner/local_trainer.h).
enum class StoppedServes {
  kBest,  // "best": its best-validation weights (meshlearn's rule)
  kLast,  // "last": its last trained weights (file 004's code, for its Oracle)
};

// The config names of StoppedServes.
NameTable<StoppedServes> StoppedServesNames();

// [training]
struct TrainingSection {
  training::OptimizerKind optimizer = training::OptimizerKind::kAdam;
  double learning_rate = 3e-4;
  double momentum = 0;
  double weight_decay = 0;
  int64_t batch_size = 8;
  int local_epochs = 1;
  int64_t rounds = 50;
  int patience = 50;
  StoppedServes stopped_serves = StoppedServes::kBest;
  training::LossMean loss_mean = training::LossMean::kSamples;

  bool operator==(const TrainingSection&) const = default;
  // The keys of [training].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Choice("optimizer", s.optimizer, training::OptimizerKindNames());
    keys.Number("learning_rate", s.learning_rate, 0, 10, Bound::kOpen);
    keys.Number("momentum", s.momentum, 0, 1);
    keys.Number("weight_decay", s.weight_decay, 0, 1);
    keys.Integer("batch_size", s.batch_size, 1, 1 << 20);
    keys.Integer("local_epochs", s.local_epochs, 1, 10000);
    keys.Integer("rounds", s.rounds, 0, 1000000);
    keys.Integer("patience", s.patience, 1, 1000000);
    keys.Choice("stopped_serves", s.stopped_serves, StoppedServesNames());
    keys.Choice("loss_mean", s.loss_mean, training::LossMeanNames());
  }
};

// [learning]
struct LearningSection {
  similarity::MetricKind metric = similarity::MetricKind::kCosWeights;
  std::string metric_path;  // metric torchscript: the module's file (plugins/script_metric.h)
  topology::SamplerKind sampler = topology::SamplerKind::kDac;
  double tau = 30;
  topology::TauSchedule tau_schedule = topology::TauSchedule::kConstant;
  topology::UnscoredRule unscored = topology::UnscoredRule::kExclude;
  topology::ScoreNormalization normalize = topology::ScoreNormalization::kNone;
  topology::TwoHopRule two_hop = topology::TwoHopRule::kLargest;
  topology::TwoHopRow two_hop_row = topology::TwoHopRow::kAll;
  topology::TwoHopCap two_hop_cap = topology::TwoHopCap::kOff;
  int64_t explore_rounds = 0;
  int peers_per_round = 5;  // m
  training::AggregationKind aggregation = training::AggregationKind::kFedAvg;
  std::optional<double> merge_min_score;  // off when absent
  // The robust merge ([learning] robust and its parameters; training/robust_merge.h, whose
  // RobustOptions owns their defaults). clip_tau "auto" (adaptive) is an empty clip_tau.
  training::RobustOptions robust;
  std::string merge_path;  // robust torchscript: the module's file (plugins/script_merge.h)
  // Staleness-aware merge weights ([learning] staleness and its parameters; training/staleness.h,
  // whose StalenessOptions owns the parameters' defaults). On by default, polynomial:
  // docs/results.md "Stragglers and churn" (every async run gained).
  training::StalenessOptions staleness = {training::StalenessKind::kPolynomial};
  std::vector<std::pair<std::string, int>> clusters;  // [learning.clusters]: id -> cluster (oracle)
  topology::GraphKind graph = topology::GraphKind::kNone;  // a fixed graph (topology/fixed_graph.h)
  std::vector<topology::GraphEdge> edges;                  // graph = "edges"

  bool operator==(const LearningSection&) const = default;
  // The keys of [learning] and [learning.clusters].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Choice("metric", s.metric, similarity::MetricKindNames());
    keys.String("metric_path", s.metric_path, Need::kOptional, Written::kUnlessDefault);
    keys.Choice("sampler", s.sampler, topology::SamplerKindNames());
    keys.Number("tau", s.tau, 0, 1e6);
    keys.Choice("tau_schedule", s.tau_schedule, topology::TauScheduleNames());
    keys.Choice("unscored", s.unscored, topology::UnscoredRuleNames());
    keys.Choice("normalize", s.normalize, topology::ScoreNormalizationNames());
    keys.Choice("two_hop", s.two_hop, topology::TwoHopRuleNames());
    keys.Choice("two_hop_row", s.two_hop_row, topology::TwoHopRowNames());
    keys.Choice("two_hop_cap", s.two_hop_cap, topology::TwoHopCapNames());
    keys.Integer("explore_rounds", s.explore_rounds, 0, 1000000);
    keys.Integer("peers_per_round", s.peers_per_round, 0, 100000);
    keys.Choice("aggregation", s.aggregation, training::AggregationKindNames());
    keys.OptionalNumber("merge_min_score", s.merge_min_score);
    keys.Choice("robust", s.robust.kind, training::RobustKindNames());
    keys.NumberOrWord("clip_tau", s.robust.clip_tau, "auto", 0, 1e12);
    keys.Number("clip_share", s.robust.clip_share, 0, 1);
    keys.Integer("trim", s.robust.trim, 0, 100000);
    keys.Integer("krum_f", s.robust.krum_f, 0, 100000);
    keys.Integer("krum_m", s.robust.krum_m, 0, 100000);
    keys.Number("gate_gamma", s.robust.gate_gamma, 0, 1e6);
    keys.String("merge_path", s.merge_path, Need::kOptional, Written::kUnlessDefault);
    keys.Choice("staleness", s.staleness.kind, training::StalenessKindNames());
    keys.Number("staleness_a", s.staleness.a, 0, 100);
    keys.Number("staleness_b", s.staleness.b, 0, 1e6);
    keys.Choice("graph", s.graph, topology::GraphKindNames());
    keys.Edges("edges", s.edges);
    keys.ClusterIds("clusters", s.clusters);
  }

  // True when the metric or the sampler needs the peers' data signatures.
  bool UsesSignatures() const {
    return metric == similarity::MetricKind::kCentroid ||
           sampler == topology::SamplerKind::kCentroidCluster;
  }
  // The clustering policy the sampler runs on the node (louvain: FLIC, temperature: OCFL), or
  // nullopt for the other samplers.
  std::optional<similarity::ClusterPolicyKind> ClusterPolicy() const {
    if (sampler == topology::SamplerKind::kLouvain) return similarity::ClusterPolicyKind::kLouvain;
    if (sampler == topology::SamplerKind::kTemperature) {
      return similarity::ClusterPolicyKind::kTemperature;
    }
    return std::nullopt;
  }
  // The sampler of node `self` in the mesh `members` (every node, self included; read only with
  // a graph) (topology/sampler_factory.h).
  topology::SamplerConfig Sampler(const std::string& self,
                                  std::vector<std::string> members = {}) const;
};

// The config names of what a resting node does ([round] resting).
NameTable<RestingRule> RestingRuleNames();

// The default of [round] shuffle_length (node/logic/membership.h); unwritten when it holds it,
// so that a config renders as before the key existed.
inline constexpr int64_t kDefaultShuffleLength = 8;

// [round]
struct RoundSection {
  bool sync = true;
  double round_deadline_s = 10;
  int dead_after_failures = 3;
  double linger_s = 5;     // keep serving this long after the last round
  double min_round_s = 0;  // a round lasts at least this long (pacing)
  uint64_t max_message_bytes = 256ull << 20;
  // The protocol version the node announces, kMinProtocolVersion..kProtocolVersion; 0: this
  // build's (kProtocolVersion). For interoperability tests only: a lower one makes the node talk
  // as an older node would (no Goodbye below 2, no compressed models below 3).
  int max_protocol_version = 0;
  // What an early-stopped node does in its remaining rounds (node/logic/round_driver.h).
  RestingRule resting = RestingRule::kSilent;
  // Candidates kept from one source's PeerLists (node/logic/membership.h).
  int64_t max_candidates_per_source = 64;
  // The bounded view (node/logic/membership.h): at most this many verified peers; 0 (the
  // default): full membership (up to 4096).
  int64_t view_size = 0;
  // Bounded view: the entries of a shuffle's PeerList and of its answer, the sender included.
  int64_t shuffle_length = kDefaultShuffleLength;

  bool operator==(const RoundSection&) const = default;
  // The keys of [round].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Bool("sync", s.sync);
    keys.Choice("resting", s.resting, RestingRuleNames());
    keys.Number("round_deadline_s", s.round_deadline_s, 0, 86400, Bound::kOpen);
    keys.Integer("dead_after_failures", s.dead_after_failures, 1, 1000);
    keys.Integer("max_candidates_per_source", s.max_candidates_per_source, 1, 1024);
    keys.Integer("view_size", s.view_size, 0, 4096, Written::kUnlessDefault);
    keys.Integer("shuffle_length", s.shuffle_length, 2, 64, Written::kUnlessDefault,
                 kDefaultShuffleLength);
    keys.Number("linger_s", s.linger_s, 0, 86400);
    keys.Number("min_round_s", s.min_round_s, 0, 86400);
    keys.Integer("max_message_bytes", s.max_message_bytes, 1024, int64_t{1} << 40);
    keys.Integer("max_protocol_version", s.max_protocol_version, 0, kProtocolVersion,
                 Written::kUnlessDefault);
  }

  // The protocol version the node announces (max_protocol_version, or this build's).
  uint16_t ProtocolVersion() const;

  // round_deadline_s: how long a request to a peer may take.
  Clock::duration Deadline() const;
  // The round driver's settings: these, with m of `learning` (and whether its sampler fetches
  // updates) and the planned rounds of `training`.
  RoundConfig Driver(const LearningSection& learning, const TrainingSection& training) const;
  // Serving's settings for a node serving models of `layout` trained on `train_size` samples.
  ServingConfig Serving(const ParamLayout& layout, uint64_t train_size) const;
};

// [compression] (a scenario's [node.compression]): how the node's model travels to the peers
// that accept it (PROTOCOL.md, "Compressed models"), and how its projected embeddings of the EMD
// exchange travel ("Compressed embeddings"); peers of protocol version 2 and older always get
// float32. The codecs are protocol/compression.h's.
// Rationale for a key of its own for embeddings: the model codec changes every merge of a run,
// the embedding codec only the one-shot EMD measurement; a run compares one without the other.
struct CompressionSection {
  CompressionCodec codec = CompressionCodec::kNone;
  int block_size = kDefaultInt8BlockSize;  // int8 (and top-k's int8 values): values per scale
  double topk_fraction = 0.01;             // top-k: the share of coordinates sent, in (0, 1]
  CompressionCodec topk_values = CompressionCodec::kInt8;  // top-k: how kept values are stored
  // The most peers whose public estimates the node keeps to decode their top-k replies; 0: the
  // node does not accept topk (its peers send it float32 instead).
  int peer_estimates = 64;
  // top-k: γ in [0, 1], the share of its own estimate's lag (x_i − x̂_i) a node adds to every
  // peer estimate it merges: CHOCO-gossip's consensus step (node/logic/round_driver.h).
  double consensus_step = 0.5;
  CompressionCodec embeddings = CompressionCodec::kNone;  // the EMD exchange's projected rows

  bool operator==(const CompressionSection&) const = default;
  // The keys of [compression].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Choice("codec", s.codec, CompressionCodecNames());
    keys.Choice("embeddings", s.embeddings, CompressionCodecNames());
    keys.Integer("block_size", s.block_size, kMinInt8BlockSize, kMaxInt8BlockSize);
    keys.Number("topk_fraction", s.topk_fraction, 0, 1, Bound::kOpen);
    keys.Choice("topk_values", s.topk_values, CompressionCodecNames());
    keys.Integer("peer_estimates", s.peer_estimates, 0, 100000);
    keys.Number("consensus_step", s.consensus_step, 0, 1);
  }
  // kInvalidArgument, prefixed with `file`, for embeddings "topk" (embeddings travel whole) and
  // for topk_values other than fp16 and int8.
  Status Check(const std::string& file) const;

  // The model server's settings.
  CompressionSettings Settings() const;
  // The EMD exchange's settings for its rows: the embeddings codec with block_size.
  CompressionSettings EmbeddingSettings() const;
};

// [emd]: the EMD embedding exchange (DESIGN.md "EMD embedding exchange").
struct EmdSection {
  bool enabled = false;
  // Accept j when EMD_ij - ref_i < epsilon; empty ("auto"): each node decides with the automatic
  // rule over its measurements (similarity::AutomaticThreshold).
  std::optional<double> epsilon;
  similarity::EmdSolverKind solver = similarity::EmdSolverKind::kExact;
  int max_samples = 512;
  double proj_ratio = 0.9;
  int64_t refresh = 0;      // 0: once after round 0; R: every R rounds
  int peers_per_round = 0;  // 0: every active peer at once
  bool witness = false;     // a random third peer measures each EMD (witness mode)

  bool operator==(const EmdSection&) const = default;
  // The keys of [emd].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Bool("enabled", s.enabled);
    keys.NumberOrWord("epsilon", s.epsilon, "auto", -10, 10);
    keys.Choice("solver", s.solver, similarity::EmdSolverKindNames());
    keys.Integer("max_samples", s.max_samples, 1, 4096);
    keys.Number("proj_ratio", s.proj_ratio, 0, 1, Bound::kOpen);
    keys.Integer("refresh", s.refresh, 0, 1000000);
    keys.Integer("peers_per_round", s.peers_per_round, 0, 100000);
    keys.Bool("witness", s.witness);
  }

  // The EMD exchange's settings: these, with what `learning`'s metric and sampler take from it
  // and `round`'s deadline, for a node whose models have `layout` and whose Hello nonce is
  // `nonce`.
  EmdExchangeConfig Exchange(const LearningSection& learning, const RoundSection& round,
                             const ParamLayout& layout, uint64_t nonce) const;
};

// [attack] kind: robustness experiments only (node/learner/poisoned_learner.h; configs/README.md
// "[attack]" says what each needs).
enum class AttackKind {
  kNone,         // "none": an honest node
  kSignFlip,     // "sign_flip": serves -w
  kNoise,        // "noise": serves Gaussian values with w's root mean square
  kLabelFlip,    // "label_flip": trains honestly on flipped labels, serves what it trained
  kScaling,      // "scaling": serves scale * w
  kAlie,         // "alie": serves mu - z * sigma of the models it fetched and its own
  kIpm,          // "ipm": serves -epsilon * their mean
  kDissensus,    // "dissensus": serves w + epsilon * (w - the fetched models' mean)
  kFreeRider,    // "free_rider": never trains, serves a stale model
  kMimic,        // "mimic": serves a copy of one honest peer's model
  kScoreLie,     // "score_lie": gossips score rows that promote its allies, demote the others
  kSybil,        // "sybil": announces made-up identities in its PeerLists
  kTorchScript,  // "torchscript": serves what a user's module returns (plugins/script_attack.h)
};

// The config names of the attack kinds, in documentation order.
NameTable<AttackKind> AttackKindNames();

// What a free rider serves ([attack] stale).
enum class StaleModel {
  kInitial,  // "initial": the shared initial model
  kFetched,  // "fetched": a copy of the last model it fetched
};

// The config names of StaleModel.
NameTable<StaleModel> StaleModelNames();

// The config names of SybilAddress ([attack] sybil_address).
NameTable<SybilAddress> SybilAddressNames();

// [attack]: robustness experiments only. Each kind reads only its own parameters.
struct AttackSection {
  AttackKind kind = AttackKind::kNone;
  double scale = 10;                        // scaling: lambda
  double alie_z = 1;                        // alie: z
  double ipm_epsilon = 0.1;                 // ipm: epsilon (ClippedGossip's code uses 0.1)
  double dissensus_epsilon = 1.5;           // dissensus: epsilon (> 1 reverses a receiver's pull)
  StaleModel stale = StaleModel::kInitial;  // free_rider
  std::string target;  // mimic: the peer to copy; empty: the first it fetches (smallest id)
  std::vector<std::string> allies;  // score_lie: the ids it promotes (the launcher's attackers)
  int sybils = 100;                 // sybil: made-up identities it announces
  SybilAddress sybil_address = SybilAddress::kSelf;  // sybil: where they listen
  std::string attack_path;  // torchscript: the module's file (plugins/script_attack.h)

  bool operator==(const AttackSection&) const = default;
  // True for the attacks that serve poisoned models (node/learner/poisoned_learner.h); false
  // for an honest node and for the sampler attacks, which train and serve honestly.
  bool PoisonsModels() const {
    return kind != AttackKind::kNone && kind != AttackKind::kScoreLie && kind != AttackKind::kSybil;
  }
  // The keys of [attack].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Choice("kind", s.kind, AttackKindNames());
    keys.Number("scale", s.scale, -1e6, 1e6);
    keys.Number("alie_z", s.alie_z, 0, 100);
    keys.Number("ipm_epsilon", s.ipm_epsilon, 0, 1e6);
    keys.Number("dissensus_epsilon", s.dissensus_epsilon, 0, 1e6);
    keys.Choice("stale", s.stale, StaleModelNames());
    keys.String("target", s.target, Need::kOptional, Written::kUnlessDefault);
    keys.NodeIdList("allies", s.allies);
    keys.Integer("sybils", s.sybils, 0, 4000);
    keys.Choice("sybil_address", s.sybil_address, SybilAddressNames());
    keys.String("attack_path", s.attack_path, Need::kOptional, Written::kUnlessDefault);
  }
};

// [clustering]: the louvain (FLIC) and temperature (OCFL) samplers' policy
// (similarity/cluster_policy.h).
struct ClusteringSection {
  int64_t cluster_after = 5;    // no clustering before this round
  int64_t recluster_every = 5;  // louvain: recluster period; 0 = once
  similarity::ClusterAlgorithm algorithm = similarity::ClusterAlgorithm::kAgglomerative;
  double distance_threshold = 0.3;  // agglomerative: merge below this 1 - cos
  similarity::Linkage linkage = similarity::Linkage::kAverage;

  bool operator==(const ClusteringSection&) const = default;
  // The keys of [clustering].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Integer("cluster_after", s.cluster_after, 0, 1000000);
    keys.Integer("recluster_every", s.recluster_every, 0, 1000000);
    keys.Choice("algorithm", s.algorithm, similarity::ClusterAlgorithmNames());
    keys.Number("distance_threshold", s.distance_threshold, 0, 2, Bound::kOpen);
    keys.Choice("linkage", s.linkage, similarity::LinkageNames());
  }
};

// [signature]: FLT's data signatures (similarity/centroid_signature.h), exchanged when
// LearningSection::UsesSignatures().
struct SignatureSection {
  int k = 5;               // k-means centroids per node
  double threshold = 1.0;  // peers closer than this are related (hard clusters)
  int max_samples = 512;   // training samples embedded for the centroids

  bool operator==(const SignatureSection&) const = default;
  // The keys of [signature].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Integer("k", s.k, 1, 1024);
    keys.Number("threshold", s.threshold, 0, 1e12, Bound::kOpen);
    keys.Integer("max_samples", s.max_samples, 1, 4096);
  }

  // The signature exchange's settings: this threshold, with what `learning`'s metric and sampler
  // take from it and `round`'s deadline, for a node whose own signature is `own`.
  SignatureConfig Exchange(const LearningSection& learning, const RoundSection& round,
                           const ProjectedEmbeddings& own) const;
};

// [privacy]: record-level differential privacy of the node's training data by DP-SGD
// (training/dp_sgd.h), accounted with training/rdp_accountant.h (docs/privacy.md).
struct PrivacySection {
  bool enabled = false;
  // Exactly one of these when enabled: σ directly, or the ε the whole run may spend, from which
  // σ is derived for (rounds + 1) × local_epochs × ceil(N / batch_size) steps.
  std::optional<double> noise_multiplier;
  std::optional<double> target_epsilon;
  double delta = 1e-5;       // the δ of every reported ε
  double max_grad_norm = 1;  // C: per-sample gradients are clipped to this norm
  // Set: the node stops training (and merging) before a round would take ε past it, and keeps
  // serving its best-validation model (or its last one), like early stopping.
  std::optional<double> max_epsilon;
  // [emd] and FLT signatures publish values computed from the data without DP; a config that
  // combines them with [privacy] is refused unless this is true (it is then in node.toml).
  bool allow_data_exchanges = false;
  bool operator==(const PrivacySection&) const = default;

  // The keys of [privacy].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Bool("enabled", s.enabled);
    keys.PositiveNumber("noise_multiplier", s.noise_multiplier, 1e4);
    keys.PositiveNumber("target_epsilon", s.target_epsilon, 1e4);
    keys.Number("delta", s.delta, 0, 0.1, Bound::kOpen);
    keys.Number("max_grad_norm", s.max_grad_norm, 0, 1e6, Bound::kOpen);
    keys.PositiveNumber("max_epsilon", s.max_epsilon, 1e6);
    keys.Bool("allow_data_exchanges", s.allow_data_exchanges);
  }
};

// [relay]: relays for nodes behind NAT (node/transport/relay.h, docs/lan.md "Relays for nodes
// behind NAT"). A reachable node may serve as a relay; a node that cannot accept connections
// registers at one and advertises the port the relay gives it. Written only when set.
struct RelaySection {
  // Where nodes behind NAT register, e.g. "tcp://0.0.0.0:6000"; empty: this node is no relay.
  std::string serve_at;
  // The host the relayed nodes' ports are advertised with; empty: the host of this node's
  // advertised (or listen) endpoint.
  std::string public_host;
  int max_clients = 16;   // relayed nodes at once
  int max_circuits = 64;  // connections carried per relayed node
  // The control endpoint of the relay this node registers at (it is behind NAT); empty: none.
  std::string via;
  // CURVE: the relay's public key; required with [security] and `via`.
  std::string via_public_key;
  bool operator==(const RelaySection&) const = default;

  // The keys of [relay].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Endpoint("serve_at", s.serve_at, EndpointUse::kOptionalListen);
    keys.String("public_host", s.public_host, Need::kOptional, Written::kUnlessDefault);
    keys.Integer("max_clients", s.max_clients, 1, 100000);
    keys.Integer("max_circuits", s.max_circuits, 1, 100000);
    keys.Endpoint("via", s.via, EndpointUse::kOptionalPeer);
    keys.PublicKey("via_public_key", s.via_public_key);
  }
};

// [security]: ZeroMQ CURVE on every socket and an allowlist of peer public keys (DESIGN.md
// "Reliability and security"). The key files are read when the node starts
// (node/transport/curve_keys.h, LoadNodeKeys), not when the config is parsed.
struct SecuritySection {
  std::string secret_key_file;  // required: this node's secret key (meshlearn-keygen)
  // Z85 public keys admitted, inline; an entry may add the node id the key is bound to after a
  // space ("<key> <node id>", as in an allowlist file line, node/transport/curve_keys.h).
  std::vector<std::string> allowed_keys;
  std::string allowed_keys_file;  // more of them, one per line (node/transport/curve_keys.h)
  bool operator==(const SecuritySection&) const = default;

  // The keys of [security].
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.String("secret_key_file", s.secret_key_file, Need::kRequired);
    keys.PublicKeyList("allowed_keys", s.allowed_keys);
    keys.String("allowed_keys_file", s.allowed_keys_file);
  }
  // The rules between these keys; errors start with `file`.
  Status Check(const std::string& file) const;
};

// The keys a node with [security] runs with, read from its key files.
struct NodeKeys {
  std::string public_key;                 // derived from the secret key
  std::string secret_key;                 // from security.secret_key_file
  std::vector<std::string> allowed_keys;  // allowed_keys, then allowed_keys_file's; no repeats
  // The node id each bound key belongs to: from the allowlist's "<key> <node id>" entries and the
  // [[peers]] entries' public_key. A key missing here may be used by any node id.
  std::map<std::string, std::string> key_ids;
};

// What the state machine needs of a running node that neither its config nor its learner says.
struct NodeFacts {
  std::string endpoint;          // where peers reach it (advertised or bound)
  std::optional<NodeKeys> keys;  // CURVE keys, when [security] is configured
  uint64_t nonce = 0;            // its Hello nonce (half of every EMD projection seed)
};

// The parsed node config: the top-level keys and one struct per section. Defaults are the
// documented ones. Every choice is typed here, once: the reader maps config strings to enums
// through the name tables of the modules that own them, and no code past it compares a config
// string.
struct NodeConfig {
  // Top level.
  std::string id;      // required: unique node id
  std::string listen;  // required: "tcp://<ip>:<port>"
  // The endpoint peers are told to reach this node at ("tcp://<host>:<port>"); empty: the bound
  // listen endpoint. Needed when `listen` binds every interface (0.0.0.0).
  std::string advertise;
  std::vector<PeerAddress> peers;  // [[peers]]: at least one, unless mesh_size is set
  // The number of nodes in the mesh, this one included; 0: unknown. When set, round 1 waits
  // for the full mesh (node/logic/round_driver.h) and [[peers]] may be empty (the node waits to be
  // greeted). Engine templates set it from the world size.
  int mesh_size = 0;
  spdlog::level::level_enum log_level = spdlog::level::info;
  uint64_t seed = 1;                  // shared by the mesh: the initial model
  int threads = 1;                    // torch compute threads of this node
  std::string output_dir;             // default "out/<id>"
  std::optional<uint16_t> http_port;  // /status and /metrics; off when absent (0 = any port)
  std::string http_bind = "127.0.0.1";

  DataSection data;
  ModelSection model;
  TrainingSection training;
  LearningSection learning;
  EmdSection emd;
  AttackSection attack;
  ClusteringSection clustering;
  SignatureSection signature;
  PrivacySection privacy;  // written only when set
  RoundSection round;
  CompressionSection compression;           // written only when set
  RelaySection relay;                       // written only when set
  std::optional<SecuritySection> security;  // absent: plain text (the node warns at start)
  bool operator==(const NodeConfig&) const = default;

  // The keys of the whole file: the top level, then the sections (parse order; the writer puts
  // the [[peers]] array after the sections).
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& c) {
    keys.NodeId("id", c.id);
    keys.Endpoint("listen", c.listen, EndpointUse::kListen);
    keys.Endpoint("advertise", c.advertise, EndpointUse::kAdvertise);
    keys.Integer("mesh_size", c.mesh_size, 0, 1000000, Written::kUnlessDefault);
    keys.Choice("log_level", c.log_level, LogLevelNames());
    keys.Integer("seed", c.seed, 0, INT64_MAX);
    keys.Integer("threads", c.threads, 1, 256);
    keys.String("output_dir", c.output_dir);
    keys.Port("http_port", c.http_port);
    keys.String("http_bind", c.http_bind);
    keys.Peers("peers", c.peers);
    keys.Section("data", c.data);
    keys.Section("model", c.model);
    keys.Section("training", c.training);
    keys.Section("learning", c.learning);
    keys.Section("emd", c.emd);
    keys.Section("attack", c.attack);
    keys.Section("clustering", c.clustering);
    keys.Section("signature", c.signature);
    // Unwritten when unset, so that a config without it renders (and checkpoints,
    // LearningSettings) as before the section existed.
    keys.Section("privacy", c.privacy, Written::kUnlessDefault);
    keys.Section("round", c.round);
    keys.Section("compression", c.compression, Written::kUnlessDefault);
    keys.Section("relay", c.relay, Written::kUnlessDefault);
    keys.OptionalSection("security", c.security);
  }

  // The state machine's settings for this node, learning with `learner` and running as `facts`
  // says: each part's settings come from the section that owns them.
  StateMachineConfig Machine(const Learner& learner, const NodeFacts& facts) const;
  // Membership's settings: the [[peers]] and mesh_size, liveness from [round], the metric's name
  // and the learner's architecture (peers with another are refused).
  MembershipConfig Membership(const Learner& learner, const NodeFacts& facts) const;
};

// One "torchscript" choice a config can make and the file it names: the model's and each
// plug-in point's (docs/plugins.md). `choice` names the key in the guide's words ("[learning]
// metric"), `path_key` the file's key, dotted ("learning.metric_path").
struct TorchScriptChoice {
  bool chosen;
  const std::string& path;
  const char* choice;
  const char* path_key;
  bool plugin;  // a plug-in point (not the model)
};

// The "torchscript" choices of `config`, chosen or not, the model's first; valid while `config`
// lives.
std::array<TorchScriptChoice, 4> TorchScriptChoices(const NodeConfig& config);

// Parses TOML text `text`; `name` (usually the file path) prefixes every error. kInvalidArgument
// for a syntax error, an unknown key, a wrong type or a value outside what is allowed.
Result<NodeConfig> ParseNodeConfig(const std::string& text, const std::string& name);

// The rules ParseNodeConfig() checks once every key is read: each section's own rules and the
// rules between sections. Fills the defaults that derive from other keys (an empty output_dir
// becomes "out/<id>"). For configs built as values (the launcher's): kInvalidArgument starting
// with `name`, as ParseNodeConfig() would report for the same config read from a file.
Status CheckNodeConfig(NodeConfig& config, const std::string& name);

// Reads and parses the config file at `path` (kNotFound when it does not exist, kIoError when
// it cannot be read).
Result<NodeConfig> LoadNodeConfig(const std::string& path);

// Renders `config` as TOML that ParseNodeConfig() reads back to an equal config (the launcher
// writes node configs with it). Keys and sections described kUnlessDefault are left out while
// they hold their defaults, unless `write_defaults`.
std::string RenderNodeConfig(const NodeConfig& config, bool write_defaults = false);

// Reads the key files of `config.security` (which must be set). Errors name the file and say
// what is wrong: kNotFound (missing), kIoError (unreadable), kInvalidArgument (malformed, a secret
// key file accessible by others, an empty allowlist, a [[peers]] key not on the allowlist, or a
// key bound to two node ids).
Result<NodeKeys> LoadNodeKeys(const NodeConfig& config);

}  // namespace meshlearn::node
