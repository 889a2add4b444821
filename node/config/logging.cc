#include "node/config/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace meshlearn {

namespace {

constexpr NamedValue<spdlog::level::level_enum> kLogLevels[] = {
    {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},
    {"info", spdlog::level::info},   {"warn", spdlog::level::warn},
    {"error", spdlog::level::err},   {"critical", spdlog::level::critical},
    {"off", spdlog::level::off},
};

}  // namespace

NameTable<spdlog::level::level_enum> LogLevelNames() { return kLogLevels; }

Result<spdlog::level::level_enum> ParseLogLevel(const std::string& name) {
  if (std::optional<spdlog::level::level_enum> level = ValueNamed(LogLevelNames(), name)) {
    return *level;
  }
  return Status::InvalidArgument("log level '" + name +
                                 "' is not one of trace, debug, info, warn, error, critical, off");
}

std::shared_ptr<spdlog::logger> MakeNodeLogger(const std::string& node_id,
                                               spdlog::level::level_enum level,
                                               spdlog::sink_ptr sink) {
  static auto stderr_sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  if (!sink) sink = stderr_sink;
  auto logger = std::make_shared<spdlog::logger>(node_id, sink);
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e [" + node_id + "] [%l] %v");
  logger->set_level(level);
  // Every line is flushed: node.log must hold the last lines when a node dies (the launcher shows
  // them), and a node logs only a few lines per round.
  logger->flush_on(spdlog::level::trace);
  return logger;
}

}  // namespace meshlearn
