#pragma once
// The node config parser at the level of TOML tables, for the parsers that edit a config's tree
// before reading it (node/config/node_template.h) and for the launcher, which reads a scenario's
// node keys onto the configs it builds (tools/scenario/scenario.h). It exposes toml++: include it
// only where toml++ is linked.

#include <string>

#include <toml++/toml.h>

#include "base/status.h"
#include "base/toml_reader.h"
#include "node/config/config.h"

namespace meshlearn::node {

// Parses TOML text `text`; `name` prefixes the message of a syntax error (kInvalidArgument, with
// line and column).
Result<toml::table> ParseTomlText(const std::string& text, const std::string& name);

// Reads a node config from the parsed table `root` (the rules of ParseNodeConfig()).
Result<NodeConfig> ParseNodeConfigTable(const toml::table& root, const std::string& name);

// Reads the keys `root` holds onto `config`, by the descriptions ParseNodeConfigTable() reads
// with, and leaves every other key as it is: no key is required and no rule between keys is
// checked (CheckNodeConfig() checks the config once it is complete). Errors as
// ParseNodeConfig()'s, prefixed with `name` (and the line, for nodes that have one), or with the
// origin `origins` gives a node of `root` (a table merged from several sources).
Status ReadNodeConfigKeys(const toml::table& root, const std::string& name, NodeConfig& config,
                          const TableReader::Origins* origins = nullptr);

}  // namespace meshlearn::node
