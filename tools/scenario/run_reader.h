#pragma once
// Reading a run folder back (its names are tools/layout/run_layout.h's): the only reader of a run
// folder. `report`, `serve`, `bytes-to-target`, the dashboard and --resume all read through
// ReadRunFolder / ReadMethodRun.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tools/scenario/run_types.h"

namespace meshlearn::launch {

// The method `name` whose folder is `dir`, read back from disk: every node of `partition` with its
// rounds.csv, whether it attacked, its compression and the run's last round (node.toml), and a
// failure when its exit_status (engine runs) is not 0 or it left no rounds.csv, and its full-test
// figures when the method folder holds full_test.csv (a malformed one is reported on stderr and
// left out). The wall time is the slowest node's last wall_s; peak memory is not known (0).
MethodRun ReadMethodRun(const std::string& dir, const std::string& name,
                        const Partition& partition);

// A run folder read back from disk.
struct RunFolder {
  std::string title;               // the scenario's name (manifest.toml), else the folder's
  Partition partition;             // ids and clusters (shard paths are not read)
  std::vector<MethodRun> runs;     // one per method folder, nodes' rounds read
  std::vector<std::string> notes;  // what could not be known and what was assumed instead
  std::optional<uint64_t> seed;    // the run's seed (manifest.toml); nullopt without a manifest
};

// Reads the run folder `dir`, whoever made it: a launch (local or engine) or nodes started by
// hand.
// - Methods are the subfolders holding node-<id>/ folders, or `dir` itself when it holds them.
//   Their names and order come from summary.csv when there is one (a method's folder is its
//   name's Slug()), else from manifest.toml's methods, else the folder names in natural order.
// - Nodes and clusters come from clusters.csv (node,cluster; ids in natural order); without it,
//   every node found is in cluster 0 (a note says so).
// - A node is failed when its exit_status (engine runs) is not 0, or it left no rounds.csv; an
//   attacker when its node.toml has an [attack] kind; its compression is its node.toml's. Peak
//   memory is not known (0).
// - A method's real and simulated seconds are those its manifest.toml records for it once it
//   ended; without that record, its real seconds are its slowest node's last wall_s. A method
//   the manifest records as interrupted is read as interrupted.
// kNotFound when `dir` does not exist or holds no node folder; kMalformed naming the file, line
// and column for a clusters.csv or summary.csv that does not parse.
Result<RunFolder> ReadRunFolder(const std::string& dir);

// Reads the run folders `dirs` (ReadRunFolder) as one: the methods of each, in order. They must
// be runs of one scenario, each method run once: kInvalidArgument naming both folders when two
// hold different nodes or clusters, or the same method. The title is the first folder's; a note
// names any folder whose scenario name differs.
Result<RunFolder> ReadRunFolders(const std::vector<std::string>& dirs);

}  // namespace meshlearn::launch
