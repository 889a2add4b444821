#include "process/build_info.h"

#include <zlib.h>
#include <zmq.h>

#include <spdlog/version.h>
#include <toml++/toml.h>
#include <boost/version.hpp>
#include <msgpack/version.hpp>

#include "similarity/clustering.h"
#include "training/model.h"

namespace meshlearn::node {

std::vector<std::pair<std::string, std::string>> LibraryVersions() {
  auto dotted = [](int major, int minor, int patch) {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  };
  int zmq_major = 0, zmq_minor = 0, zmq_patch = 0;
  zmq_version(&zmq_major, &zmq_minor, &zmq_patch);
  std::string boost = BOOST_LIB_VERSION;
  for (char& c : boost) c = c == '_' ? '.' : c;
  return {
      {"compiler", __VERSION__},
      {"libtorch", training::LibTorchVersion()},
      {"zeromq", dotted(zmq_major, zmq_minor, zmq_patch)},
      {"msgpack-c", msgpack_version()},
      {"toml++", dotted(TOML_LIB_MAJOR, TOML_LIB_MINOR, TOML_LIB_PATCH)},
      {"spdlog", dotted(SPDLOG_VER_MAJOR, SPDLOG_VER_MINOR, SPDLOG_VER_PATCH)},
      {"boost", boost},
      {"zlib", zlibVersion()},
      {"igraph", similarity::IgraphVersion()},
  };
}

}  // namespace meshlearn::node
