// meshlearn-node: runs one node from its config file until its rounds are done (or SIGINT/SIGTERM).
//
//   meshlearn-node --config node.toml [--log-level debug] [--check]
//
// --check validates the config and, with [security], reads the key files.
// Exit codes: 0 finished or stopped cleanly; 1 the node failed while running; 2 bad config,
// missing or bad key file, or bad command line (the message names the file, key and value).
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <thread>

#include <CLI/CLI.hpp>

#include "node/config.h"
#include "node/logging.h"
#include "node/node.h"
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
  // Signals are taken by one thread with sigwait: SIGINT and SIGTERM ask the node to stop after
  // the current step; SIGUSR1, sent by main when Run() returned, ends the thread. They are blocked
  // before the node starts its threads, so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto node = meshlearn::node::Node::Create(*config);
  if (!node.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s: %s\n", config_path.c_str(),
                 node.status().ToString().c_str());
    return 2;
  }
  std::thread signal_thread([&] {
    for (int signal = 0; sigwait(&signals, &signal) == 0 && signal != SIGUSR1;) {
      (*node)->Stop();
    }
  });

  meshlearn::Status status = (*node)->Run();
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  signal_thread.join();
  if (!status.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
