#include "process/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>

namespace meshlearn::node {
namespace {

// The kernel's ephemeral port range (Linux default 32768-60999).
std::pair<int, int> EphemeralRange() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768, high = 60999;
  in >> low >> high;
  return {low, high};
}

// True when a TCP socket can bind `port` on `address` now.
bool CanBind(sockaddr_in address, uint16_t port) {
  address.sin_port = htons(port);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  return ok;
}

// The address `ip` for bind(), and the span of ports FindFreeTcpPort() picks from.
struct PortSearch {
  sockaddr_in address{};
  int first = 0, last = 0;
};

Result<PortSearch> StartSearch(const std::string& ip) {
  PortSearch search;
  search.address.sin_family = AF_INET;
  if (::inet_pton(AF_INET, ip.c_str(), &search.address.sin_addr) != 1) {
    return Status::InvalidArgument("'" + ip + "' is not an IPv4 address");
  }
  // Ports are taken below the ephemeral range. Rationale: a node's outgoing connections get
  // their local ports from that range, so a port picked there could be taken by a connection
  // between this check and the node's bind (seen with 99 nodes on one machine).
  auto [low, high] = EphemeralRange();
  search.first = low > 11000 ? 10000 : high + 1;
  search.last = low > 11000 ? low - 1 : 65535;
  return search;
}

// Ports handed out before are skipped: a launcher picks every node's port before any binds.
std::mutex handed_out_mu;
std::set<uint16_t> handed_out;

// The first of `count` free ports from `search`, starting the scan at a point derived from the
// process id (concurrent launchers start apart).
Result<uint16_t> FindRange(const PortSearch& search, const std::string& ip, int count) {
  std::lock_guard<std::mutex> lock(handed_out_mu);
  auto span = static_cast<uint32_t>(search.last - search.first + 1);
  if (count < 1 || static_cast<uint32_t>(count) > span) {
    return Status::InvalidArgument("cannot find " + std::to_string(count) + " consecutive ports");
  }
  uint32_t start = static_cast<uint32_t>(::getpid()) * 7919u;
  for (uint32_t i = 0; i < span; ++i) {
    uint32_t base = (start + i) % span;
    if (base + count > span) continue;
    bool free = true;
    for (int k = 0; k < count && free; ++k) {
      auto port = static_cast<uint16_t>(search.first + base + k);
      free = !handed_out.count(port) && CanBind(search.address, port);
    }
    if (!free) continue;
    for (int k = 0; k < count; ++k)
      handed_out.insert(static_cast<uint16_t>(search.first + base + k));
    return static_cast<uint16_t>(search.first + base);
  }
  return Status::Unavailable("no " + std::to_string(count) + " consecutive free TCP ports on " +
                             ip + " in " + std::to_string(search.first) + "-" +
                             std::to_string(search.last));
}

}  // namespace

Result<uint16_t> FindFreeTcpPort(const std::string& ip) {
  auto search = StartSearch(ip);
  if (!search.ok()) return search.status();
  return FindRange(*search, ip, 1);
}

Result<uint16_t> FindFreeTcpPortRange(const std::string& ip, int count) {
  auto search = StartSearch(ip);
  if (!search.ok()) return search.status();
  return FindRange(*search, ip, count);
}

}  // namespace meshlearn::node
