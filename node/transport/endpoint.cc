#include "node/transport/endpoint.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <memory>
#include <optional>

namespace meshlearn::node {
namespace {

constexpr const char* kForm =
    "must look like \"tcp://<ip>:<port>\" (or a host name for <ip>), e.g. \"tcp://127.0.0.1:5555\"";

struct HostPort {
  std::string host;  // without brackets
  bool ipv6 = false;
  std::string port;
};

// Splits "tcp://<host>:<port>"; nullopt when the endpoint does not have that form.
std::optional<HostPort> Split(const std::string& endpoint) {
  const std::string prefix = "tcp://";
  if (endpoint.rfind(prefix, 0) != 0) return std::nullopt;
  std::string rest = endpoint.substr(prefix.size());
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) return std::nullopt;
  HostPort out;
  out.host = rest.substr(0, colon);
  out.port = rest.substr(colon + 1);
  if (out.host.front() == '[') {
    if (out.host.size() < 3 || out.host.back() != ']') return std::nullopt;
    out.host = out.host.substr(1, out.host.size() - 2);
    out.ipv6 = true;
  }
  return out;
}

bool IsNumber(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::string TcpEndpointProblem(const std::string& endpoint, bool listening) {
  std::optional<HostPort> parts = Split(endpoint);
  if (!parts) return kForm;
  const HostPort& p = *parts;
  if (listening && p.port == "*") {
    // any free port
  } else if (!IsNumber(p.port) || p.port.size() > 5 || std::stoi(p.port) > 65535 ||
             (!listening && std::stoi(p.port) == 0)) {
    return "port '" + p.port + "' must be a number from " + (listening ? "0" : "1") + " to 65535" +
           (listening ? " or *" : "");
  }
  unsigned char address[16];
  if (p.ipv6) {
    if (inet_pton(AF_INET6, p.host.c_str(), address) != 1) {
      return "'" + p.host + "' is not an IPv6 address";
    }
    return "";
  }
  if (listening && p.host == "*") return "";
  if (p.host.find_first_not_of("0123456789.") == std::string::npos) {
    if (inet_pton(AF_INET, p.host.c_str(), address) != 1) {
      return "'" + p.host + "' is not an IPv4 address (four numbers from 0 to 255)";
    }
    return "";
  }
  if (p.host.find_first_not_of(
          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") !=
          std::string::npos ||
      p.host.front() == '-' || p.host.front() == '.') {
    return "'" + p.host + "' is neither an IP address nor a host name";
  }
  return "";
}

Status CheckTcpEndpoint(const std::string& endpoint, bool listening) {
  std::string problem = TcpEndpointProblem(endpoint, listening);
  if (problem.empty()) return Status::Ok();
  return Status::InvalidArgument("endpoint '" + endpoint + "': " + problem);
}

Status ResolveTcpEndpoint(const std::string& endpoint) {
  MESHLEARN_RETURN_IF_ERROR(CheckTcpEndpoint(endpoint));
  std::optional<HostPort> parts = Split(endpoint);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int error = getaddrinfo(parts->host.c_str(), nullptr, &hints, &found);
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> owned(found, freeaddrinfo);
  if (error != 0) {
    return Status::InvalidArgument("endpoint '" + endpoint + "': host '" + parts->host +
                                   "' does not resolve: " + gai_strerror(error));
  }
  return Status::Ok();
}

std::string EndpointHost(const std::string& endpoint) {
  std::string rest = endpoint.rfind("tcp://", 0) == 0 ? endpoint.substr(6) : endpoint;
  size_t colon = rest.rfind(':');
  return colon == std::string::npos ? rest : rest.substr(0, colon);
}

std::string EndpointPort(const std::string& endpoint) {
  size_t colon = endpoint.rfind(':');
  return colon == std::string::npos ? "" : endpoint.substr(colon + 1);
}

}  // namespace meshlearn::node
