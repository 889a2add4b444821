#pragma once
// One client's partition on disk, so that a node process loads only its own data.
//
// Format version 1 (all integers and floats little-endian; see training/README.md):
//   magic        8 bytes   "MLSHARD1"
//   version      u32       1
//   task         u32       0 = classification, 1 = regression
//   client_id    i32
//   cluster_id   i32       ground truth, for the oracle baseline and the tables
//   num_classes  i64       0 for regression
//   rank         u32       1..8, dimensions of one sample
//   dims         i64[rank] each >= 1
//   3 splits, in the order train, validation, test, each:
//     count      u64       samples
//     features   f32[count * prod(dims)]
//     labels     i64[count] (classification)  or  targets f32[count] (regression)
//   crc32        u32       zlib crc32 of every byte before it
// The field order and meanings of version 1 are frozen; a new layout gets a new version.

#include <string>
#include <string_view>

#include "base/status.h"
#include "training/partition.h"

namespace meshlearn::training {

// The current shard format version.
inline constexpr uint32_t kShardFormatVersion = 1;

// The conventional file of client `client_id` inside `dir`: "<dir>/client-<id>.shard".
std::string ShardPath(const std::string& dir, int client_id);
// The same for a client named by text: a number, or a placeholder an engine fills in per rank
// ("{rank}", tools/launch/engine_run.h).
std::string ShardPath(const std::string& dir, std::string_view client);

// Serialises `shard` in format version 1. The result decodes back to an equal shard.
std::string EncodeShard(const ClientShard& shard);

// Parses bytes produced by EncodeShard. `name` (usually the file path) prefixes every error.
// Errors: kMalformed for a wrong magic, truncation, a checksum mismatch, trailing bytes,
// impossible dimensions or counts, labels outside [0, num_classes) or non-finite floats;
// kUnsupportedVersion for a version other than 1.
Result<ClientShard> DecodeShard(std::string_view bytes, const std::string& name);

// Writes `shard` to `path` atomically (temporary file, fsync, rename), creating parent folders.
Status WriteShard(const std::string& path, const ClientShard& shard);

// Reads and validates the shard file at `path` (kNotFound when it does not exist).
Result<ClientShard> ReadShard(const std::string& path);

}  // namespace meshlearn::training
