#include "tools/check_plugin_command.h"

#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

#include "plugins/check_plugin.h"
#include "tools/cli/cli_exit.h"

namespace meshlearn::tools {

int CheckPluginCommand(int argc, char** argv) {
  CLI::App app{
      "meshlearn-launch check-plugin: check a TorchScript plug-in against its contract on random "
      "inputs (docs/plugins.md)"};
  std::string path;
  size_t floats = 4096;
  int trials = 10;
  uint64_t seed = 1;
  app.add_option("file", path, "the .pt file saved by torch.jit.script(module).save(path)")
      ->required();
  app.add_option("--floats", floats,
                 "the model size to check on, in floats (a node's is its model's: the log's "
                 "'parameters' at start; default 4096)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 30));
  app.add_option("--trials", trials, "calls on random inputs (default 10)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--seed", seed, "the seed of the random inputs (default 1)");
  if (std::optional<int> exit = ParseCommandLine(app, argc, argv)) return *exit;
  Result<std::string> report = plugins::CheckPlugIn(path, floats, trials, seed);
  if (!report.ok()) {
    std::fprintf(stderr, "check-plugin: %s\n", report.status().ToString().c_str());
    return kExitBadInput;
  }
  std::fputs(report->c_str(), stdout);
  return kExitOk;
}

}  // namespace meshlearn::tools
