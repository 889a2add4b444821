// meshlearn-node: runs one node from its config file until its rounds are done (or SIGINT/SIGTERM).
//
//   meshlearn-node --config node.toml [--log-level debug] [--check | --check-join]
//   meshlearn-node --version   (the version and the build: commit, clean or dirty)
//
// --check validates the config and, with [security], reads the key files. --check-join also
// tries the configured peers as the node's join would, and prints what worked and what failed,
// and why (node/host/join_check.h); exit code 0 when every peer can be joined, 1 otherwise.
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
#include "node/host/join_check.h"
#include "node/host/node.h"
#include "process/build_identity.h"
#include "process/process_limits.h"
#include "process/stop_signals.h"
#include "tools/cli/cli_exit.h"
#include "tools/layout/run_layout.h"
#include "training/cpu_pinning.h"

namespace {

using namespace meshlearn;

// What meshlearn-node was asked to do.
struct NodeCommandLine {
  std::string config_path;
  std::string log_level;  // empty: the config's
  bool check_only = false;
  bool check_join = false;
};

// Declares meshlearn-node's options on `app`, bound to the fields of `line` (which must outlive
// the parse).
void DeclareOptions(CLI::App& app, NodeCommandLine& line) {
  app.add_option("-c,--config", line.config_path, "node config file (TOML; see configs/README.md)")
      ->required();
  app.add_option("--log-level", line.log_level,
                 "trace|debug|info|warn|error|critical|off (overrides the config)");
  auto* check = app.add_flag("--check", line.check_only, "validate the config and exit");
  app.add_flag("--check-join", line.check_join,
               "try the configured peers as the join would, print what worked and what failed "
               "and why, and exit")
      ->excludes(check);
}

// Prints which rank of which engine this node is, and how it finds the others.
void PrintEngineRank(const node::EngineIdentity& engine, const node::NodeConfig& config) {
  std::printf(
      "meshlearn-node: %s rank %d of %d on %s: node %s, listening on %s, advertised as "
      "%s%s\n",
      std::string(NameOf(node::EngineKindNames(), engine.kind)).c_str(), engine.rank, engine.size,
      engine.host.c_str(), config.id.c_str(), config.listen.c_str(), config.advertise.c_str(),
      engine.rank == 0 ? "; rank 0: the others greet it"
                       : (", bootstrapping from rank 0 at " + engine.rank0_host + ":" +
                          std::to_string(engine.rank0_port))
                             .c_str());
  std::fflush(stdout);
}

// --check: the config (loaded from `config_path`) is valid; with [security], its key files are
// read too. Returns the exit code: 0 valid, 2 a key file is missing or bad.
int CheckConfig(const std::string& config_path, const node::NodeConfig& config) {
  if (config.security) {
    auto keys = node::LoadNodeKeys(config);
    if (!keys.ok()) {
      std::fprintf(stderr, "meshlearn-node: %s: %s\n", config_path.c_str(),
                   keys.status().ToString().c_str());
      return tools::kExitBadInput;
    }
  }
  std::printf("%s: config OK%s\n", config_path.c_str(), config.security ? " (key files read)" : "");
  return tools::kExitOk;
}

// --check-join: tries the peers of `config` (loaded from `config_path`) and prints the findings.
// Returns the exit code: 0 every peer can be joined, 1 not, 2 a key file or the model is bad.
int CheckJoin(const std::string& config_path, const node::NodeConfig& config) {
  auto check = node::CheckJoin(config);
  if (!check.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s: %s\n", config_path.c_str(),
                 check.status().ToString().c_str());
    return tools::kExitBadInput;
  }
  std::fputs(node::RenderJoinCheck(config, *check).c_str(), stdout);
  return check->ok() ? tools::kExitOk : tools::kExitFailed;
}

// Runs the node of `config` (loaded from `config_path`) until its rounds are done or SIGINT or
// SIGTERM stops it. An engine rank (`write_resolved`) first writes its resolved config to
// <output_dir>/node.toml. Returns the exit code: 0 finished or stopped cleanly, 1 failed while
// running, 2 the node could not be created from its config.
int RunNode(const std::string& config_path, const node::NodeConfig& config, bool write_resolved) {
  if (auto files = node::RaiseOpenFileLimit(); !files.ok()) {
    std::fprintf(stderr, "warning: %s\n", files.status().ToString().c_str());
  }
  // SIGINT and SIGTERM ask the node to stop after the current step (it says Goodbye to its
  // peers); one that comes while the node starts stops it as soon as it runs.
  std::atomic<bool> stop_requested{false};
  std::atomic<node::Node*> running{nullptr};
  auto stop_signals = StopSignals::Watch([&] {
    stop_requested = true;
    if (node::Node* n = running.load()) n->Stop();
  });
  if (!stop_signals.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s\n", stop_signals.status().ToString().c_str());
    return tools::kExitFailed;
  }

  std::printf("meshlearn-node: %s, %s\n", node::ThisBuild().version.c_str(),
              node::DescribeBuild(node::ThisBuild()).c_str());
  std::printf("meshlearn-node: %s\n", training::CpuKernelSummary().c_str());
  std::fflush(stdout);
  auto created = node::Node::Create(config);
  if (!created.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s: %s\n", config_path.c_str(),
                 created.status().ToString().c_str());
    return tools::kExitBadInput;
  }
  if (write_resolved) {
    std::string resolved = launch::PathIn(config.output_dir, launch::kNodeConfigFile);
    Status written = WriteFileAtomically(resolved, node::RenderNodeConfig(config));
    if (!written.ok()) {
      std::fprintf(stderr, "meshlearn-node: %s\n", written.ToString().c_str());
      return tools::kExitFailed;
    }
  }
  running = created->get();
  if (stop_requested) (*created)->Stop();
  Status status = (*created)->Run();
  stop_signals->reset();  // no callback outlives the node
  if (!status.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s\n", status.ToString().c_str());
    return tools::kExitFailed;
  }
  return tools::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  if (!training::PinCpuKernelsOrExplain("meshlearn-node")) return tools::kExitBadInput;
  CLI::App app{"meshlearn-node: one peer-to-peer decentralized learning node"};
  app.set_version_flag("--version", node::VersionText("meshlearn-node"));
  NodeCommandLine line;
  DeclareOptions(app, line);
  if (std::optional<int> exit = tools::ParseCommandLine(app, argc, argv)) return *exit;

  auto loaded = node::LoadNodeConfigOrTemplate(line.config_path, node::ProcessEngineEnvironment);
  if (!loaded.ok()) {
    std::fprintf(stderr, "meshlearn-node: %s\n", loaded.status().ToString().c_str());
    return tools::kExitBadInput;
  }
  node::NodeConfig& config = loaded->config;
  if (loaded->engine) PrintEngineRank(*loaded->engine, config);
  if (!line.log_level.empty()) {
    auto level = ParseLogLevel(line.log_level);
    if (!level.ok()) {
      std::fprintf(stderr, "meshlearn-node: --log-level: %s\n", level.status().message().c_str());
      return tools::kExitBadInput;
    }
    config.log_level = *level;
  }
  if (line.check_only) return CheckConfig(line.config_path, config);
  if (line.check_join) return CheckJoin(line.config_path, config);
  return RunNode(line.config_path, config, loaded->engine.has_value());
}
