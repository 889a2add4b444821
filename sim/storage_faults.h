#pragma once
// Storage faults of the simulated world (sim/simulation.h): what can go wrong when a simulated
// node's buffered outputs reach the disk (node/host/world.h, World::WriteOutputFile). The node
// host is the real one and reacts as a process does: a write that fails is an error of the node
// (it says so and fails, reported with its reason); a torn checkpoint is found at the restart.
//
// Specification ([network.storage], configs/README.md; rates in [0, 1]).
// - Each flush of a node's outputs (it dies, finishes, fails, reaches a snapshot barrier, or the
//   run ends) draws its faults from its own generator, seeded by the node id, its incarnation,
//   the virtual time and the simulation's seed. Rationale: no generator state to keep, so a
//   snapshot and its resumed run draw the same faults, and the network's draws are untouched.
// - `full`: the flush finds the disk full; its first write fails with ENOSPC.
// - `fail`: each write of the flush fails with EIO with this probability (the files written
//   before it stay written).
// - `torn`: the checkpoint written while its node dies (a crash during the write) is torn with
//   this probability: the write reports success, but only the first half of its bytes reach the
//   disk; the rest reads as zeros. The restart refuses it with its checksum error, and the
//   simulation restarts the node clean (as the error tells an operator to do).

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "base/status.h"
#include "sim/network_model.h"

namespace meshlearn::sim {

// Counts of the storage faults injected, by name (the keys of SimulationReport::faults).
inline constexpr const char kWritesFailed[] = "write_failed";
inline constexpr const char kDisksFull[] = "disk_full";
inline constexpr const char kCheckpointsTorn[] = "checkpoint_torn";

// The storage of one simulation's nodes (see the specification). Not thread-safe: used on the
// simulation thread.
class SimulatedStorage {
 public:
  SimulatedStorage(const StorageFaultRates& rates, uint64_t seed) : rates_(rates), seed_(seed) {}

  // A flush of node `node_id`'s outputs (incarnation `generation`) begins at virtual time
  // `virtual_ns`; `crash`: the node is dying.
  void BeginFlush(const std::string& node_id, uint64_t generation, int64_t virtual_ns, bool crash);
  // The flush is over.
  void EndFlush() { flushing_ = false; }

  // Writes `bytes` to `path` atomically, or injects the flush's fault. kIoError naming the path
  // and the cause for a failed write.
  Status Write(const std::string& path, std::string_view bytes);

  // True when the last write of `path` was torn (and nothing was written there since).
  bool Torn(const std::string& path) const;
  // Forgets that `path` was torn (the simulation moved it away).
  void Forget(const std::string& path) { torn_.erase(path); }

  // The faults injected so far, by name (kWritesFailed, kDisksFull, kCheckpointsTorn).
  const std::map<std::string, uint64_t>& injected() const { return injected_; }

 private:
  // A uniform draw in [0, 1) for `what` of the flush under way.
  double Draw(const std::string& what) const;

  StorageFaultRates rates_;
  uint64_t seed_;
  bool flushing_ = false;
  std::string flush_key_;  // node, incarnation and time of the flush under way
  bool crash_ = false;
  bool full_ = false;
  int writes_ = 0;              // writes of the flush so far
  std::set<std::string> torn_;  // paths whose last write was torn
  std::map<std::string, uint64_t> injected_;
};

}  // namespace meshlearn::sim
