#pragma once
// The TCP endpoints nodes listen on and reach each other at, "tcp://<host>:<port>", checked before
// ZeroMQ sees them.
//
// Rationale: ZeroMQ accepts many malformed or unresolvable addresses at connect time and then
// retries in silence, so a typo in a peer's address would leave a node training alone without a
// word (PROTOCOL.md, "Transport"; issue "failing loudly").

#include <string>

#include "base/status.h"

namespace meshlearn::node {

// Checks that `endpoint` reads "tcp://<host>:<port>": the host an IPv4 address (four numbers
// 0-255), an IPv6 address in brackets, or a host name (letters, digits, '-' and '.'); the port a
// number 1-65535. With `listening`, the host may also be "*" (every interface) and the port 0 or
// "*" (any free port). kInvalidArgument saying what is wrong, e.g. that "300.1.2.3" is not an IPv4
// address.
Status CheckTcpEndpoint(const std::string& endpoint, bool listening = false);

// Why CheckTcpEndpoint refuses `endpoint` ("must look like ...", "'300.1.2.3' is not an IPv4
// address ..."), without the endpoint itself; "" when it does not.
std::string TcpEndpointProblem(const std::string& endpoint, bool listening = false);

// The host of "tcp://<host>:<port>" ("10.0.0.2", "[::1]", "*"), and its port ("5555", "0", "*");
// for text of another shape, what follows the last ':' is the port and what comes before it,
// without "tcp://", the host.
std::string EndpointHost(const std::string& endpoint);
std::string EndpointPort(const std::string& endpoint);

// Checks `endpoint` (CheckTcpEndpoint) and resolves its host: an address at once, a host name with
// the system's resolver (which may wait on DNS). kInvalidArgument naming the endpoint and the
// resolver's cause when it does not resolve.
Status ResolveTcpEndpoint(const std::string& endpoint);

}  // namespace meshlearn::node
