#include "node/config/config.h"

#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include <toml++/toml.h>

#include "base/toml_reader.h"
#include "node/config/config_keys.h"
#include "node/config/config_toml.h"
#include "node/transport/curve_keys.h"
#include "node/transport/endpoint.h"
#include "protocol/wire_text.h"

namespace meshlearn::node {
namespace {

constexpr NamedValue<AttackKind> kAttackKinds[] = {{"none", AttackKind::kNone},
                                                   {"sign_flip", AttackKind::kSignFlip},
                                                   {"noise", AttackKind::kNoise},
                                                   {"label_flip", AttackKind::kLabelFlip},
                                                   {"scaling", AttackKind::kScaling},
                                                   {"alie", AttackKind::kAlie},
                                                   {"ipm", AttackKind::kIpm},
                                                   {"dissensus", AttackKind::kDissensus},
                                                   {"free_rider", AttackKind::kFreeRider},
                                                   {"mimic", AttackKind::kMimic},
                                                   {"score_lie", AttackKind::kScoreLie},
                                                   {"sybil", AttackKind::kSybil},
                                                   {"torchscript", AttackKind::kTorchScript}};

constexpr const char* kPublicKeyRule =
    "must be a CURVE public key: 40 Z85 characters, as in a .pub file of meshlearn-keygen";

// The cross-key rules of [privacy].
Status CheckPrivacy(const NodeConfig& c, const std::string& name) {
  const PrivacySection& p = c.privacy;
  if (!p.enabled) return Status::Ok();
  if (p.noise_multiplier.has_value() == p.target_epsilon.has_value()) {
    return Status::InvalidArgument(
        name +
        ": [privacy] enabled = true needs exactly one of 'noise_multiplier' (σ) and "
        "'target_epsilon' (σ derived for the planned rounds)");
  }
  if (c.model.architecture == training::Architecture::kTorchScript) {
    return Status::InvalidArgument(
        name +
        ": [privacy] needs per-sample gradients, which only the built-in architectures "
        "(linear, mlp, cnn, cnn_emd) provide; [model] architecture is \"torchscript\"");
  }
  if ((c.emd.enabled || c.learning.UsesSignatures()) && !p.allow_data_exchanges) {
    return Status::InvalidArgument(
        name + ": [privacy] protects only what derives from the model, but " +
        (c.emd.enabled ? std::string("[emd] enabled = true sends embeddings")
                       : std::string("metric \"centroid\" / sampler \"centroid_cluster\" send "
                                     "FLT signatures")) +
        " computed from the training data without noise; turn that off, or set [privacy] "
        "allow_data_exchanges = true to accept it (docs/privacy.md)");
  }
  return Status::Ok();
}

// Every "torchscript" choice needs its file: the model's, and each plug-in point's
// (docs/plugins.md). Rationale: a path without its choice is not refused, because the launcher
// gives every node a scenario's keys and a method may choose a built-in kind over them.
Status CheckTorchScriptFiles(const NodeConfig& c, const std::string& name) {
  for (const TorchScriptChoice& file : TorchScriptChoices(c)) {
    if (!file.chosen || !file.path.empty()) continue;
    return Status::InvalidArgument(name + ": " + file.choice + " = \"torchscript\" needs '" +
                                   file.path_key +
                                   "' (a file saved by torch.jit.script(...).save)");
  }
  return Status::Ok();
}

}  // namespace

std::array<TorchScriptChoice, 4> TorchScriptChoices(const NodeConfig& c) {
  return {{{c.model.architecture == training::Architecture::kTorchScript, c.model.torchscript_path,
            "[model] architecture", "model.torchscript_path", false},
           {c.learning.metric == similarity::MetricKind::kTorchScript, c.learning.metric_path,
            "[learning] metric", "learning.metric_path", true},
           {c.learning.robust.kind == training::RobustKind::kTorchScript, c.learning.merge_path,
            "[learning] robust", "learning.merge_path", true},
           {c.attack.kind == AttackKind::kTorchScript, c.attack.attack_path, "[attack] kind",
            "attack.attack_path", true}}};
}

Status CheckNodeConfig(NodeConfig& c, const std::string& name) {
  // Each section's own rules (ParseNodeConfig runs them as it reads the section, too).
  MESHLEARN_RETURN_IF_ERROR(c.compression.Check(name));
  if (c.security) MESHLEARN_RETURN_IF_ERROR(c.security->Check(name));
  if (!c.relay.via.empty() && !c.relay.serve_at.empty()) {
    return Status::InvalidArgument(name +
                                   ": [relay] a node behind a relay ('via') cannot serve as "
                                   "one ('serve_at'): nobody could reach its relay port");
  }
  if (!c.relay.via.empty() && c.security && c.relay.via_public_key.empty()) {
    return Status::InvalidArgument(name +
                                   ": [relay] 'via' with [security] needs 'via_public_key' "
                                   "(the relay's public key, from its .pub file)");
  }
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
  // Each compressed codec needs the version of its feature (PROTOCOL.md, "Compressed models",
  // "Compressed embeddings").
  const std::tuple<const char*, CompressionCodec, uint16_t> codecs[] = {
      {"codec", c.compression.codec, kCompressedModelVersion},
      {"embeddings", c.compression.embeddings, kCompressedEmbeddingVersion}};
  for (const auto& [key, codec, version] : codecs) {
    if (codec == CompressionCodec::kNone || c.round.ProtocolVersion() >= version) continue;
    return Status::InvalidArgument(
        name + ": [compression] " + key + " = \"" + CompressionCodecName(codec) +
        "\" needs protocol version " + std::to_string(version) +
        ", but [round] max_protocol_version = " + std::to_string(c.round.max_protocol_version));
  }
  MESHLEARN_RETURN_IF_ERROR(CheckTorchScriptFiles(c, name));
  if (c.learning.sampler == topology::SamplerKind::kOracle && c.learning.clusters.empty()) {
    return Status::InvalidArgument(name +
                                   ": [learning] sampler = \"oracle\" needs the "
                                   "[learning.clusters] table (node id = cluster id)");
  }
  using similarity::MetricKind;
  if ((c.learning.metric == MetricKind::kEmd ||
       c.learning.sampler == topology::SamplerKind::kEmdCluster) &&
      !c.emd.enabled) {
    return Status::InvalidArgument(name +
                                   ": metric \"emd\" and sampler \"emd_cluster\" need the "
                                   "exchange: set [emd] enabled = true");
  }
  if ((c.learning.metric == MetricKind::kEmd || c.learning.metric == MetricKind::kCentroid) &&
      c.learning.sampler == topology::SamplerKind::kDac &&
      c.learning.unscored == topology::UnscoredRule::kExclude) {
    // Rationale: DAC's "exclude" rule lets only scores > 0 into the softmax; these metrics score
    // -max(0, EMD - ref) and -D, so p would stay uniform whatever the scores say.
    return Status::InvalidArgument(
        name + ": [learning] metric \"" +
        std::string(NameOf(similarity::MetricKindNames(), c.learning.metric)) +
        "\" scores are never > 0, so with sampler \"dac\" and unscored = \"exclude\" no peer "
        "would enter the softmax and sampling would stay uniform; set unscored = \"zero\" "
        "(with normalize = \"minmax\")");
  }
  MESHLEARN_RETURN_IF_ERROR(CheckPrivacy(c, name));
  if (c.learning.graph != topology::GraphKind::kNone &&
      c.learning.sampler != topology::SamplerKind::kRandom) {
    return Status::InvalidArgument(
        name + ": [learning] graph = \"" +
        std::string(NameOf(topology::GraphKindNames(), c.learning.graph)) +
        "\" samples every neighbour each round, uniformly; it needs sampler = \"random\"");
  }
  if ((c.learning.graph == topology::GraphKind::kEdges) == c.learning.edges.empty()) {
    return Status::InvalidArgument(name +
                                   ": [learning] edges is needed with graph = \"edges\", and "
                                   "only then");
  }
  // Only a mimic reads it: the launcher gives every node the scenario's [node.attack] keys.
  if (c.attack.kind == AttackKind::kMimic && !c.attack.target.empty() &&
      (!IsNodeId(c.attack.target) || c.attack.target == c.id)) {
    return Status::InvalidArgument(name + ": [attack] target = '" + c.attack.target +
                                   "' must be another node's id (1-64 characters of A-Z a-z 0-9 "
                                   ". _ -, starting with a letter or digit), or absent");
  }
  if (c.output_dir.empty()) c.output_dir = "out/" + c.id;
  return Status::Ok();
}

NameTable<AttackKind> AttackKindNames() { return kAttackKinds; }

NameTable<StaleModel> StaleModelNames() {
  static constexpr NamedValue<StaleModel> kNames[] = {{"initial", StaleModel::kInitial},
                                                      {"fetched", StaleModel::kFetched}};
  return kNames;
}

NameTable<SybilAddress> SybilAddressNames() {
  static constexpr NamedValue<SybilAddress> kNames[] = {{"self", SybilAddress::kSelf},
                                                        {"nowhere", SybilAddress::kNowhere}};
  return kNames;
}

NameTable<StoppedServes> StoppedServesNames() {
  static constexpr NamedValue<StoppedServes> kNames[] = {{"best", StoppedServes::kBest},
                                                         {"last", StoppedServes::kLast}};
  return kNames;
}

NameTable<RestingRule> RestingRuleNames() {
  static constexpr NamedValue<RestingRule> kNames[] = {{"silent", RestingRule::kSilent},
                                                       {"fetch", RestingRule::kFetch}};
  return kNames;
}

std::string TomlString(const std::string& s) {
  std::ostringstream out;
  out << toml::value<std::string>(s);
  return out.str();
}

std::optional<InlineKey> ParseInlineKey(const std::string& entry) {
  size_t space = entry.find(' ');
  InlineKey out{entry.substr(0, space), ""};
  if (space != std::string::npos) out.node_id = entry.substr(space + 1);
  if (!IsZ85Key(out.key) || (space != std::string::npos && !IsNodeId(out.node_id))) {
    return std::nullopt;
  }
  return out;
}

void KeyReader::NodeId(const char* key, std::string& out) {
  Run([&] {
    return t_.Read(key, Required(true), [&](const toml::node& n) -> Status {
      auto v = n.value<std::string>();
      if (!n.is_string() || !v) return t_.Fail(key, n, "must be a string");
      if (!IsNodeId(*v)) return t_.Fail(key, n, std::string("is not a node id: ") + kNodeIdRule);
      out = *v;
      return Status::Ok();
    });
  });
}

void KeyReader::Endpoint(const char* key, std::string& out, EndpointUse use) {
  Run([&] {
    return t_.Read(key, Required(!IsOptional(use)), [&](const toml::node& n) -> Status {
      auto v = n.value<std::string>();
      if (!n.is_string() || !v) return t_.Fail(key, n, "must be a string");
      // The node's own endpoint may use any interface or port.
      std::string problem = TcpEndpointProblem(
          *v, use == EndpointUse::kListen || use == EndpointUse::kOptionalListen);
      if (!problem.empty()) return t_.Fail(key, n, problem);
      out = *v;
      return Status::Ok();
    });
  });
}

void KeyReader::PublicKey(const char* key, std::string& out) {
  Run([&] {
    return t_.Read(key, false, [&](const toml::node& n) -> Status {
      auto v = n.value<std::string>();
      if (!n.is_string() || !v || !IsZ85Key(*v)) return t_.Fail(key, n, kPublicKeyRule);
      out = *v;
      return Status::Ok();
    });
  });
}

void KeyReader::PublicKeyList(const char* key, std::vector<std::string>& out) {
  Run([&] {
    return t_.Read(key, false, [&](const toml::node& n) -> Status {
      const toml::array* keys = n.as_array();
      if (!keys) return t_.Fail(key, n, "must be an array of CURVE public keys");
      for (const toml::node& k : *keys) {
        auto v = k.value<std::string>();
        if (!k.is_string() || !v || !ParseInlineKey(*v)) {
          return t_.Fail(key, k,
                         std::string(kPublicKeyRule) +
                             ", optionally followed by a space and the node id it is bound to");
        }
        out.push_back(*v);
      }
      return Status::Ok();
    });
  });
}

void KeyReader::PositiveNumber(const char* key, std::optional<double>& out, double max) {
  Run([&] {
    return t_.Read(key, false, [&](const toml::node& n) -> Status {
      const std::optional<double> v = n.is_number() ? n.value<double>() : std::nullopt;
      if (!v || !(*v > 0 && *v <= max)) {
        std::ostringstream range;
        range << "must be a number in (0, " << max << "]";
        return t_.Fail(key, n, range.str());
      }
      out = *v;
      return Status::Ok();
    });
  });
}

void KeyReader::NumberOrWord(const char* key, std::optional<double>& out, const char* word,
                             double min, double max) {
  Run([&] {
    return t_.Read(key, false, [&](const toml::node& n) -> Status {
      if (n.value<std::string>() == word) {
        out.reset();
        return Status::Ok();
      }
      const std::optional<double> v = n.is_number() ? n.value<double>() : std::nullopt;
      if (!v || !(*v >= min && *v <= max)) {
        std::ostringstream allowed;
        allowed << "must be \"" << word << "\" or a number in [" << min << ", " << max << "]";
        return t_.Fail(key, n, allowed.str());
      }
      out = *v;
      return Status::Ok();
    });
  });
}

void KeyReader::ClusterIds(const char* key, std::vector<std::pair<std::string, int>>& out) {
  Run([&] {
    return t_.Table(key, [&](TableReader& clusters) {
      return clusters.Each([&](const std::string& id, const toml::node& n) -> Status {
        if (!IsNodeId(id)) {
          return clusters.Fail(
              id, n, std::string("is keyed by a string that is not a node id: ") + kNodeIdRule);
        }
        if (!n.is_integer() || *n.value<int64_t>() < 0 || *n.value<int64_t>() > INT32_MAX) {
          return clusters.Fail(id, n, "must be a non-negative integer cluster id");
        }
        out.emplace_back(id, static_cast<int>(*n.value<int64_t>()));
        return Status::Ok();
      });
    });
  });
}

void KeyReader::NodeIdList(const char* key, std::vector<std::string>& out) {
  Run([&] {
    return t_.Read(key, false, [&](const toml::node& n) -> Status {
      const toml::array* ids = n.as_array();
      if (!ids) return t_.Fail(key, n, std::string("must be an array of node ids: ") + kNodeIdRule);
      out.clear();
      for (const toml::node& id : *ids) {
        auto v = id.value<std::string>();
        if (!id.is_string() || !v || !IsNodeId(*v)) {
          return t_.Fail(key, id, std::string("must be a node id: ") + kNodeIdRule);
        }
        out.push_back(*v);
      }
      return Status::Ok();
    });
  });
}

void KeyReader::Edges(const char* key, std::vector<topology::GraphEdge>& out) {
  Run([&] {
    return t_.Read(key, false, [&](const toml::node& n) -> Status {
      const toml::array* edges = n.as_array();
      const std::string rule =
          std::string("must be an array of edges, each [\"<id>\", \"<id>\"] ") +
          "of two node ids (" + kNodeIdRule + ")";
      if (!edges) return t_.Fail(key, n, rule);
      out.clear();
      for (const toml::node& edge : *edges) {
        const toml::array* pair = edge.as_array();
        auto a = pair && pair->size() == 2 ? (*pair)[0].value<std::string>() : std::nullopt;
        auto b = pair && pair->size() == 2 ? (*pair)[1].value<std::string>() : std::nullopt;
        if (!a || !b || !IsNodeId(*a) || !IsNodeId(*b)) return t_.Fail(key, edge, rule);
        out.emplace_back(*a, *b);
      }
      return Status::Ok();
    });
  });
}

void KeyReader::Peers(const char* key, std::vector<PeerAddress>& out) {
  Run([&] {
    return t_.TableArray(key, [&](TableReader& table) {
      KeyReader keys(table);
      PeerAddress peer;
      DescribePeer(keys, peer);
      MESHLEARN_RETURN_IF_ERROR(keys.status());
      out.push_back(std::move(peer));
      return Status::Ok();
    });
  });
}

KeyWriter::KeyWriter(std::string section, bool write_defaults)
    : section_(std::move(section)), write_defaults_(write_defaults) {
  keys_.precision(17);
}

void KeyWriter::PublicKeyList(const char* key, const std::vector<std::string>& values) {
  std::string list = "[";
  for (size_t i = 0; i < values.size(); ++i) list += (i ? ", " : "") + TomlString(values[i]);
  Line(key, list + "]");
}

void KeyWriter::ClusterIds(const char* key,
                           const std::vector<std::pair<std::string, int>>& clusters) {
  if (clusters.empty()) return;
  tables_ << "\n[" << Qualified(key) << "]\n";
  for (const auto& [id, cluster] : clusters) tables_ << TomlString(id) << " = " << cluster << "\n";
}

void KeyWriter::NodeIdList(const char* key, const std::vector<std::string>& ids) {
  if (ids.empty()) return;
  PublicKeyList(key, ids);  // the same TOML: an array of strings
}

void KeyWriter::Edges(const char* key, const std::vector<topology::GraphEdge>& edges) {
  if (edges.empty()) return;
  std::string list = "[";
  for (size_t i = 0; i < edges.size(); ++i) {
    list +=
        (i ? ", [" : "[") + TomlString(edges[i].first) + ", " + TomlString(edges[i].second) + "]";
  }
  Line(key, list + "]");
}

void KeyWriter::Peers(const char* key, const std::vector<PeerAddress>& peers) {
  for (const PeerAddress& p : peers) {
    KeyWriter entry(Qualified(key), write_defaults_);
    DescribePeer(entry, p);
    arrays_ << "\n[[" << Qualified(key) << "]]\n" << entry.Text();
  }
}

Status CompressionSection::Check(const std::string& file) const {
  if (embeddings == CompressionCodec::kTopK) {
    return Status::InvalidArgument(
        file +
        ": [compression] embeddings = \"topk\" is not allowed (allowed: none, fp16, int8); "
        "embeddings travel once per pair, whole");
  }
  if (topk_values != CompressionCodec::kFp16 && topk_values != CompressionCodec::kInt8) {
    return Status::InvalidArgument(file + ": [compression] topk_values = \"" +
                                   CompressionCodecName(topk_values) +
                                   "\" is not allowed (allowed: fp16, int8)");
  }
  return Status::Ok();
}

CompressionSettings CompressionSection::Settings() const {
  CompressionSettings s;
  s.codec = codec;
  s.block_size = static_cast<uint32_t>(block_size);
  s.topk_fraction = topk_fraction;
  s.topk_values = topk_values;
  return s;
}

CompressionSettings CompressionSection::EmbeddingSettings() const {
  CompressionSettings s = Settings();
  s.codec = embeddings;
  return s;
}

Status SecuritySection::Check(const std::string& file) const {
  if (secret_key_file.empty()) {
    return Status::InvalidArgument(file + ": [security] 'secret_key_file' must not be empty");
  }
  if (allowed_keys.empty() && allowed_keys_file.empty()) {
    return Status::InvalidArgument(file +
                                   ": [security] needs the peers' public keys: 'allowed_keys' "
                                   "and/or 'allowed_keys_file'");
  }
  return Status::Ok();
}

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
  TableReader top(root, name, "");
  KeyReader keys(top);
  NodeConfig::Describe(keys, config);
  MESHLEARN_RETURN_IF_ERROR(keys.status());
  MESHLEARN_RETURN_IF_ERROR(top.RejectUnknown());
  MESHLEARN_RETURN_IF_ERROR(CheckNodeConfig(config, name));
  return config;
}

Status ReadNodeConfigKeys(const toml::table& root, const std::string& name, NodeConfig& config,
                          const TableReader::Origins* origins) {
  TableReader top(root, name, "", origins);
  KeyReader keys(top, Reading::kPresentKeysOnly);
  NodeConfig::Describe(keys, config);
  MESHLEARN_RETURN_IF_ERROR(keys.status());
  return top.RejectUnknown();
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

std::string RenderNodeConfig(const NodeConfig& config, bool write_defaults) {
  KeyWriter keys("", write_defaults);
  NodeConfig::Describe(keys, config);
  return keys.Text();
}

Result<NodeKeys> LoadNodeKeys(const NodeConfig& config) {
  if (!config.security) return Status::InvalidArgument("the config has no [security] section");
  const SecuritySection& s = *config.security;
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
