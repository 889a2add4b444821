#pragma once
// What a run was built and run with, for the launcher's run manifest (tools/scenario/manifest.h).

#include <string>
#include <utility>
#include <vector>

namespace meshlearn::node {

// The meshlearn version: "<project version>+git.<git describe --always --tags --dirty>" captured
// when the sources were built from a git checkout, else "<project version> (not built from a git
// checkout)".
std::string BuildVersion();

// (library, version) of the compiler and of every library that shapes a run's results or files:
// LibTorch, ZeroMQ, msgpack-c, toml++, spdlog, Boost, zlib and igraph.
std::vector<std::pair<std::string, std::string>> LibraryVersions();

}  // namespace meshlearn::node
