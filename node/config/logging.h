#pragma once
// Logging setup for a node process or thread: every line carries the node id, and the level comes
// from the config or the command line.

#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "base/named_value.h"
#include "base/status.h"

namespace meshlearn {

// The config name of every log level, in documentation order: "trace", "debug", "info", "warn",
// "error", "critical", "off".
NameTable<spdlog::level::level_enum> LogLevelNames();

// Parses a level name of LogLevelNames(). kInvalidArgument names the value and lists the allowed
// ones.
Result<spdlog::level::level_enum> ParseLogLevel(const std::string& name);

// Creates a logger for node `node_id` at `level`, whose every line reads
// "<time> [<node_id>] [<level>] <text>". It writes to `sink`, or when null to a stderr sink that
// all loggers of the process share (in-process mode runs many nodes; spdlog sinks lock per line,
// so lines never interleave mid-line).
std::shared_ptr<spdlog::logger> MakeNodeLogger(const std::string& node_id,
                                               spdlog::level::level_enum level,
                                               spdlog::sink_ptr sink = nullptr);

}  // namespace meshlearn
