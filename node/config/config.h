#pragma once
// The node config file (TOML, read with toml++). Every key, its default and what it allows is
// documented in configs/README.md; this header holds the parsed form.
//
// Unknown keys and bad values are rejected when the node starts, with a message that names the
// file, the line, the key, the value and what is allowed. A config never half-loads.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"
#include "node/config/logging.h"
#include "node/logic/peer_address.h"
#include "similarity/cluster_policy.h"
#include "similarity/emd.h"
#include "similarity/metric.h"
#include "topology/sampler_factory.h"
#include "training/aggregation.h"
#include "training/model.h"
#include "training/trainer.h"

namespace meshlearn::node {

// [security]: ZeroMQ CURVE on every socket and an allowlist of peer public keys (DESIGN.md
// "Reliability and security"). The key files are read when the node starts
// (node/transport/curve_keys.h, LoadNodeKeys), not when the config is parsed.
struct SecurityConfig {
  std::string secret_key_file;  // required: this node's secret key (meshlearn-keygen)
  // Z85 public keys admitted, inline; an entry may add the node id the key is bound to after a
  // space ("<key> <node id>", as in an allowlist file line, node/transport/curve_keys.h).
  std::vector<std::string> allowed_keys;
  std::string allowed_keys_file;  // more of them, one per line (node/transport/curve_keys.h)
  bool operator==(const SecurityConfig&) const = default;
};

// [privacy]: record-level differential privacy of the node's training data by DP-SGD
// (training/dp_sgd.h), accounted with training/rdp_accountant.h (docs/privacy.md).
struct PrivacyConfig {
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
  bool operator==(const PrivacyConfig&) const = default;
};

// [attack] kind: robustness experiments only (node/learner/poisoned_learner.h).
enum class AttackKind {
  kNone,      // "none": an honest node
  kSignFlip,  // "sign_flip": serves -w
  kNoise,     // "noise": serves Gaussian values with w's root mean square
};

// The config names of the attack kinds, in documentation order.
NameTable<AttackKind> AttackKindNames();

// The parsed node config. Defaults are the documented ones. Every choice is typed here, once: the
// parser maps config strings to enums through the name tables of the modules that own them, and
// no code past the parser compares a config string.
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

  // [data]
  std::string shard;  // required: the node's shard file (training/shard_file.h format)

  // [model]
  training::Architecture architecture = training::Architecture::kMlp;
  int64_t hidden = 200;          // mlp hidden width
  std::string torchscript_path;  // torchscript only

  // [training]
  training::OptimizerKind optimizer = training::OptimizerKind::kAdam;
  double learning_rate = 3e-4;
  double momentum = 0;
  double weight_decay = 0;
  int64_t batch_size = 8;
  int local_epochs = 1;
  int64_t rounds = 50;
  int patience = 50;

  // [learning]
  similarity::MetricKind metric = similarity::MetricKind::kCosWeights;
  topology::SamplerKind sampler = topology::SamplerKind::kDac;
  double tau = 30;
  topology::TauSchedule tau_schedule = topology::TauSchedule::kConstant;
  topology::UnscoredRule unscored = topology::UnscoredRule::kExclude;
  topology::ScoreNormalization normalize = topology::ScoreNormalization::kNone;
  topology::TwoHopRule two_hop = topology::TwoHopRule::kLargest;
  int peers_per_round = 5;  // m
  training::AggregationKind aggregation = training::AggregationKind::kFedAvg;
  std::optional<double> merge_min_score;              // off when absent
  std::vector<std::pair<std::string, int>> clusters;  // [learning.clusters]: id -> cluster (oracle)

  // [emd]: the EMD embedding exchange (DESIGN.md "EMD embedding exchange").
  bool emd_enabled = false;
  // Accept j when EMD_ij - ref_i < epsilon; empty ("auto"): each node decides with the automatic
  // rule over its measurements (similarity::AutomaticThreshold).
  std::optional<double> emd_epsilon;
  similarity::EmdSolverKind emd_solver = similarity::EmdSolverKind::kExact;
  int emd_max_samples = 512;
  double emd_proj_ratio = 0.9;
  int64_t emd_refresh = 0;      // 0: once after round 0; R: every R rounds
  int emd_peers_per_round = 0;  // 0: every active peer at once
  bool emd_witness = false;     // a random third peer measures each EMD (witness mode)
  // [attack]: robustness experiments only; the node still learns honestly.
  AttackKind attack = AttackKind::kNone;
  // [clustering]: the louvain (FLIC) and temperature (OCFL) samplers' policy
  // (similarity/cluster_policy.h).
  int64_t cluster_after = 5;    // no clustering before this round
  int64_t recluster_every = 5;  // louvain: recluster period; 0 = once
  similarity::ClusterAlgorithm cluster_algorithm = similarity::ClusterAlgorithm::kAgglomerative;
  double distance_threshold = 0.3;  // agglomerative: merge below this 1 - cos
  similarity::Linkage linkage = similarity::Linkage::kAverage;

  // [signature]: FLT's data signatures (similarity/centroid_signature.h), exchanged when
  // UsesSignatures().
  int signature_k = 5;               // k-means centroids per node
  double signature_threshold = 1.0;  // peers closer than this are related (hard clusters)
  int signature_max_samples = 512;   // training samples embedded for the centroids

  // [privacy]: DP-SGD and its accountant.
  PrivacyConfig privacy;

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

  // [round]
  bool sync = true;
  double round_deadline_s = 10;
  int dead_after_failures = 3;
  double linger_s = 5;     // keep serving this long after the last round
  double min_round_s = 0;  // a round lasts at least this long (pacing)
  uint64_t max_message_bytes = 256ull << 20;

  // [security]; absent: plain text (the node logs a warning at start).
  std::optional<SecurityConfig> security;
};

// Parses TOML text `text`; `name` (usually the file path) prefixes every error. kInvalidArgument
// for a syntax error, an unknown key, a wrong type or a value outside what is allowed.
Result<NodeConfig> ParseNodeConfig(const std::string& text, const std::string& name);

// Reads and parses the config file at `path` (kNotFound when it does not exist, kIoError when
// it cannot be read).
Result<NodeConfig> LoadNodeConfig(const std::string& path);

// Renders `config` as TOML that ParseNodeConfig() reads back to an equal config (the launcher
// writes node configs with it).
std::string RenderNodeConfig(const NodeConfig& config);

// The keys a node with [security] runs with, read from its key files.
struct NodeKeys {
  std::string public_key;                 // derived from the secret key
  std::string secret_key;                 // from security.secret_key_file
  std::vector<std::string> allowed_keys;  // allowed_keys, then allowed_keys_file's; no repeats
  // The node id each bound key belongs to: from the allowlist's "<key> <node id>" entries and the
  // [[peers]] entries' public_key. A key missing here may be used by any node id.
  std::map<std::string, std::string> key_ids;
};

// Reads the key files of `config.security` (which must be set). Errors name the file and say
// what is wrong: kNotFound (missing), kIoError (unreadable), kInvalidArgument (malformed, a secret
// key file accessible by others, an empty allowlist, a [[peers]] key not on the allowlist, or a
// key bound to two node ids).
Result<NodeKeys> LoadNodeKeys(const NodeConfig& config);

}  // namespace meshlearn::node
