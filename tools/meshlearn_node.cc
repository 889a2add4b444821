// meshlearn-node: runs one node from its config file until its rounds are done (or SIGINT/SIGTERM).
//
//   meshlearn-node --config node.toml [--log-level debug] [--check]
//
// --check validates the config and, with [security], reads the key files.
// A config with an [engine] section is a template for every rank an engine starts
// (node/node_template.h): the rank's identity comes from Slurm, Open MPI or Kubernetes, and the
// resolved config is written to <output_dir>/node.toml.
// Exit codes: 0 finished or stopped cleanly; 1 the node failed while running; 2 bad config,
// missing or bad key file, or bad command line (the message names the file, key and value).
#include <csignal>
#include <cstdio>
#include <thread>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "base/atomic_file.h"
#include "node/config.h"
#include "node/logging.h"
#include "node/node.h"
#include "node/node_template.h"
#include "node/process_limits.h"

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
  CLI11_PARSE(app, argc, argv);

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
  auto node = meshlearn::node::Node::Create(*config);
  if (!node.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s: %s\n", config_path.c_str(),
                 node.status().ToString().c_str());
    return 2;
  }

  // Signals are handled on an Asio thread that asks the node to stop after the current step.
  boost::asio::io_context signals_context;
  boost::asio::signal_set signals(signals_context, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& error, int) {
    if (!error) (*node)->Stop();
  });
  std::thread signal_thread([&] { signals_context.run(); });

  if (loaded->engine) {
    std::string resolved = config->output_dir + "/node.toml";
    meshlearn::Status written =
        meshlearn::WriteFileAtomically(resolved, meshlearn::node::RenderNodeConfig(*config));
    if (!written.ok()) {
      std::fprintf(stderr, "meshlearn-node: %s\n", written.ToString().c_str());
      return 1;
    }
  }
  meshlearn::Status status = (*node)->Run();
  signals_context.stop();
  signal_thread.join();
  // The node has stopped: a second SIGTERM (an engine signals the rank's whole process group,
  // and its rank script passes the signal on too) must not kill it while it shuts down.
  boost::system::error_code ignored;
  signals.clear(ignored);
  std::signal(SIGTERM, SIG_IGN);
  std::signal(SIGINT, SIG_IGN);
  if (!status.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
