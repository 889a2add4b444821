#include "node/config/logging.h"

#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

namespace meshlearn {
namespace {

TEST(Logging, LevelNamesParseAndBadOnesListTheAllowedValues) {
  auto level = ParseLogLevel("debug");
  ASSERT_TRUE(level.ok());
  EXPECT_EQ(*level, spdlog::level::debug);
  auto bad = ParseLogLevel("loud");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'loud'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("trace, debug, info"), std::string::npos);
}

TEST(Logging, EveryLineCarriesTheNodeIdAndHonoursTheLevel) {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  auto logger = MakeNodeLogger("node-7", spdlog::level::warn, sink);
  logger->info("hidden");
  logger->warn("peer node-3 missed the deadline");
  logger->flush();
  std::string text = captured.str();
  EXPECT_EQ(text.find("hidden"), std::string::npos);
  EXPECT_NE(text.find("[node-7] [warning] peer node-3 missed the deadline\n"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace meshlearn
