#pragma once
// A fresh, empty folder per test, shared by the test suites of every module.

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace meshlearn::testing {

// A fresh, empty folder for the running test: <system temp>/<area>/<suite>.<test>.
inline std::string FreshTestDir(const std::string& area) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::filesystem::path dir = std::filesystem::temp_directory_path() / area /
                              (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace meshlearn::testing
