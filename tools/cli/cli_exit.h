#pragma once
// The exit codes of the meshlearn tools, and their command-line parse. The one place the codes
// are spelled: every tool and command returns one of these (docs/experiments.md "Exit codes and
// errors", docs/lan.md).

#include <optional>

#include <CLI/CLI.hpp>

namespace meshlearn::tools {

inline constexpr int kExitOk = 0;  // done: every method ran, the key was written, no violation
// The tool ran and failed: a node failed while running (meshlearn-node), a key was not written
// (meshlearn-keygen), an invariant failed (meshlearn-launch fuzz).
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;       // bad config, scenario, command line or run folder
inline constexpr int kExitNodesFailed = 3;    // a launch: results written, but some nodes failed
inline constexpr int kExitInterrupted = 130;  // Ctrl-C; the results so far are written

// Parses `argv` into `app`. Returns nullopt to go on; otherwise the process's exit code, after
// CLI11 printed what it has to say: kExitOk for --help, kExitBadInput for any bad command line (a
// missing or unknown option, a value out of range). Rationale: CLI11's own codes (105 for a value
// out of range, 109 for an extra argument, ...) are not the documented kExitBadInput.
inline std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitBadInput;
  }
  return std::nullopt;
}

}  // namespace meshlearn::tools
