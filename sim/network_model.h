#pragma once
// The network a simulation runs on (the scenario's [network] section, configs/README.md): how
// long a message takes on a link, which messages are lost, and the faults that come and go.
//
// Specification.
// - A message of B bytes takes latency + B / bandwidth to cross a link (every link alike); an
//   infinite bandwidth (0 in the config) makes it latency alone. Defaults: no latency, infinite
//   bandwidth, no loss.
// - Each message (request or reply) is lost with probability `loss`, drawn from the simulation's
//   seeded generator in the order messages are sent, so a seed gives the same losses every run.
// - An outage takes a node away once it has completed round `after_round`, for `seconds` of
//   simulated time. A death loses everything the node had in memory: it comes back by restarting
//   from its last checkpoint, as a process restarted by hand does. A pause keeps its state: it
//   processes nothing meanwhile, and what arrived for it waits, as a process stopped with SIGSTOP.
// - A partition splits the nodes into groups: a message between two groups is lost while its
//   sender is in a round in [from_round, to_round). A one-way partition loses only the messages
//   from its first group to the others; those the other way pass (a request from the first
//   group is lost, a request to it arrives but its reply is lost).
// - A message that is not lost may be damaged on the way, each with its own probability drawn
//   from the same generator (and only when that probability is above 0): `corrupt` inverts the
//   first byte of its body (the second frame; the envelope stays readable, so the receiver can
//   answer with an Error), `truncate` cuts its last frame to half its length. The receiver decodes
//   the damaged frames as a process decodes bytes from a socket, and refuses them with the
//   protocol's error. A message that is not lost also arrives a second time with probability
//   `duplicate` (drawn after the damage, only when above 0), one transfer time after the first
//   (node/transport/simulated_network.h: a copy of a request is a request of its own; a copy of
//   a reply is dropped as late).
// - Storage faults (`storage`, sim/storage_faults.h): failed writes, full disks and torn
//   checkpoints when a node's outputs are flushed.
// - A learner's round job takes `round_compute_s` of simulated time (other learner jobs none).
//   Rationale: simulated time must not depend on how fast the machine trains, or the same seed
//   would not give the same outputs.
// - Heterogeneity (sim/heterogeneity.h draws it): each node has a compute factor on
//   `round_compute_s` and an access link (a latency and a bandwidth); a message between two nodes
//   takes the higher of their latencies and the lower of their bandwidths. Without the keys every
//   node has factor 1 and the mesh's link, so the rule above holds unchanged.
// - Churn: nodes leave and return at simulated times, from a trace or drawn; a node that leaves
//   dies as in an outage of kind death and restarts from its checkpoint when it returns.

#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/named_value.h"
#include "protocol/frame.h"

