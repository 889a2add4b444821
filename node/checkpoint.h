#pragma once
// Node checkpoints: everything needed to resume after a crash at the last completed round.
//
// Format (msgpack, one array): ["MLCKPT", version 1, round, stopped, learner, sampler, comm,
// peers, rng_state]; weights are msgpack bin of little-endian float32. Written atomically after
// every round (base/atomic_file.h). The optimiser has no state to keep: the trainer builds
// a fresh one every round, as the authors' code does (training/trainer.h).

#include <string>

#include "base/status.h"
#include "node/learner.h"
#include "node/state_machine.h"

namespace meshlearn::node {

// A node's resumable state.
struct Checkpoint {
  int64_t round = -1;  // last completed round
  bool stopped = false;
  LearnerState learner;
  MachineState machine;
};

// Serialises `checkpoint`.
std::string EncodeCheckpoint(const Checkpoint& checkpoint);
// Parses bytes from EncodeCheckpoint; `name` prefixes errors. kMalformed for anything else,
// kUnsupportedVersion for another format version.
Result<Checkpoint> DecodeCheckpoint(const std::string& bytes, const std::string& name);
// Writes `checkpoint` to `path` atomically.
Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint);
// Reads the checkpoint at `path` (kNotFound when there is none).
Result<Checkpoint> ReadCheckpoint(const std::string& path);

}  // namespace meshlearn::node
