#include "process/process_limits.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace meshlearn::node {
namespace {

// Enough for 100 nodes in one process that each talk to all others at once (about 3 descriptors
// per connection: the ZeroMQ socket's signaler and a TCP socket at each end).
constexpr rlim_t kWantedOpenFiles = 65536;

}  // namespace

Result<uint64_t> RaiseOpenFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return Status::Unavailable(std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
  }
  // A privileged process may also raise the hard limit (up to fs.nr_open); try a generous one
  // first, then fall back to the hard limit it has.
  rlimit wanted{kWantedOpenFiles, kWantedOpenFiles};
  if (limit.rlim_max < kWantedOpenFiles && ::setrlimit(RLIMIT_NOFILE, &wanted) == 0) {
    return static_cast<uint64_t>(kWantedOpenFiles);
  }
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      return Status::Unavailable(std::string("setrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
    }
  }
  return static_cast<uint64_t>(limit.rlim_cur);
}

}  // namespace meshlearn::node
