#pragma once
// Process-wide resource settings for the meshlearn executables.

#include <cstdint>

#include "base/status.h"

namespace meshlearn::node {

// Raises this process's limit on open files, to 65536 when privileged (root may raise the hard
// limit), else its soft limit to its hard limit, and returns the new soft limit. Rationale: every
// peer connection costs a few descriptors (ZeroMQ sockets, its signalers), so 100 nodes in one
// process, or one node in a large mesh, exceed the usual soft limit of 1024. kUnavailable with the
// system error when the limit cannot be read or set.
Result<uint64_t> RaiseOpenFileLimit();

}  // namespace meshlearn::node
