#pragma once
// `meshlearn-launch check-plugin FILE [--floats N] [--trials T] [--seed S]`: checks a plug-in file
// against its plug-in point's contract on random inputs before a long run (plugins/
// check_plugin.h; docs/plugins.md "Check it"). Prints the report and exits 0, or prints the error
// (naming the file and what was expected) and exits 2 (tools/cli/cli_exit.h).

namespace meshlearn::tools {

// Runs the command on `argv` (argv[0] is "check-plugin").
int CheckPluginCommand(int argc, char** argv);

}  // namespace meshlearn::tools