namespace meshlearn::sim {

// What an outage does to its node.
enum class OutageKind {
  kDeath,  // "death": the node loses its memory and restarts from its checkpoint
  kPause,  // "pause": the node stops and continues where it was
};

// The config name of every OutageKind, in documentation order.
NameTable<OutageKind> OutageKindNames();

// A node away for a while (see the specification).
struct Outage {
  std::string node;
  OutageKind kind = OutageKind::kDeath;
  int64_t after_round = 0;  // it goes once it has completed this round
  double seconds = 0;       // simulated seconds it stays away
};

// Groups that cannot reach each other for a while (see the specification).
struct Partition {
  std::vector<std::set<std::string>> groups;
  int64_t from_round = 0;
  int64_t to_round = 0;  // exclusive
  bool one_way = false;  // only messages from groups[0] to the other groups are lost
};

// How per-node factors are drawn ([network] compute, latency, bandwidth; sim/heterogeneity.h).
enum class SpreadKind {
  kNone,       // every factor is 1
  kLogNormal,  // "lognormal": exp(sigma * z), z standard normal (median 1)
  kUniform,    // "uniform": uniform in [min, max]
};

// The config name of every SpreadKind but kNone, in documentation order.
NameTable<SpreadKind> SpreadKindNames();

// A distribution of per-node factors.
struct Spread {
  SpreadKind kind = SpreadKind::kNone;
  double sigma = 0;  // kLogNormal
  double min = 1;    // kUniform
  double max = 1;    // kUniform
};

// The slowest nodes: `count` nodes (or round(fraction x N) when count is 0) chosen from the seed
// compute `factor` times slower.
struct SlowNodes {
  int64_t count = 0;
  double fraction = 0;
  double factor = 1;
};

// One node's own values ([[network.nodes]]); each one set replaces the drawn one.
struct NodeNetwork {
  std::string node;
  std::optional<double> compute;                // factor on round_compute_s
  std::optional<double> latency_s;              // its access link's one-way latency
  std::optional<double> bandwidth_bytes_per_s;  // its access link's bandwidth; 0: infinite
};

// One period a node is away (a churn trace's row): it leaves at `leave_s` and returns at
// `return_s` (simulated seconds from the start).
struct Away {
  std::string node;
  double leave_s = 0;
  double return_s = 0;
};

// Churn drawn from the seed: a share of the nodes alternate exponential up and down periods,
// starting up.
struct DrawnChurn {
  double fraction = 0;  // the share of nodes that churn (0: none)
  double mean_up_s = 0;
  double mean_down_s = 0;
};

// Storage fault rates ([network.storage]; sim/storage_faults.h), each in [0, 1].
struct StorageFaultRates {
  double fail = 0;  // each write of a flush fails (EIO)
  double full = 0;  // a flush finds the disk full (ENOSPC)
  double torn = 0;  // the checkpoint a dying node writes is torn
};

// What NetworkModel::Damage did to a message.
struct Damaged {
  bool corrupted = false;
  bool truncated = false;
};

// The simulated seconds a message of `bytes` takes on a link of one-way `latency_s` and
// `bandwidth_bytes_per_s` (0: infinite): latency + bytes / bandwidth.
double LinkTransferSeconds(double latency_s, double bandwidth_bytes_per_s, uint64_t bytes);

// The network model of a simulation.
struct NetworkModel {
  double latency_s = 0;              // one way, every link
  double bandwidth_bytes_per_s = 0;  // 0: infinite
  double loss = 0;                   // probability that a message is lost, in [0, 1)
  double corrupt = 0;                // probability that a message's body is damaged, in [0, 1]
  double truncate = 0;               // probability that a message's last frame is cut, in [0, 1]
  double duplicate = 0;              // probability that a message not lost arrives twice, in [0, 1]
  StorageFaultRates storage;
  double round_compute_s = 0;  // simulated seconds of one round's training and evaluation
  std::vector<Outage> outages;
  std::vector<Partition> partitions;
  // Heterogeneity: per-node draws, the slow nodes and per-node values (sim/heterogeneity.h).
  Spread compute;
  Spread latency;
  Spread bandwidth;
  SlowNodes slow;
  std::vector<NodeNetwork> nodes;
  // Churn: a trace (its periods, per node in time order, not overlapping) or drawn; not both.
  std::vector<Away> churn_trace;
  DrawnChurn churn;

  // The simulated seconds a message of `bytes` takes on the mesh's link (LinkTransferSeconds).
  double TransferSeconds(uint64_t bytes) const;
  // Damages `frames` as `corrupt` and `truncate` say, drawing from `rng` only for a probability
  // above 0; says what it did.
  Damaged Damage(std::vector<Frame>& frames, std::mt19937_64& rng) const;
  // True when a message not lost arrives a second time (drawn from `rng` only for `duplicate`
  // above 0).
  bool Duplicates(std::mt19937_64& rng) const;
  // True when a partition cuts the link from node `from` (in round `round`) to node `to`.
  bool Cut(const std::string& from, const std::string& to, int64_t round) const;
};

}  // namespace meshlearn::sim
