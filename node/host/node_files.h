#pragma once
// The names of the files a node keeps in its output folder (DESIGN.md "Outputs"). The one place
// they are spelled: the node host writes them, and the simulator and the launcher's run layout
// (tools/layout/run_layout.h) take them from here. Header only, with no dependencies, so that
// torch-free code can name a node's files without linking the node.

namespace meshlearn::node {

inline constexpr const char kRoundsFile[] = "rounds.csv";        // one row per round
inline constexpr const char kCommFile[] = "comm.csv";            // times each peer was sampled
inline constexpr const char kScoresFile[] = "scores.csv";        // final scores, probabilities
inline constexpr const char kEmdFile[] = "emd.csv";              // the EMD exchange's row
inline constexpr const char kClusterFile[] = "cluster.csv";      // a clustering policy's result
inline constexpr const char kSignatureFile[] = "signature.csv";  // FLT's signature distances
inline constexpr const char kCheckpointFile[] = "checkpoint.bin";
inline constexpr const char kNodeLogFile[] = "node.log";
inline constexpr const char kNodeLockFile[] = "node.lock";  // held by the running node

}  // namespace meshlearn::node
