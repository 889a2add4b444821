#include "node/config/node_template.h"

#include <unistd.h>

#include <climits>
#include <filesystem>

#include "base/atomic_file.h"
#include "base/toml_reader.h"
#include "node/config/config_keys.h"
#include "node/config/config_toml.h"

extern char** environ;

namespace meshlearn::node {
namespace {

// "<name>:<line>: " of `n`.
std::string Where(const std::string& name, const toml::node& n) {
  return TableReader(toml::table{}, name, "").Where(n);
}

// Whether the value of table key `key` is written out as is, never a template: Z85 public keys
// use '{' and '}' among their characters, so "{1}" or "{ab}" in a key is data, not a
// placeholder. Those are every key's value named `*public_key` (a peer's `public_key`, [relay]
// `via_public_key`) and the entries of [security] `allowed_keys` (each a key, optionally followed
// by the node id it is bound to).
bool HoldsLiteral(std::string_view key) {
  return key.ends_with("public_key") || key == "allowed_keys";
}

// Calls `visit(text, path)` for every string value under `n` that may hold placeholders, in
// document order, with its dotted name (`path`, "a.b[2]"); values of HoldsLiteral() keys are
// skipped. Stops at, and returns, the first error `visit` returns. `Node` is toml::node or
// const toml::node.
template <typename Node, typename Visit>
Status ForEachTemplateString(Node& n, const std::string& path, const Visit& visit) {
  if (auto* text = n.as_string()) return visit(*text, path);
  if (auto* table = n.as_table()) {
    for (auto&& [key, value] : *table) {
      if (HoldsLiteral(key.str())) continue;
      std::string child =
          path.empty() ? std::string(key.str()) : path + "." + std::string(key.str());
      MESHLEARN_RETURN_IF_ERROR(ForEachTemplateString(value, child, visit));
    }
  } else if (auto* array = n.as_array()) {
    for (size_t i = 0; i < array->size(); ++i) {
      MESHLEARN_RETURN_IF_ERROR(
          ForEachTemplateString(*array->get(i), path + "[" + std::to_string(i) + "]", visit));
    }
  }
  return Status::Ok();
}

// Fills the placeholders of every template string under `n`.
Status FillTree(toml::node& n, const std::string& name, const EngineIdentity& identity) {
  return ForEachTemplateString(n, "", [&](toml::value<std::string>& text, const std::string& path) {
    auto filled = FillPlaceholders(text.get(), identity);
    if (!filled.ok())
      return Status::InvalidArgument(Where(name, text) + "'" + path +
                                     "': " + filled.status().message());
    text.get() = *filled;
    return Status::Ok();
  });
}

// kInvalidArgument naming the first template string under `n` that holds a placeholder.
Status RejectPlaceholders(const toml::node& n, const std::string& name) {
  return ForEachTemplateString(
      n, "", [&](const toml::value<std::string>& text, const std::string& path) {
        if (!HasPlaceholder(text.get())) return Status::Ok();
        return Status::InvalidArgument(
            Where(name, text) + "'" + path + "' = \"" + text.get() +
            "\" holds a placeholder, but the config has no [engine] section: add one to make it a "
            "template for the ranks an engine starts, or write the value out");
      });
}

// The keys of [engine] (node/config/config.h, "One description per section"). The keys that
// only some engines use are unwritten while they hold their defaults.
struct EngineSection {
  EngineSettings settings;
  bool operator==(const EngineSection&) const = default;

  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Choice("kind", s.settings.kind, EngineKindNames());
    keys.Integer("port", s.settings.port, 1, 65535);
    keys.String("hostfile", s.settings.hostfile, Need::kOptional, Written::kUnlessDefault);
    keys.String("service", s.settings.service, Need::kOptional, Written::kUnlessDefault);
    keys.Integer("size", s.settings.size, 1, 1000000, Written::kUnlessDefault);
  }
};

Result<EngineSettings> ReadEngineSettings(const toml::table& root, const std::string& name) {
  EngineSection engine;
  TableReader top(root, name, "");
  KeyReader keys(top);
  keys.Section("engine", engine);
  if (!keys.status().ok()) return keys.status();
  return engine.settings;
}

}  // namespace

