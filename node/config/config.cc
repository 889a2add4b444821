#include "node/config/config.h"

#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "node/config/config_toml.h"
#include "node/config/toml_reader.h"
#include "node/transport/curve_keys.h"
#include "node/transport/endpoint.h"
#include "protocol/wire_text.h"

namespace meshlearn::node {
namespace {

std::string Quote(const std::string& s) {
  std::ostringstream out;
  out << toml::value<std::string>(s);
  return out.str();
}

// The config name of `value`.
template <class Enum>
std::string Name(NameTable<Enum> names, Enum value) {
  return std::string(NameOf(names, value));
}

// The config name of `value`, quoted for TOML.
template <class Enum>
std::string QuotedName(NameTable<Enum> names, Enum value) {
  return Quote(Name(names, value));
}

constexpr NamedValue<AttackKind> kAttackKinds[] = {{"none", AttackKind::kNone},
                                                   {"sign_flip", AttackKind::kSignFlip},
                                                   {"noise", AttackKind::kNoise}};

// Reads the endpoint `key` of `t` into `out` (`required`: refuse a missing key); it must pass
// CheckTcpEndpoint (`listening`: the node's own, which may use any interface or port).
Status Endpoint(TableReader& t, const char* key, std::string* out, bool listening,
                bool required = true) {
  return t.Read(key, required, [&](const toml::node& n) -> Status {
    auto v = n.value<std::string>();
    if (!n.is_string() || !v) return t.Fail(key, n, "must be a string");
    std::string problem = TcpEndpointProblem(*v, listening);
    if (!problem.empty()) return t.Fail(key, n, problem);
    *out = *v;
    return Status::Ok();
  });
}

// Reads the node id `key` of `t` into `out` (protocol/wire_text.h, kNodeIdRule).
Status NodeId(TableReader& t, const char* key, std::string* out) {
  return t.Read(key, true, [&](const toml::node& n) -> Status {
    auto v = n.value<std::string>();
    if (!n.is_string() || !v) return t.Fail(key, n, "must be a string");
    if (!IsNodeId(*v)) return t.Fail(key, n, std::string("is not a node id: ") + kNodeIdRule);
    *out = *v;
    return Status::Ok();
  });
}

constexpr const char* kPublicKeyRule =
    "must be a CURVE public key: 40 Z85 characters, as in a .pub file of meshlearn-keygen";

// Reads the Z85 CURVE public key `key` of `t` into `out`.
Status PublicKey(TableReader& t, const char* key, std::string* out) {
  return t.Read(key, false, [&](const toml::node& n) -> Status {
    auto v = n.value<std::string>();
    if (!n.is_string() || !v || !IsZ85Key(*v)) return t.Fail(key, n, kPublicKeyRule);
    *out = *v;
    return Status::Ok();
  });
}

// An inline allowlist entry: "<key>" or "<key> <node id>".
struct InlineKey {
  std::string key;
  std::string node_id;
};

// Splits inline allowlist entry `entry`; nullopt when it is not one.
std::optional<InlineKey> ParseInlineKey(const std::string& entry) {
  size_t space = entry.find(' ');
  InlineKey out{entry.substr(0, space), ""};
  if (space != std::string::npos) out.node_id = entry.substr(space + 1);
  if (!IsZ85Key(out.key) || (space != std::string::npos && !IsNodeId(out.node_id))) {
    return std::nullopt;
  }
  return out;
}

// Reads the array of Z85 CURVE public keys `key` of `t` into `out` (each optionally followed by a
// space and the node id it is bound to).
Status PublicKeyList(TableReader& t, const char* key, std::vector<std::string>* out) {
  return t.Read(key, false, [&](const toml::node& n) -> Status {
    const toml::array* keys = n.as_array();
    if (!keys) return t.Fail(key, n, "must be an array of CURVE public keys");
    for (const toml::node& k : *keys) {
      auto v = k.value<std::string>();
      if (!k.is_string() || !v || !ParseInlineKey(*v)) {
        return t.Fail(key, k,
                      std::string(kPublicKeyRule) +
                          ", optionally followed by a space and the node id it is bound to");
      }
      out->push_back(*v);
    }
    return Status::Ok();
  });
}

Status ParseSecurity(TableReader& t, NodeConfig& c) {
  SecurityConfig s;
  MESHLEARN_RETURN_IF_ERROR(t.String("secret_key_file", &s.secret_key_file, true));
  MESHLEARN_RETURN_IF_ERROR(PublicKeyList(t, "allowed_keys", &s.allowed_keys));
  MESHLEARN_RETURN_IF_ERROR(t.String("allowed_keys_file", &s.allowed_keys_file));
  if (s.secret_key_file.empty()) {
    return Status::InvalidArgument(t.file() + ": [security] 'secret_key_file' must not be empty");
  }
  if (s.allowed_keys.empty() && s.allowed_keys_file.empty()) {
    return Status::InvalidArgument(t.file() +
                                   ": [security] needs the peers' public keys: 'allowed_keys' "
                                   "and/or 'allowed_keys_file'");
  }
  c.security = std::move(s);
  return Status::Ok();
}

// Reads the optional number `key` of `t` into `out`; it must lie in (min, max].
Status PositiveNumber(TableReader& t, const char* key, std::optional<double>* out, double min,
                      double max) {
  return t.Read(key, false, [&](const toml::node& n) -> Status {
    const std::optional<double> v = n.is_number() ? n.value<double>() : std::nullopt;
    if (!v || !(*v > min && *v <= max)) {
      std::ostringstream range;
      range << "must be a number in (" << min << ", " << max << "]";
      return t.Fail(key, n, range.str());
    }
    *out = *v;
    return Status::Ok();
  });
}

Status ParsePrivacy(TableReader& t, NodeConfig& c) {
  PrivacyConfig& p = c.privacy;
  MESHLEARN_RETURN_IF_ERROR(t.Bool("enabled", &p.enabled));
  MESHLEARN_RETURN_IF_ERROR(PositiveNumber(t, "noise_multiplier", &p.noise_multiplier, 0, 1e4));
  MESHLEARN_RETURN_IF_ERROR(PositiveNumber(t, "target_epsilon", &p.target_epsilon, 0, 1e4));
  MESHLEARN_RETURN_IF_ERROR(t.Number("delta", &p.delta, 0, 0.1, true));
  MESHLEARN_RETURN_IF_ERROR(t.Number("max_grad_norm", &p.max_grad_norm, 0, 1e6, true));
  MESHLEARN_RETURN_IF_ERROR(PositiveNumber(t, "max_epsilon", &p.max_epsilon, 0, 1e6));
  return t.Bool("allow_data_exchanges", &p.allow_data_exchanges);
}

// The cross-key rules of [privacy].
Status CheckPrivacy(const NodeConfig& c, const std::string& name) {
  const PrivacyConfig& p = c.privacy;
  if (!p.enabled) return Status::Ok();
  if (p.noise_multiplier.has_value() == p.target_epsilon.has_value()) {
    return Status::InvalidArgument(
        name +
        ": [privacy] enabled = true needs exactly one of 'noise_multiplier' (σ) and "
        "'target_epsilon' (σ derived for the planned rounds)");
  }
  if (c.architecture == training::Architecture::kTorchScript) {
    return Status::InvalidArgument(
        name +
        ": [privacy] needs per-sample gradients, which only the built-in architectures "
        "(linear, mlp, cnn, cnn_emd) provide; [model] architecture is \"torchscript\"");
  }
  if ((c.emd_enabled || c.UsesSignatures()) && !p.allow_data_exchanges) {
    return Status::InvalidArgument(
        name + ": [privacy] protects only what derives from the model, but " +
        (c.emd_enabled ? std::string("[emd] enabled = true sends embeddings")
                       : std::string("metric \"centroid\" / sampler \"centroid_cluster\" send "
                                     "FLT signatures")) +
        " computed from the training data without noise; turn that off, or set [privacy] "
        "allow_data_exchanges = true to accept it (docs/privacy.md)");
  }
  return Status::Ok();
}

Status ParseTables(const toml::table& root, const std::string& name, NodeConfig& c) {
  TableReader top(root, name, "");
  MESHLEARN_RETURN_IF_ERROR(NodeId(top, "id", &c.id));
  MESHLEARN_RETURN_IF_ERROR(Endpoint(top, "listen", &c.listen, /*listening=*/true));
  MESHLEARN_RETURN_IF_ERROR(
      Endpoint(top, "advertise", &c.advertise, /*listening=*/false, /*required=*/false));
  MESHLEARN_RETURN_IF_ERROR(top.Integer("mesh_size", &c.mesh_size, 0, 1000000));
  MESHLEARN_RETURN_IF_ERROR(top.Choice("log_level", &c.log_level, LogLevelNames()));
  MESHLEARN_RETURN_IF_ERROR(top.Integer("seed", &c.seed, 0, INT64_MAX));
  MESHLEARN_RETURN_IF_ERROR(top.Integer("threads", &c.threads, 1, 256));
  MESHLEARN_RETURN_IF_ERROR(top.String("output_dir", &c.output_dir));
  MESHLEARN_RETURN_IF_ERROR(top.Optional16("http_port", &c.http_port));
  MESHLEARN_RETURN_IF_ERROR(top.String("http_bind", &c.http_bind));
  MESHLEARN_RETURN_IF_ERROR(top.TableArray("peers", [&](TableReader& t) {
    PeerAddress peer;
    MESHLEARN_RETURN_IF_ERROR(NodeId(t, "id", &peer.id));
    MESHLEARN_RETURN_IF_ERROR(Endpoint(t, "address", &peer.endpoint, /*listening=*/false));
    MESHLEARN_RETURN_IF_ERROR(PublicKey(t, "public_key", &peer.public_key));
    c.peers.push_back(std::move(peer));
    return Status::Ok();
  }));
  MESHLEARN_RETURN_IF_ERROR(
      top.Table("data", [&](TableReader& t) { return t.String("shard", &c.shard, true); }));
  MESHLEARN_RETURN_IF_ERROR(top.Table("model", [&](TableReader& t) {
    MESHLEARN_RETURN_IF_ERROR(
        t.Choice("architecture", &c.architecture, training::ArchitectureNames()));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("hidden", &c.hidden, 1, 1 << 20));
    return t.String("torchscript_path", &c.torchscript_path);
  }));
  MESHLEARN_RETURN_IF_ERROR(top.Table("training", [&](TableReader& t) {
    MESHLEARN_RETURN_IF_ERROR(t.Choice("optimizer", &c.optimizer, training::OptimizerKindNames()));
    MESHLEARN_RETURN_IF_ERROR(t.Number("learning_rate", &c.learning_rate, 0, 10, true));
    MESHLEARN_RETURN_IF_ERROR(t.Number("momentum", &c.momentum, 0, 1));
    MESHLEARN_RETURN_IF_ERROR(t.Number("weight_decay", &c.weight_decay, 0, 1));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("batch_size", &c.batch_size, 1, 1 << 20));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("local_epochs", &c.local_epochs, 1, 10000));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("rounds", &c.rounds, 0, 1000000));
    return t.Integer("patience", &c.patience, 1, 1000000);
  }));
  MESHLEARN_RETURN_IF_ERROR(top.Table("learning", [&](TableReader& t) {
    MESHLEARN_RETURN_IF_ERROR(t.Choice("metric", &c.metric, similarity::MetricKindNames()));
    MESHLEARN_RETURN_IF_ERROR(t.Choice("sampler", &c.sampler, topology::SamplerKindNames()));
    MESHLEARN_RETURN_IF_ERROR(t.Number("tau", &c.tau, 0, 1e6));
    MESHLEARN_RETURN_IF_ERROR(
        t.Choice("tau_schedule", &c.tau_schedule, topology::TauScheduleNames()));
    MESHLEARN_RETURN_IF_ERROR(t.Choice("unscored", &c.unscored, topology::UnscoredRuleNames()));
    MESHLEARN_RETURN_IF_ERROR(
        t.Choice("normalize", &c.normalize, topology::ScoreNormalizationNames()));
    MESHLEARN_RETURN_IF_ERROR(t.Choice("two_hop", &c.two_hop, topology::TwoHopRuleNames()));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("peers_per_round", &c.peers_per_round, 0, 100000));
    MESHLEARN_RETURN_IF_ERROR(
        t.Choice("aggregation", &c.aggregation, training::AggregationKindNames()));
    MESHLEARN_RETURN_IF_ERROR(t.OptionalNumber("merge_min_score", &c.merge_min_score));
    return t.Table("clusters", [&](TableReader& clusters) {
      return clusters.Each([&](const std::string& id, const toml::node& n) -> Status {
        if (!IsNodeId(id)) {
          return clusters.Fail(
              id, n, std::string("is keyed by a string that is not a node id: ") + kNodeIdRule);
        }
        if (!n.is_integer() || *n.value<int64_t>() < 0 || *n.value<int64_t>() > INT32_MAX) {
          return clusters.Fail(id, n, "must be a non-negative integer cluster id");
        }
        c.clusters.emplace_back(id, static_cast<int>(*n.value<int64_t>()));
        return Status::Ok();
      });
    });
  }));
  MESHLEARN_RETURN_IF_ERROR(top.Table("emd", [&](TableReader& t) {
    MESHLEARN_RETURN_IF_ERROR(t.Bool("enabled", &c.emd_enabled));
    MESHLEARN_RETURN_IF_ERROR(t.Read("epsilon", false, [&](const toml::node& n) -> Status {
      if (n.value<std::string>() == "auto") {
        c.emd_epsilon.reset();
        return Status::Ok();
      }
      const std::optional<double> v = n.is_number() ? n.value<double>() : std::nullopt;
      if (!v || !(*v >= -10 && *v <= 10)) {
        return t.Fail("epsilon", n, "must be \"auto\" or a number in [-10, 10]");
      }
      c.emd_epsilon = *v;
      return Status::Ok();
    }));
    MESHLEARN_RETURN_IF_ERROR(t.Choice("solver", &c.emd_solver, similarity::EmdSolverKindNames()));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("max_samples", &c.emd_max_samples, 1, 4096));
    MESHLEARN_RETURN_IF_ERROR(t.Number("proj_ratio", &c.emd_proj_ratio, 0, 1, true));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("refresh", &c.emd_refresh, 0, 1000000));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("peers_per_round", &c.emd_peers_per_round, 0, 100000));
    return t.Bool("witness", &c.emd_witness);
  }));
  MESHLEARN_RETURN_IF_ERROR(top.Table(
      "attack", [&](TableReader& t) { return t.Choice("kind", &c.attack, AttackKindNames()); }));
  MESHLEARN_RETURN_IF_ERROR(top.Table("clustering", [&](TableReader& t) {
    MESHLEARN_RETURN_IF_ERROR(t.Integer("cluster_after", &c.cluster_after, 0, 1000000));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("recluster_every", &c.recluster_every, 0, 1000000));
    MESHLEARN_RETURN_IF_ERROR(
        t.Choice("algorithm", &c.cluster_algorithm, similarity::ClusterAlgorithmNames()));
    MESHLEARN_RETURN_IF_ERROR(t.Number("distance_threshold", &c.distance_threshold, 0, 2, true));
    return t.Choice("linkage", &c.linkage, similarity::LinkageNames());
  }));
  MESHLEARN_RETURN_IF_ERROR(top.Table("signature", [&](TableReader& t) {
    MESHLEARN_RETURN_IF_ERROR(t.Integer("k", &c.signature_k, 1, 1024));
    MESHLEARN_RETURN_IF_ERROR(t.Number("threshold", &c.signature_threshold, 0, 1e12, true));
    return t.Integer("max_samples", &c.signature_max_samples, 1, 4096);
  }));
  MESHLEARN_RETURN_IF_ERROR(
      top.Table("privacy", [&](TableReader& t) { return ParsePrivacy(t, c); }));
  MESHLEARN_RETURN_IF_ERROR(top.Table("round", [&](TableReader& t) {
    MESHLEARN_RETURN_IF_ERROR(t.Bool("sync", &c.sync));
    MESHLEARN_RETURN_IF_ERROR(t.Number("round_deadline_s", &c.round_deadline_s, 0, 86400, true));
    MESHLEARN_RETURN_IF_ERROR(t.Integer("dead_after_failures", &c.dead_after_failures, 1, 1000));
    MESHLEARN_RETURN_IF_ERROR(t.Number("linger_s", &c.linger_s, 0, 86400));
    MESHLEARN_RETURN_IF_ERROR(t.Number("min_round_s", &c.min_round_s, 0, 86400));
    return t.Integer("max_message_bytes", &c.max_message_bytes, 1024, int64_t{1} << 40);
  }));
  MESHLEARN_RETURN_IF_ERROR(
      top.Table("security", [&](TableReader& t) { return ParseSecurity(t, c); }));
  MESHLEARN_RETURN_IF_ERROR(top.RejectUnknown());

  // Cross-key rules.
  if (c.peers.empty() && c.mesh_size == 0) {
    return Status::InvalidArgument(name +
                                   ": at least one [[peers]] entry (id and address) is "
                                   "required; the rest of the mesh is learned by gossip (or set "
                                   "'mesh_size', and the peers greet this node)");
  }
  std::set<std::string> seen;
  for (const PeerAddress& p : c.peers) {
    if (p.id == c.id) {
      return Status::InvalidArgument(name + ": [[peers]] lists the node itself ('" + p.id + "')");
    }
    if (!seen.insert(p.id).second) {
      return Status::InvalidArgument(name + ": [[peers]] lists '" + p.id + "' twice");
    }
    if (c.security && p.public_key.empty()) {
      return Status::InvalidArgument(name + ": [[peers]] '" + p.id +
                                     "' needs 'public_key' (the peer's .pub file) when "
                                     "[security] is configured");
    }
  }
  if (c.architecture == training::Architecture::kTorchScript && c.torchscript_path.empty()) {
    return Status::InvalidArgument(name +
                                   ": [model] architecture = \"torchscript\" needs "
                                   "'model.torchscript_path'");
  }
  if (c.sampler == topology::SamplerKind::kOracle && c.clusters.empty()) {
    return Status::InvalidArgument(name +
                                   ": [learning] sampler = \"oracle\" needs the "
                                   "[learning.clusters] table (node id = cluster id)");
  }
  using similarity::MetricKind;
  if ((c.metric == MetricKind::kEmd || c.sampler == topology::SamplerKind::kEmdCluster) &&
      !c.emd_enabled) {
    return Status::InvalidArgument(name +
                                   ": metric \"emd\" and sampler \"emd_cluster\" need the "
                                   "exchange: set [emd] enabled = true");
  }
  if ((c.metric == MetricKind::kEmd || c.metric == MetricKind::kCentroid) &&
      c.sampler == topology::SamplerKind::kDac && c.unscored == topology::UnscoredRule::kExclude) {
    // Rationale: DAC's "exclude" rule lets only scores > 0 into the softmax; these metrics score
    // -max(0, EMD - ref) and -D, so p would stay uniform whatever the scores say.
    return Status::InvalidArgument(
        name + ": [learning] metric \"" + Name(similarity::MetricKindNames(), c.metric) +
        "\" scores are never > 0, so with sampler \"dac\" and unscored = \"exclude\" no peer "
        "would enter the softmax and sampling would stay uniform; set unscored = \"zero\" "
        "(with normalize = \"minmax\")");
  }
  MESHLEARN_RETURN_IF_ERROR(CheckPrivacy(c, name));
  if (c.output_dir.empty()) c.output_dir = "out/" + c.id;
  return Status::Ok();
}

}  // namespace

