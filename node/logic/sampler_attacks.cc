#include "node/logic/sampler_attacks.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace meshlearn::node {

topology::ScoreRow LyingScoreRow(const topology::ScoreRow& honest,
                                 const std::vector<std::string>& allies, const std::string& self) {
  double largest = 0;
  for (const topology::ScoreEntry& e : honest) largest = std::max(largest, std::abs(e.score));
  const double high = honest.empty() ? 1 : 2 * largest;
  const double low = high * 1e-6;
  std::map<std::string, double> lies;
  for (const topology::ScoreEntry& e : honest) lies[e.peer] = low;
  for (const std::string& ally : allies) {
    if (ally != self) lies[ally] = high;
  }
  topology::ScoreRow row;
  for (const auto& [peer, score] : lies) row.push_back({peer, score});
  return row;
}

std::vector<PeerInfo> SybilIdentities(const std::string& self, const std::string& own_endpoint,
                                      int count, SybilAddress address) {
  std::vector<PeerInfo> sybils;
  const std::string stem = self.substr(0, 48) + ".sybil";
  for (int k = 0; k < count; ++k) {
    std::string endpoint = address == SybilAddress::kSelf
                               ? own_endpoint
                               : "tcp://192.0.2.1:" + std::to_string(1024 + k);
    sybils.push_back({stem + std::to_string(k), std::move(endpoint), ""});
  }
  return sybils;
}

}  // namespace meshlearn::node
