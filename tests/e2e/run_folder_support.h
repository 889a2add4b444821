#pragma once
// Helpers for the end-to-end tests of meshlearn-launch's run folder (run_folder_test.cc,
// run_folder_reliability_test.cc): a launch run to its end, a folder's files, the manifest read
// as TOML.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "tests/e2e/launcher_support.h"

namespace meshlearn::e2e {

// Runs meshlearn-launch with `args` to its end; its output goes to "<dir>/<name>.log".
inline Finished RunLauncher(const std::string& dir, const std::string& name,
                            std::vector<std::string> args) {
  args.insert(args.begin(), MESHLEARN_LAUNCH_BIN);
  return RunToEnd(args, dir + "/" + name + ".log");
}

// Every file under `dir` with its contents, by path relative to `dir`.
inline std::map<std::string, std::string> Files(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    files[std::filesystem::relative(entry.path(), dir).string()] = ReadText(entry.path().string());
  }
  return files;
}

// The manifest of the run in `out`, read as TOML (fails the test when it is missing or does not
// parse).
inline toml::table ManifestOf(const std::string& out) {
  std::string path = out + "/manifest.toml";
  EXPECT_TRUE(std::filesystem::exists(path)) << path;
  try {
    return toml::parse(ReadText(path), path);
  } catch (const toml::parse_error& e) {
    ADD_FAILURE() << path << ": " << e.description();
    return {};
  }
}

// The string, integer or array size at `path` ("methods[0].status") of `table`.
inline std::string Text(const toml::table& table, const std::string& path) {
  return table.at_path(path).value_or(std::string());
}
inline int64_t Integer(const toml::table& table, const std::string& path) {
  return table.at_path(path).value_or(int64_t{-99});
}
inline size_t Count(const toml::table& table, const std::string& path) {
  const toml::array* array = table.at_path(path).as_array();
  return array ? array->size() : 0;
}

}  // namespace meshlearn::e2e