NameTable<AttackKind> AttackKindNames() { return kAttackKinds; }

Result<toml::table> ParseTomlText(const std::string& text, const std::string& name) {
  try {
    return toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(name + ":" + std::to_string(e.source().begin.line) + ":" +
                                   std::to_string(e.source().begin.column) +
                                   ": TOML syntax error: " + std::string(e.description()));
  }
}

Result<NodeConfig> ParseNodeConfigTable(const toml::table& root, const std::string& name) {
  NodeConfig config;
  MESHLEARN_RETURN_IF_ERROR(ParseTables(root, name, config));
  return config;
}

Result<NodeConfig> ParseNodeConfig(const std::string& text, const std::string& name) {
  auto root = ParseTomlText(text, name);
  if (!root.ok()) return root.status();
  return ParseNodeConfigTable(*root, name);
}

Result<NodeConfig> LoadNodeConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("config file '" + path + "' does not exist or is unreadable");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError("cannot read config file '" + path + "'");
  return ParseNodeConfig(text.str(), path);
}

std::string RenderNodeConfig(const NodeConfig& c) {
  std::ostringstream out;
  out.precision(17);
  out << "id = " << Quote(c.id) << "\nlisten = " << Quote(c.listen) << "\n";
  if (!c.advertise.empty()) out << "advertise = " << Quote(c.advertise) << "\n";
  if (c.mesh_size > 0) out << "mesh_size = " << c.mesh_size << "\n";
  out << "log_level = " << QuotedName(LogLevelNames(), c.log_level) << "\nseed = " << c.seed
      << "\nthreads = " << c.threads << "\noutput_dir = " << Quote(c.output_dir) << "\n";
  if (c.http_port) out << "http_port = " << *c.http_port << "\n";
  out << "http_bind = " << Quote(c.http_bind) << "\n";
  out << "\n[data]\nshard = " << Quote(c.shard) << "\n";
  out << "\n[model]\narchitecture = " << QuotedName(training::ArchitectureNames(), c.architecture)
      << "\nhidden = " << c.hidden << "\ntorchscript_path = " << Quote(c.torchscript_path) << "\n";
  out << "\n[training]\noptimizer = " << QuotedName(training::OptimizerKindNames(), c.optimizer)
      << "\nlearning_rate = " << c.learning_rate << "\nmomentum = " << c.momentum
      << "\nweight_decay = " << c.weight_decay << "\nbatch_size = " << c.batch_size
      << "\nlocal_epochs = " << c.local_epochs << "\nrounds = " << c.rounds
      << "\npatience = " << c.patience << "\n";
  out << "\n[learning]\nmetric = " << QuotedName(similarity::MetricKindNames(), c.metric)
      << "\nsampler = " << QuotedName(topology::SamplerKindNames(), c.sampler)
      << "\ntau = " << c.tau
      << "\ntau_schedule = " << QuotedName(topology::TauScheduleNames(), c.tau_schedule)
      << "\nunscored = " << QuotedName(topology::UnscoredRuleNames(), c.unscored)
      << "\nnormalize = " << QuotedName(topology::ScoreNormalizationNames(), c.normalize)
      << "\ntwo_hop = " << QuotedName(topology::TwoHopRuleNames(), c.two_hop)
      << "\npeers_per_round = " << c.peers_per_round
      << "\naggregation = " << QuotedName(training::AggregationKindNames(), c.aggregation) << "\n";
  if (c.merge_min_score) out << "merge_min_score = " << *c.merge_min_score << "\n";
  out << "\n[emd]\nenabled = " << (c.emd_enabled ? "true" : "false") << "\nepsilon = ";
  if (c.emd_epsilon) {
    out << *c.emd_epsilon;
  } else {
    out << "\"auto\"";
  }
  out << "\nsolver = " << QuotedName(similarity::EmdSolverKindNames(), c.emd_solver)
      << "\nmax_samples = " << c.emd_max_samples << "\nproj_ratio = " << c.emd_proj_ratio
      << "\nrefresh = " << c.emd_refresh << "\npeers_per_round = " << c.emd_peers_per_round
      << "\nwitness = " << (c.emd_witness ? "true" : "false") << "\n";
  out << "\n[attack]\nkind = " << QuotedName(AttackKindNames(), c.attack) << "\n";
  out << "\n[clustering]\ncluster_after = " << c.cluster_after
      << "\nrecluster_every = " << c.recluster_every
      << "\nalgorithm = " << QuotedName(similarity::ClusterAlgorithmNames(), c.cluster_algorithm)
      << "\ndistance_threshold = " << c.distance_threshold
      << "\nlinkage = " << QuotedName(similarity::LinkageNames(), c.linkage) << "\n";
  out << "\n[signature]\nk = " << c.signature_k << "\nthreshold = " << c.signature_threshold
      << "\nmax_samples = " << c.signature_max_samples << "\n";
  // [privacy] only when set: a config without it renders (and checkpoints, LearningSettings) as
  // before the section existed.
  if (const PrivacyConfig& p = c.privacy; p != PrivacyConfig{}) {
    out << "\n[privacy]\nenabled = " << (p.enabled ? "true" : "false") << "\n";
    if (p.noise_multiplier) out << "noise_multiplier = " << *p.noise_multiplier << "\n";
    if (p.target_epsilon) out << "target_epsilon = " << *p.target_epsilon << "\n";
    out << "delta = " << p.delta << "\nmax_grad_norm = " << p.max_grad_norm << "\n";
    if (p.max_epsilon) out << "max_epsilon = " << *p.max_epsilon << "\n";
    out << "allow_data_exchanges = " << (p.allow_data_exchanges ? "true" : "false") << "\n";
  }
  out << "\n[round]\nsync = " << (c.sync ? "true" : "false")
      << "\nround_deadline_s = " << c.round_deadline_s
      << "\ndead_after_failures = " << c.dead_after_failures << "\nlinger_s = " << c.linger_s
      << "\nmin_round_s = " << c.min_round_s << "\nmax_message_bytes = " << c.max_message_bytes
      << "\n";
  if (!c.clusters.empty()) {
    out << "\n[learning.clusters]\n";
    for (const auto& [id, cluster] : c.clusters) out << Quote(id) << " = " << cluster << "\n";
  }
  if (c.security) {
    out << "\n[security]\nsecret_key_file = " << Quote(c.security->secret_key_file)
        << "\nallowed_keys = [";
    for (size_t i = 0; i < c.security->allowed_keys.size(); ++i) {
      out << (i ? ", " : "") << Quote(c.security->allowed_keys[i]);
    }
    out << "]\nallowed_keys_file = " << Quote(c.security->allowed_keys_file) << "\n";
  }
  for (const PeerAddress& p : c.peers) {
    out << "\n[[peers]]\nid = " << Quote(p.id) << "\naddress = " << Quote(p.endpoint) << "\n";
    if (!p.public_key.empty()) out << "public_key = " << Quote(p.public_key) << "\n";
  }
  return out.str();
}

