#pragma once
// The state of a simulation at a snapshot barrier (sim/simulation.h, "Snapshots"), beside the
// nodes' checkpoints: what a resumed simulation needs that no checkpoint holds.
//
// Format: TOML, described once (base/toml_table.h) by SimulationSnapshot::Describe and
// NodeSnapshot::Describe below: the format (kSnapshotFormat), the barrier's round, the cadence,
// the virtual time, the simulated seconds so far, the real and compute seconds of every launch so
// far (absent when not known), the network generator's state (std::mt19937_64's text form), and
// one [[nodes]] table per node, in config order.
// Rationale: text that a person can read when a resume is refused, with line numbers and keys in
// errors.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"

namespace meshlearn::sim {

// The file of the snapshot folder that records the last snapshot (sim/snapshot_barrier.h).
inline constexpr const char kSnapshotFileName[] = "snapshot.txt";

// The snapshot format this build writes and reads. Format 1 (lines of "<key> <values>", before
// the snapshot was described once) is refused with what to do.
inline constexpr int kSnapshotFormat = 2;

// The names of a node's state in a snapshot: running, or finished (all rounds done, or failed).
inline constexpr NamedValue<bool> kNodeStateNames[] = {{"running", true}, {"finished", false}};

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

  // The keys of one [[nodes]] table.
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& n) {
    keys.String("id", n.id);
    keys.Choice("state", n.running, NameTable<bool>(kNodeStateNames));
    keys.Integer("generation", n.generation);
    keys.Integer("bytes_in", n.bytes_in);
    keys.Integer("bytes_out", n.bytes_out);
    keys.Integer("last_round", n.last_round, {.min = -1});
    keys.Number("last_val_loss", n.last_val_loss, {.non_finite = true});
    keys.Integers("outages", n.outages);
    keys.OptionalString("failure", n.failure);
  }
};

// A simulation at a barrier.
struct SimulationSnapshot {
  int format = kSnapshotFormat;
  int64_t round = 0;
  int64_t every = 0;
  int64_t virtual_ns = 0;
  double simulated_seconds = 0;
  // Real and learners' compute seconds of every launch up to this barrier; NaN when not recorded.
  double real_seconds = std::numeric_limits<double>::quiet_NaN();
  double compute_seconds = std::numeric_limits<double>::quiet_NaN();
  std::string generator;
  std::vector<NodeSnapshot> nodes;

  // The keys of the file.
  template <class Keys, class Self>
  static void Describe(Keys& keys, Self& s) {
    keys.Format("format", s.format, kSnapshotFormat);
    keys.Integer("round", s.round, {.min = 0});
    keys.Integer("every", s.every, {.min = 1});
    keys.Integer("virtual_ns", s.virtual_ns, {.min = 0});
    keys.Number("simulated_seconds", s.simulated_seconds, {.min = 0});
    keys.Number("real_seconds", s.real_seconds, {.empty_is_nan = true, .min = 0});
    keys.Number("compute_seconds", s.compute_seconds, {.empty_is_nan = true, .min = 0});
    keys.String("generator", s.generator);
    keys.Tables("nodes", s.nodes);
  }
};

// The text of `snapshot` (the format above).
std::string SnapshotText(const SimulationSnapshot& snapshot);

// Parses the text of a snapshot read from `path` (for messages): kMalformed naming the line, the
// key and what is allowed for anything but SnapshotText's output (ParseToml), with what to do;
// kUnsupportedVersion for another format.
Result<SimulationSnapshot> ParseSnapshot(const std::string& text, const std::string& path);

}  // namespace meshlearn::sim
