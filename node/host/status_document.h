#pragma once
// The status document of a running node: one typed snapshot (NodeStatus), rendered as the JSON of
// GET /status and the Prometheus text of GET /metrics (process/http_server.h), and read back from
// that JSON by whoever watches the node (the launcher's dashboard).

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "node/logic/state_machine.h"
#include "node/transport/transport.h"
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
  // Why greeting it last failed while it is unverified (a closed port, a refused key, ...); ""
  // once it is verified or when nothing failed.
  std::string problem;
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
  double val_loss = 0;  // validation loss of the last completed round; NaN before the first
  // [privacy]: the ε the node's training records have spent so far; NaN without DP
  double epsilon = std::numeric_limits<double>::quiet_NaN();
  MachineCounters counters;
  TransportStats transport;
  uint64_t http_requests = 0;  // requests its HTTP endpoint answered so far
  double http_cpu_s = 0;       // CPU seconds its HTTP endpoint spent so far
};

// The status of `machine` at `now`: its peers, scores and counters, with the transport's
// counters `transport`; `id`, `endpoint`, `rounds` and `metric` describe the node.
NodeStatus TakeNodeStatus(const NodeStateMachine& machine, const TransportStats& transport,
                          std::string id, std::string endpoint, int64_t rounds, std::string metric,
                          TimePoint now);

// The JSON of GET /status: id, endpoint, round, rounds, metric, sampler, val_loss, epsilon, peers
// (liveness, score, probability, counters), the node's and transport's counters and the HTTP
// endpoint's cost. A non-finite number is null; bytes that are not UTF-8 become U+FFFD.
std::string StatusJson(const NodeStatus& status);

// Reads the JSON of StatusJson back: StatusJson(*ParseStatusJson(StatusJson(s))) ==
// StatusJson(s) (the transport counters it does not show stay 0). kMalformed naming the field for
// text that is not such a document.
Result<NodeStatus> ParseStatusJson(const std::string& json);

// The Prometheus text of GET /metrics: round, ε spent (meshlearn_privacy_epsilon, with
// [privacy] only), bytes in and out, refused handshakes, missed
// deadlines, rejected messages by code and each peer's probability, labelled with the node id.
std::string MetricsText(const NodeStatus& status);

// The node's own page, served at GET / of its HTTP port (node/web/node.html, embedded at build
// time): it polls /status and shows the peers, scores, probabilities, round and counters. Returns
// the bytes of the embedded file `name` ("node.html"), or an empty view for another name.
std::string_view NodePageFile(std::string_view name);

}  // namespace meshlearn::node