Result<LoadedNodeConfig> ParseNodeConfigOrTemplate(const std::string& text, const std::string& name,
                                                   const EngineEnvironmentSource& source) {
  auto root = ParseTomlText(text, name);
  if (!root.ok()) return root.status();
  LoadedNodeConfig loaded;
  if (!root->contains("engine")) {
    MESHLEARN_RETURN_IF_ERROR(RejectPlaceholders(*root, name));
    auto config = ParseNodeConfigTable(*root, name);
    if (!config.ok()) return config.status();
    loaded.config = std::move(*config);
    return loaded;
  }
  auto settings = ReadEngineSettings(*root, name);
  if (!settings.ok()) return settings.status();
  auto environment = source(*settings);
  if (!environment.ok()) return environment.status().WithContext(name);
  auto identity = ResolveEngineIdentity(*settings, *environment);
  if (!identity.ok()) return identity.status().WithContext(name);

  // Rank 0's id, from the template's id filled for rank 0.
  std::string rank0_id;
  if (const toml::node* id = root->get("id"); id && id->is_string()) {
    const std::string& raw = id->as_string()->get();
    if (raw.find("{host}") != std::string::npos || raw.find("{port}") != std::string::npos) {
      return Status::InvalidArgument(Where(name, *id) + "'id' = \"" + raw +
                                     "\" may use {rank} and {size} only (every rank must be able "
                                     "to name rank 0)");
    }
    EngineIdentity rank0 = *identity;
    rank0.rank = 0;
    auto filled = FillPlaceholders(raw, rank0);
    if (!filled.ok()) return filled.status().WithContext(name + ": 'id'");
    rank0_id = *filled;
  }
  root->erase("engine");
  MESHLEARN_RETURN_IF_ERROR(FillTree(*root, name, *identity));

  std::string self = root->get("id") && root->get("id")->is_string()
                         ? root->get("id")->as_string()->get()
                         : std::string();
  root->insert("advertise", "tcp://" + identity->host + ":" + std::to_string(identity->port));
  root->insert("mesh_size", int64_t{identity->size});
  if (!root->contains("peers")) root->insert("peers", toml::array{});
  if (toml::array* peers = root->get("peers")->as_array()) {
    // A seed list shared by all ranks names some of them: drop this rank's own entry.
    for (size_t i = peers->size(); i-- > 0;) {
      const toml::table* peer = peers->get(i)->as_table();
      const toml::node* id = peer ? peer->get("id") : nullptr;
      if (id && id->is_string() && id->as_string()->get() == self) {
        peers->erase(peers->begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    bool listed = false;
    for (const toml::node& p : *peers) {
      const toml::table* peer = p.as_table();
      const toml::node* id = peer ? peer->get("id") : nullptr;
      listed |= id && id->is_string() && id->as_string()->get() == rank0_id;
    }
    if (identity->rank != 0 && !rank0_id.empty() && !listed) {
      peers->push_back(toml::table{{"id", rank0_id},
                                   {"address", "tcp://" + identity->rank0_host + ":" +
                                                   std::to_string(identity->rank0_port)}});
    }
  }
  if (root->get("peers")->as_array() && root->get("peers")->as_array()->empty()) {
    root->erase("peers");  // rank 0 alone: an empty array is no array of tables
  }
  auto config = ParseNodeConfigTable(*root, name);
  if (!config.ok()) return config.status();
  loaded.config = std::move(*config);
  loaded.engine = *identity;
  return loaded;
}

std::string RenderNodeTemplate(const NodeConfig& config, const EngineSettings& engine) {
  KeyWriter keys;
  NodeConfig::Describe(keys, config);
  keys.Section("engine", EngineSection{engine});
  return keys.Text();
}

Result<LoadedNodeConfig> LoadNodeConfigOrTemplate(const std::string& path,
                                                  const EngineEnvironmentSource& source) {
  if (!std::filesystem::exists(path)) {
    return Status::NotFound("config file '" + path + "' does not exist");
  }
  auto text = ReadWholeFile(path);
  if (!text.ok()) return Status::IoError("cannot read config file '" + path + "'");
  return ParseNodeConfigOrTemplate(*text, path, source);
}

Result<EngineEnvironment> ProcessEngineEnvironment(const EngineSettings& settings) {
  EngineEnvironment env;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view pair(*entry);
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    env.variables.emplace(std::string(pair.substr(0, eq)), std::string(pair.substr(eq + 1)));
  }
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof(host) - 1) == 0) env.host_name = host;
  if (!settings.hostfile.empty()) {
    if (!std::filesystem::exists(settings.hostfile)) {
      return Status::NotFound("[engine] hostfile '" + settings.hostfile + "' does not exist");
    }
    auto text = ReadWholeFile(settings.hostfile);
    if (!text.ok()) return text.status().WithContext("[engine] hostfile");
    env.hostfile_text = std::move(*text);
  }
  return env;
}

}  // namespace meshlearn::node
