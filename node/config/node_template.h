#pragma once
// Node config templates: one config file for every rank an engine (Slurm, Open MPI, Kubernetes)
// starts, each rank taking its identity from the engine (node/config/engine_identity.h).
//
// Specification.
// - A node config with an [engine] section is a template. [engine] holds kind, port, hostfile,
//   service and size (EngineSettings); it never reaches the node config itself.
// - Loading a template resolves the rank's identity, then fills the placeholders {rank}, {size},
//   {host} and {port} in every string value, and completes the config:
//   - `advertise` defaults to "tcp://<host>:<port>" (the host name peers reach this rank at);
//   - `mesh_size` defaults to the world size (round 1 waits for the whole mesh);
//   - every rank but 0 gets rank 0 as a peer: its id is the template's `id` filled for rank 0,
//     its address "tcp://<rank 0's host>:<rank 0's port>". [[peers]] of the template are a seed
//     list shared by every rank: an entry that names the rank itself is dropped.
//   Rationale: no per-node file; the rest of the mesh comes by gossip, as on a LAN.
// - `id` may use {rank} and {size} only, so that every rank can name rank 0.
// - A config without [engine] holding a placeholder is refused, naming the key: it would run
//   with a literal "{rank}" as its id or path.
// - A rank without a usable identity is refused with the engine's message (the variable looked
//   for and what it held), prefixed with the file name.

#include <functional>
#include <optional>
#include <string>

#include "base/status.h"
#include "node/config/config.h"
#include "node/config/engine_identity.h"

namespace meshlearn::node {

// A node config as read from a file: a plain config, or a template resolved for this rank.
struct LoadedNodeConfig {
  NodeConfig config;
  std::optional<EngineIdentity> engine;  // set for a template
};

// Gives the engine environment a template is resolved in; called only for a template, with its
// [engine] settings (the hostfile to read, say).
using EngineEnvironmentSource = std::function<Result<EngineEnvironment>(const EngineSettings&)>;

// Parses `text` (a node config or a template; `name` prefixes errors), resolving a template in
// the environment `source` gives. Errors as ParseNodeConfig(), plus those of the specification.
Result<LoadedNodeConfig> ParseNodeConfigOrTemplate(const std::string& text, const std::string& name,
                                                   const EngineEnvironmentSource& source);

// Renders `config` (whose strings may hold placeholders) as a template for the ranks `engine`
// describes: RenderNodeConfig()'s keys and the [engine] section, which
// ParseNodeConfigOrTemplate() reads back. [engine]'s hostfile, service and size are left out
// while they are empty (0).
std::string RenderNodeTemplate(const NodeConfig& config, const EngineSettings& engine);

// Reads the file at `path` and parses it with ParseNodeConfigOrTemplate() (kNotFound when it does
// not exist).
Result<LoadedNodeConfig> LoadNodeConfigOrTemplate(const std::string& path,
                                                  const EngineEnvironmentSource& source);

// This process's engine environment: its environment variables, gethostname() and, when
// `settings.hostfile` is set, that file's text (kNotFound / kIoError naming it when it cannot be
// read).
Result<EngineEnvironment> ProcessEngineEnvironment(const EngineSettings& settings);

}  // namespace meshlearn::node
