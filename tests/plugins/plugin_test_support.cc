#include "tests/plugins/plugin_test_support.h"

#include <fstream>

namespace meshlearn::plugins::testing {

std::string TextFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

void ExpectError(const Status& status, ErrorCode code, const std::vector<std::string>& parts) {
  EXPECT_EQ(status.code(), code) << status.ToString();
  for (const std::string& part : parts) {
    EXPECT_NE(status.message().find(part), std::string::npos)
        << "'" << part << "' not in: " << status.message();
  }
}

}  // namespace meshlearn::plugins::testing
