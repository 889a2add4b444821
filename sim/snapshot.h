#pragma once
// The state of a simulation at a snapshot barrier (sim/simulation.h, "Snapshots"), beside the
// nodes' checkpoints: what a resumed simulation needs that no checkpoint holds.
//
// Format: text, one field per line, "<key> <values>" after the first line (kSnapshotMagic):
//   round <k>               the barrier: every node completed round k (or finished)
//   every <n>               the snapshot cadence the run was started with
//   virtual_ns <t>          the virtual time of the barrier
//   simulated_seconds <s>   the simulation's report so far
//   spent_seconds <real> <compute>   optional: the real seconds and the learners' compute seconds
//                           of every launch so far, up to this barrier (absent in snapshots
//                           written before it existed, or when an earlier launch's are unknown)
//   generator <state>       the network's generator (std::mt19937_64's text form)
//   nodes <count>
//   node <id> <running|finished> <generation> <bytes_in> <bytes_out> <last_round> <val_loss>
//        <outage count> <outage index>...     (one line per node, in config order)
//   failure <text>          (optional, after the node line of a node that failed)
// Rationale: text that a person can read when a resume is refused, with line numbers in errors.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace meshlearn::sim {

// The file of the snapshot folder that records the last snapshot (sim/snapshot_barrier.h).
inline constexpr const char kSnapshotFileName[] = "snapshot.txt";

// One node at the barrier.
struct NodeSnapshot {
  std::string id;
  bool running = true;  // else finished (all rounds done, or failed)
  uint64_t generation = 0;
  uint64_t bytes_in = 0;  // received and sent by its incarnations so far
  uint64_t bytes_out = 0;
  int64_t last_round = -1;
  double last_val_loss = 0;     // NaN before the first round
  std::vector<size_t> outages;  // indexes of the [network] outages still to come
  std::optional<std::string> failure;
};

// A simulation at a barrier.
struct SimulationSnapshot {
  int64_t round = 0;
  int64_t every = 0;
  int64_t virtual_ns = 0;
  double simulated_seconds = 0;
  // Real and learners' compute seconds of every launch up to this barrier; NaN when not recorded.
  double real_seconds = std::numeric_limits<double>::quiet_NaN();
  double compute_seconds = std::numeric_limits<double>::quiet_NaN();
  std::string generator;
  std::vector<NodeSnapshot> nodes;
};

// The text of `snapshot` (the format above).
std::string SnapshotText(const SimulationSnapshot& snapshot);

// Parses the text of a snapshot read from `path` (for messages). kMalformed naming the line and
// what is wrong for anything but SnapshotText's output.
Result<SimulationSnapshot> ParseSnapshot(const std::string& text, const std::string& path);

}  // namespace meshlearn::sim
