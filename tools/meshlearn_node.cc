// meshlearn-node: runs one node from its config file until its rounds are done (or SIGINT/SIGTERM).
//
//   meshlearn-node --config node.toml [--log-level debug] [--check]
//
// --check validates the config and, with [security], reads the key files.
// Exit codes: 0 finished or stopped cleanly; 1 the node failed while running; 2 bad config,
// missing or bad key file, or bad command line (the message names the file, key and value).
#include <csignal>
#include <cstdio>
#include <thread>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "node/config.h"
#include "node/logging.h"
#include "node/node.h"
#include "node/process_limits.h"
#include "tools/cli_exit.h"

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

  auto config = meshlearn::node::LoadNodeConfig(config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s\n", config.status().ToString().c_str());
    return 2;
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

  meshlearn::Status status = (*node)->Run();
  signals_context.stop();
  signal_thread.join();
  if (!status.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
