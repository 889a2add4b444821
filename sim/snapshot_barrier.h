#pragma once
// The snapshot barrier of a simulation (sim/simulation.h, "Snapshots"): when it falls, which nodes
// are there, and the snapshot folder it writes and a resumed simulation reads. The simulation
// does the rest: it stops and restarts the nodes (sim/simulator_snapshots.cc).
//
// Specification.
// - Barriers fall after rounds k = r + N, r + 2N, ... (N = snapshot_every > 0; r = 0, or the round
//   of the snapshot a run resumed from) as long as k is below some node's last round.
// - A node is at the barrier when it is finished (all its rounds done, or failed), or running
//   with round k completed. A paused or dead node is not: an outage holds the barrier up. The
//   barrier is due when every node is there; it is taken at that virtual time, after the events
//   already queued for it, if every node is still there then.
//   Rationale: a node that dies after round k restarts from its checkpoint of round k, so the
//   barrier waits for it instead of snapshotting a node that has no host.
// - The snapshot folder (SimulationOptions::snapshot_dir):
//     snapshot.txt                     the last snapshot (its format: sim/snapshot.h)
//     round-<k>/<id>.checkpoint.bin    the checkpoint of each running node at barrier k
//   A snapshot copies the checkpoints into round-<k>/, then replaces snapshot.txt atomically, then
//   removes every other folder of the snapshot folder.
//   Rationale: a run killed while it snapshots keeps the previous snapshot.txt, whose round folder
//   is still whole.
// - Resuming reads snapshot.txt and checks it against the run before anything changes: taken
//   with the same N, for the same nodes in the same order, naming only outages of this run's
//   [network], with a network generator that reads back. Then each running node's checkpoint is
//   copied back into its output folder (node/host/checkpoint.h, CheckpointPathOf), where its host
//   resumes from it.

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/sim_node.h"
#include "sim/snapshot.h"

namespace meshlearn::sim {

// A simulation's snapshot barriers and its snapshot folder. Not thread-safe: used on the
// simulation thread.
class SnapshotBarrier {
 public:
  // Barriers every `every` rounds (0: none) for `nodes` nodes, with the snapshot folder `dir`.
  SnapshotBarrier(int64_t every, std::string dir, size_t nodes);

  // ---- When: the barrier ahead and who is there.

  // The round after which every node waits next (-1: no barrier ahead).
  int64_t next() const { return next_; }
  // Plans the first barrier after round `round` for nodes that have `rounds[i]` rounds each (the
  // specification's first rule).
  void PlanAfter(int64_t round, const std::vector<int64_t>& rounds);
  // Records where node `i` is: `finished`, or running with `completed_round` done (nullopt: it has
  // no host, as when paused or dead). True when this made the barrier due: the caller schedules
  // Take() for now, once.
  bool Update(size_t i, bool finished, std::optional<int64_t> completed_round);
  // The barrier's scheduled time came: true when every node is still there and the snapshot is to
  // be taken (false: one left since, and a later Update() makes the barrier due again). Either way
  // it is no longer scheduled.
  bool Take();
  // Clears every node's place, once the snapshot is taken.
  void Clear();

  // ---- What: the snapshot folder.

  // Starts the snapshot of barrier `round`: creates its round folder.
  void Begin(int64_t round);
  // Copies the checkpoint of node `id` at `checkpoint_path` into the round folder of Begin().
  // kIoError naming the folder and the node.
  Status KeepCheckpoint(const std::string& id, const std::string& checkpoint_path) const;
  // Replaces snapshot.txt with `snapshot` (taken at Begin()'s barrier), then removes every folder
  // of the snapshot folder but Begin()'s round folder (even when snapshot.txt could not be
  // written). kIoError naming the file.
  Status Commit(const SimulationSnapshot& snapshot) const;

  // ---- Resuming.

  // Reads snapshot.txt and checks it against a run of the nodes `ids` (in config order) with
  // `outages` [network] outages; sets `generator` to the snapshot's network generator. kNotFound
  // when there is no snapshot, kMalformed naming the line of a damaged one, kInvalidArgument
  // naming what belongs to another run. Changes no file.
  Result<SimulationSnapshot> Load(const std::vector<std::string>& ids, size_t outages,
                                  std::mt19937_64& generator) const;
  // Copies the checkpoint of node `id` in the round folder of `round` to `checkpoint_path`.
  // kIoError naming the folder and the node.
  Status RestoreCheckpoint(int64_t round, const std::string& id,
                           const std::string& checkpoint_path) const;

 private:
  // "<dir>/round-<round>".
  std::string RoundDir(int64_t round) const;
  // "<dir>/snapshot.txt".
  std::string SnapshotPath() const;

  int64_t every_;
  std::string dir_;
  int64_t next_ = -1;
  std::vector<bool> there_;  // per node: at the barrier
  size_t count_ = 0;         // nodes there
  bool scheduled_ = false;   // Take() is scheduled
  std::string round_dir_;    // Begin()'s
};

// Node `n`'s part of a snapshot.
NodeSnapshot SnapshotOf(const SimNode& n);
// Puts the saved part `saved` back into node `n` (its state: running or finished).
void RestoreFromSnapshot(const NodeSnapshot& saved, SimNode& n);

}  // namespace meshlearn::sim
