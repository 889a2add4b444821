#pragma once
// The node config parser at the level of TOML tables, for the parsers that edit a config's tree
// before reading it (node/config/node_template.h). Internal to node/: it exposes toml++.

#include <string>

#include <toml++/toml.h>

#include "base/status.h"
#include "node/config/config.h"

namespace meshlearn::node {

// Parses TOML text `text`; `name` prefixes the message of a syntax error (kInvalidArgument, with
// line and column).
Result<toml::table> ParseTomlText(const std::string& text, const std::string& name);

// Reads a node config from the parsed table `root` (the rules of ParseNodeConfig()).
Result<NodeConfig> ParseNodeConfigTable(const toml::table& root, const std::string& name);

}  // namespace meshlearn::node
