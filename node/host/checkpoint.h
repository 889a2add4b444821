#pragma once
// Node checkpoints: everything needed to resume after a crash at the last completed round, and
// which run it belongs to.
//
// Format version 2 (msgpack): ["MLCKPT", 2, crc32, body], where body is a msgpack bin holding
// [identity, wall_s, round, stopped, learner, sampler, comm, peers, rng_state(, estimates(,
// halted))] and crc32 is the CRC-32 of the body's bytes (base/crc32.h). identity = [node_id,
// seed, shard_hash, settings]; estimates, the top-k public estimates
// (node/logic/public_estimates.h), is written only when the node has any or halted (nil then);
// halted, why the node's learning halted (MachineState::halted), only when it did.
// Weights are msgpack bin of little-endian float32. Version 1, ["MLCKPT", 1, round, stopped,
// learner, sampler, comm, peers, rng_state], had neither identity nor checksum; it is still read.
// Written atomically after every round (base/atomic_file.h). The optimiser has no state to keep:
// the trainer builds a fresh one every round, as the authors' code does (training/trainer.h).

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "node/config/config.h"
#include "node/host/node_files.h"
#include "node/logic/learner.h"
#include "node/logic/state_machine.h"

namespace meshlearn::node {

// "<output_dir>/checkpoint.bin": the checkpoint the node of `config` writes after every completed
// round and resumes from when it starts.
std::string CheckpointPathOf(const NodeConfig& config);

// The run a checkpoint belongs to. A node resumes only from a checkpoint of its own run.
struct CheckpointIdentity {
  std::string node_id;
  uint64_t seed = 0;
  // StableHash of the shard file's bytes (0 when it could not be read). Rationale: not their
  // CRC-32, which is the same for every shard file, since a shard ends with the CRC-32 of what
  // precedes it.
  uint64_t shard_hash = 0;
  std::string settings;  // LearningSettings() of the config that wrote it
  bool operator==(const CheckpointIdentity&) const = default;
};

// The config keys that decide what a node learns, as TOML (RenderNodeConfig's form): every key
// except where the node listens, its peers, its output folder and shard path (the shard counts by
// its contents), logging, threads, HTTP, [security], the [round] timing keys, and `rounds`.
// Rationale: a node restarted on other ports, with other peers or more rounds, continues the
// same run; another model, metric or learning rate does not.
std::string LearningSettings(const NodeConfig& config);

// The identity of the run `config` describes; reads the shard file to checksum it.
CheckpointIdentity IdentityOf(const NodeConfig& config);

// How checkpoint identity `stored` differs from `expected`, e.g. "seed: 1 in the checkpoint, 2
// in this config; shard data: hash 0x1a2b3c4d5e6f7081 in the checkpoint, 0x... in this config";
// empty when they are equal.
std::string DescribeIdentityDifference(const CheckpointIdentity& stored,
                                       const CheckpointIdentity& expected);

// A node's resumable state.
struct Checkpoint {
  int64_t round = -1;  // last completed round
  bool stopped = false;
  LearnerState learner;
  MachineState machine;
  // Whose it is; nullopt only for a checkpoint read from format version 1.
  std::optional<CheckpointIdentity> identity;
};

// Serialises `checkpoint` in format version 2 (an absent identity is written empty).
std::string EncodeCheckpoint(const Checkpoint& checkpoint);
// Parses bytes from EncodeCheckpoint (version 2) or an older build (version 1); `name` prefixes
// errors. kMalformed for corrupted bytes (a checksum mismatch included) or anything else,
// kUnsupportedVersion for a newer format version.
Result<Checkpoint> DecodeCheckpoint(const std::string& bytes, const std::string& name);
// Writes `checkpoint` to `path` atomically.
Status WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint);
// Reads the checkpoint at `path` (kNotFound when there is none).
Result<Checkpoint> ReadCheckpoint(const std::string& path);

// Reads the checkpoint at `path` for the node whose run is `expected`. kNotFound when there is
// none; kMalformed when it is corrupt and kInvalidArgument when it belongs to another run (its
// identity differs): both messages name the file, say what is wrong and how to fix it. A
// format-1 checkpoint has no identity to check and is returned as it is.
Result<Checkpoint> ReadCheckpointOfRun(const std::string& path, const CheckpointIdentity& expected);

}  // namespace meshlearn::node
