// meshlearn-node: runs one node from its config file until its rounds are done (or SIGINT/SIGTERM).
//
//   meshlearn-node --config node.toml [--log-level debug] [--check]
//
// --check validates the config and, with [security], reads the key files.
// A config with an [engine] section is a template for every rank an engine starts
// (node/config/node_template.h): the rank's identity comes from Slurm, Open MPI or Kubernetes, and
// the resolved config is written to <output_dir>/node.toml. Exit codes: 0 finished or stopped
// cleanly; 1 the node failed while running; 2 bad config, missing or bad key file, or bad command
// line (the message names the file, key and value).

#include <atomic>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "base/atomic_file.h"
#include "node/config/config.h"
#include "node/config/logging.h"
#include "node/config/node_template.h"
#include "node/host/node.h"
#include "process/process_limits.h"
#include "process/stop_signals.h"
#include "tools/cli_exit.h"
#include "tools/launch/run_layout.h"

int main(int argc, char** argv) {
  CLI::App app{"meshlearn-node: one peer-to-peer decentralized learning node"};
  std::string config_path;
  std::string log_level;
  bool check_only = false;
  app.add_option("-c,--config", config_path, "node config file (TOML; see configs/README.md)")
      ->required();
  app.add_option("--log-level", log_level,
                 "trace|debug|info|warn|error|critical|off (overrides the config)");
  app.add_flag("--check", check_only, "validate the config and exit");
  if (std::optional<int> exit = meshlearn::tools::ParseCommandLine(app, argc, argv)) return *exit;

  auto loaded = meshlearn::node::LoadNodeConfigOrTemplate(
      config_path, meshlearn::node::ProcessEngineEnvironment);
  if (!loaded.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s\n", loaded.status().ToString().c_str());
    return 2;
  }
  auto* config = &loaded->config;
  if (const auto& engine = loaded->engine) {
    std::printf(
        "meshlearn-node: %s rank %d of %d on %s: node %s, listening on %s, advertised as "
        "%s%s\n",
        std::string(NameOf(meshlearn::node::EngineKindNames(), engine->kind)).c_str(), engine->rank,
        engine->size, engine->host.c_str(), config->id.c_str(), config->listen.c_str(),
        config->advertise.c_str(),
        engine->rank == 0 ? "; rank 0: the others greet it"
                          : (", bootstrapping from rank 0 at " + engine->rank0_host + ":" +
                             std::to_string(engine->rank0_port))
                                .c_str());
    std::fflush(stdout);
  }
  if (!log_level.empty()) {
    auto level = meshlearn::ParseLogLevel(log_level);
    if (!level.ok()) {
      std::fprintf(stderr, "meshlearn-node: --log-level: %s\n", level.status().message().c_str());
      return 2;
    }
    config->log_level = *level;
  }
  if (check_only) {
    if (config->security) {
      auto keys = meshlearn::node::LoadNodeKeys(*config);
      if (!keys.ok()) {
        std::fprintf(stderr, "meshlearn-node: %s: %s\n", config_path.c_str(),
                     keys.status().ToString().c_str());
        return 2;
      }
    }
    std::printf("%s: config OK%s\n", config_path.c_str(),
                config->security ? " (key files read)" : "");
    return 0;
  }

  if (auto files = meshlearn::node::RaiseOpenFileLimit(); !files.ok()) {
    std::fprintf(stderr, "warning: %s\n", files.status().ToString().c_str());
  }
  // SIGINT and SIGTERM ask the node to stop after the current step (it says Goodbye to its
  // peers); one that comes while the node starts stops it as soon as it runs.
  std::atomic<bool> stop_requested{false};
  std::atomic<meshlearn::node::Node*> running{nullptr};
  auto stop_signals = meshlearn::StopSignals::Watch([&] {
    stop_requested = true;
    if (meshlearn::node::Node* n = running.load()) n->Stop();
  });
  if (!stop_signals.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s\n", stop_signals.status().ToString().c_str());
    return 1;
  }

  auto node = meshlearn::node::Node::Create(*config);
  if (!node.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s: %s\n", config_path.c_str(),
                 node.status().ToString().c_str());
    return 2;
  }
  if (loaded->engine) {
    std::string resolved =
        meshlearn::launch::PathIn(config->output_dir, meshlearn::launch::kNodeConfigFile);
    meshlearn::Status written =
        meshlearn::WriteFileAtomically(resolved, meshlearn::node::RenderNodeConfig(*config));
    if (!written.ok()) {
      std::fprintf(stderr, "meshlearn-node: %s\n", written.ToString().c_str());
      return 1;
    }
  }
  running = node->get();
  if (stop_requested) (*node)->Stop();
  meshlearn::Status status = (*node)->Run();
  stop_signals->reset();  // no callback outlives the node
  if (!status.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
