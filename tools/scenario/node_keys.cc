#include "tools/scenario/node_keys.h"

#include <algorithm>
#include <sstream>

#include "node/config/config_toml.h"

namespace meshlearn::launch {
namespace {

std::string ValueText(const toml::node& n) {
  std::ostringstream out;
  n.visit([&](const auto& v) { out << v; });
  return out.str();
}

}  // namespace

std::vector<std::string> NodeKeyNames() {
  const node::NodeConfig config;
  internal::KeyFinder finder(nullptr, typeid(void));
  node::NodeConfig::Describe(finder, config);
  return finder.keys();
}

std::vector<std::string> ScenarioNodeSections() {
  const node::NodeConfig config;
  internal::KeyFinder finder(nullptr, typeid(void));
  node::NodeConfig::Describe(finder, config);
  const std::vector<const void*> per_node = {&config.data, &config.security};
  std::vector<std::string> sections;
  for (const auto& [name, member] : finder.sections()) {
    if (std::find(per_node.begin(), per_node.end(), member) == per_node.end()) {
      sections.push_back(name);
    }
  }
  return sections;
}

toml::table NodeKeysTable(const node::NodeConfig& config) {
  auto table = node::ParseTomlText(node::RenderNodeConfig(config, /*write_defaults=*/true),
                                   "the rendered node config");
  return table.ok() ? std::move(*table) : toml::table{};
}

toml::table ChangedNodeKeys(const node::NodeConfig& before, const node::NodeConfig& after) {
  const toml::table old_keys = NodeKeysTable(before);
  toml::table new_keys = NodeKeysTable(after);
  toml::table changed;
  for (auto& [section, new_section] : new_keys) {
    toml::table* keys = new_section.as_table();
    const toml::table* old_section = old_keys.get_as<toml::table>(section);
    if (!keys || !old_section) continue;
    toml::table section_changes;
    for (auto& [key, value] : *keys) {
      const toml::node* old = old_section->get(key);
      if (!old || ValueText(*old) != ValueText(value))
        section_changes.insert(key, std::move(value));
    }
    if (!section_changes.empty()) changed.insert(section, std::move(section_changes));
  }
  return changed;
}

}  // namespace meshlearn::launch
