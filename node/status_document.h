#pragma once
// The status document of a running node: one typed snapshot (NodeStatus), rendered as the JSON of
// GET /status and the Prometheus text of GET /metrics (node/http_status.h).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "node/state_machine.h"
#include "node/transport.h"
#include "topology/peer_table.h"

namespace meshlearn::node {

// One peer as the node sees it.
struct PeerStatus {
  std::string id;
  std::string endpoint;
  topology::Liveness liveness = topology::Liveness::kCandidate;
  std::optional<double> score;  // s_ij; empty when unscored
  double probability = 0;       // p_ij
  uint64_t times_sampled = 0;
  uint64_t answered = 0;
};

// Everything the status documents show, taken at one moment.
struct NodeStatus {
  std::string id;
  std::string endpoint;
  int64_t round = -1;  // last completed round
  int64_t rounds = 0;  // rounds to run
  std::string metric;
  std::string sampler;
  std::vector<PeerStatus> peers;  // the peer table, ordered by id
  // p_ij of every peer the sampler knows, ordered by id.
  std::vector<std::pair<std::string, double>> probabilities;
  MachineCounters counters;
  TransportStats transport;
};

// The status of `machine` at `now`: its peers, scores and counters, with the transport's
// counters `transport`; `id`, `endpoint`, `rounds` and `metric` describe the node.
NodeStatus TakeNodeStatus(const NodeStateMachine& machine, const TransportStats& transport,
                          std::string id, std::string endpoint, int64_t rounds, std::string metric,
                          TimePoint now);

// The JSON of GET /status: id, endpoint, round, rounds, metric, sampler, peers (liveness, score,
// probability, counters) and the node's and transport's counters. Strings are escaped; a
// non-finite number is null.
std::string StatusJson(const NodeStatus& status);

// The Prometheus text of GET /metrics: round, bytes in and out, refused handshakes, missed
// deadlines, rejected messages by code and each peer's probability, labelled with the node id.
std::string MetricsText(const NodeStatus& status);

}  // namespace meshlearn::node
