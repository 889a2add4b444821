#pragma once
// The command-line parse of the meshlearn tools, with their documented exit codes.

#include <optional>

#include <CLI/CLI.hpp>

namespace meshlearn::tools {

// Parses `argv` into `app`. Returns nullopt to go on; otherwise the process's exit code, after
// CLI11 printed what it has to say: 0 for --help, 2 for any bad command line (a missing or
// unknown option, a value out of range). Rationale: CLI11's own codes (105 for a value out of
// range, 109 for an extra argument, ...) are not the documented 2.
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace meshlearn::tools
