#pragma once
// The exit codes of the meshlearn tools, their command-line parse and the flags several commands
// share. The one place the codes are spelled: every tool and command returns one of these
// (docs/experiments.md "Exit codes and errors", docs/lan.md).

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

// Declares --allow-dirty on `app`, bound to `allow`: a command that writes files lets a build that
// is not clean write them into a checkout's results/ (tools/layout/kept_results.h).
inline CLI::Option* AddAllowDirtyFlag(CLI::App& app, bool& allow) {
  return app.add_flag("--allow-dirty", allow,
                      "write into a checkout's results/ folder even though this build's tree was "
                      "not clean or is unknown (the manifest records the diff hash)");
}

}  // namespace meshlearn::tools