Result<NodeKeys> LoadNodeKeys(const NodeConfig& config) {
  if (!config.security) return Status::InvalidArgument("the config has no [security] section");
  const SecurityConfig& s = *config.security;
  auto pair = ReadSecretKeyFile(s.secret_key_file);
  if (!pair.ok()) return pair.status().WithContext("[security] secret_key_file");
  NodeKeys keys{pair->public_key, pair->secret_key, {}, {}};
  std::set<std::string> allowed;
  // Admits `key`, bound to `node_id` unless it is empty; `where` names the source in errors.
  auto allow = [&](const std::string& key, const std::string& node_id,
                   const std::string& where) -> Status {
    if (allowed.insert(key).second) keys.allowed_keys.push_back(key);
    if (node_id.empty()) return Status::Ok();
    auto [bound, fresh] = keys.key_ids.emplace(key, node_id);
    if (!fresh && bound->second != node_id) {
      return Status::InvalidArgument(where + ": public key " + key + " is bound to node id '" +
                                     bound->second + "' and to '" + node_id +
                                     "'; a key belongs to one node");
    }
    return Status::Ok();
  };
  for (const std::string& entry : s.allowed_keys) {
    std::optional<InlineKey> parsed = ParseInlineKey(entry);
    if (!parsed)
      return Status::InvalidArgument("[security] allowed_keys: bad entry '" + entry + "'");
    MESHLEARN_RETURN_IF_ERROR(allow(parsed->key, parsed->node_id, "[security] allowed_keys"));
  }
  if (!s.allowed_keys_file.empty()) {
    auto listed = ReadAllowlistFile(s.allowed_keys_file);
    if (!listed.ok()) return listed.status().WithContext("[security] allowed_keys_file");
    for (const AllowedKey& k : *listed) {
      MESHLEARN_RETURN_IF_ERROR(
          allow(k.key, k.node_id, "[security] allowed_keys_file '" + s.allowed_keys_file + "'"));
    }
  }
  if (keys.allowed_keys.empty()) {
    return Status::InvalidArgument("[security]: the allowlist is empty (allowed_keys_file '" +
                                   s.allowed_keys_file +
                                   "' holds no key): the node could talk to nobody");
  }
  for (const PeerAddress& p : config.peers) {
    if (!allowed.count(p.public_key)) {
      return Status::InvalidArgument("[[peers]] '" + p.id + "': its public_key " + p.public_key +
                                     " is not on the allowlist ([security] allowed_keys or "
                                     "allowed_keys_file); add it or remove the peer");
    }
    MESHLEARN_RETURN_IF_ERROR(allow(p.public_key, p.id, "[[peers]] '" + p.id + "'"));
  }
  return keys;
}

}  // namespace meshlearn::node
