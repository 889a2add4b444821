#pragma once
// What a run was run with, for the launcher's run manifest (tools/scenario/manifest.h); what it was
// built from is process/build_identity.h.

#include <string>
#include <utility>
#include <vector>

namespace meshlearn::node {

// (library, version) of the compiler and of every library that shapes a run's results or files:
// LibTorch, ZeroMQ, msgpack-c, toml++, spdlog, Boost, zlib and igraph.
std::vector<std::pair<std::string, std::string>> LibraryVersions();

}  // namespace meshlearn::node
