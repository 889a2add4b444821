#pragma once
// A fresh, empty folder and a file name per test, shared by the test suites of every module.

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

// A file path of the running test's own: ::testing::TempDir() + "<suite>.<test>.<name>", with the
// '/' of a parameterised test's name made '_'. ctest runs tests side by side, so a file name that
// two tests share lets one overwrite the other's file mid-test.
inline std::string TestOwnPath(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string own = std::string(info->test_suite_name()) + "." + info->name() + "." + name;
  for (char& c : own) {
    if (c == '/') c = '_';
  }
  return ::testing::TempDir() + "/" + own;
}

}  // namespace meshlearn::testing
