#pragma once
// Finding a free TCP port on a local address, for the launcher and tests that start nodes.

#include <cstdint>
#include <string>

#include "base/status.h"

namespace meshlearn::node {

// Returns a TCP port that was free on `ip` (e.g. "127.0.0.1") a moment ago, chosen below the
// kernel's ephemeral port range so that no outgoing connection can take it. Successive calls in
// one process return different ports. Another process may still bind it before the caller does;
// callers bind soon after. kInvalidArgument for a bad address, kUnavailable when none is free.
Result<uint16_t> FindFreeTcpPort(const std::string& ip);

// Returns the first of `count` consecutive TCP ports that were all free on `ip` a moment ago,
// below the ephemeral range as FindFreeTcpPort(), for the ranks of an engine run (rank r listens
// on the first port + r). kUnavailable when no such range is free.
Result<uint16_t> FindFreeTcpPortRange(const std::string& ip, int count);

}  // namespace meshlearn::node
