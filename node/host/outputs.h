#pragma once
// A node's output folder (docs/DESIGN.md "Outputs"): rounds.csv, comm.csv, scores.csv and the
// checkpoint. rounds.csv gets one row per round, flushed at once, so a killed node leaves only
// complete rows; comm.csv and scores.csv are replaced atomically every round. node.lock marks the
// folder as taken while a node writes to it.

#include <sys/types.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "base/csv_table.h"
#include "base/file_lock.h"
#include "base/status.h"
#include "node/logic/state_machine.h"
#include "topology/comm_counters.h"
#include "topology/sampler.h"

namespace meshlearn::node {

// One row of rounds.csv: DESIGN.md's columns, then train_s and eval_s (seconds spent in local
// training and evaluation that round, for the launcher's round-overhead figure), temperature,
// epsilon ([privacy]: the ε spent so far, empty without DP) and peers (the sampled peer ids,
// separated by ';'). Empty cells read as NaN.
struct RoundRow {
  int64_t round = 0;
  double wall_s = 0, train_loss = 0, val_loss = 0, val_acc = 0, test_loss = 0, test_acc = 0;
  int sampled = 0, answered = 0;
  uint64_t bytes_in = 0, bytes_out = 0;
  bool stopped = false;
  double train_s = 0, eval_s = 0;
  double temperature = 0;  // OCFL's clustering temperature; NaN when the sampler has none
  double epsilon = NAN;    // [privacy]: ε spent so far; NaN without DP
  std::vector<std::string> peers;

  // The columns of rounds.csv (base/csv_table.h). `epsilon` came with [privacy]: a folder
  // written before it still reads, and a node resuming in it rewrites its rows with an empty
  // epsilon cell.
  template <class Columns, class Self>
  static void Describe(Columns& c, Self& r) {
    constexpr WholeCell kCount{.form = {.min = 0}};
    c.Column("round", r.round);
    c.Column("wall_s", r.wall_s);
    c.Column("train_loss", r.train_loss);
    c.Column("val_loss", r.val_loss);
    c.Column("val_acc", r.val_acc);
    c.Column("test_loss", r.test_loss);
    c.Column("test_acc", r.test_acc);
    c.Column("sampled", r.sampled, kCount);
    c.Column("answered", r.answered, kCount);
    c.Column("bytes_in", r.bytes_in);
    c.Column("bytes_out", r.bytes_out);
    c.Column("stopped", r.stopped);
    c.Column("train_s", r.train_s);
    c.Column("eval_s", r.eval_s);
    c.Column("temperature", r.temperature);
    c.Column("epsilon", r.epsilon, Presence::kAddedLater);
    c.Column("peers", r.peers);
  }
};

// One row of cluster.csv: a node of the clustering policy's latest partition, the label of its
// cluster, and the round the partition was computed in (the same on every row).
struct ClusterLabelRow {
  std::string node;
  int label = 0;
  int64_t round = 0;

  // The columns of cluster.csv (base/csv_table.h).
  template <class Columns, class Self>
  static void Describe(Columns& c, Self& r) {
    c.Column("node", r.node);
    c.Column("label", r.label);
    c.Column("round", r.round);
  }
};

// The header of rounds.csv as a node writes it.
std::string RoundsCsvHeader();

// Reads a rounds.csv written by NodeOutputs (the current columns, or those before `epsilon`).
// kNotFound when missing; kMalformed naming the file, the line, the column and what is allowed
// for another header, a row of another width or a cell that is not its column's
// (base/csv_table.h).
Result<std::vector<RoundRow>> ReadRoundsCsv(const std::string& path);

// The process holding the lock of node folder `dir` ("<dir>/node.lock"): its id, -1 when the lock
// is held but the holder's id is unreadable, or 0 when no process holds it (the folder is free,
// or has no lock file). FileLock::Holder's contract.
pid_t NodeFolderLockHolder(const std::string& dir);

// The output folder of one node.
class NodeOutputs {
 public:
  // How the folder is written.
  enum class Mode {
    // Locked while open; every row and file reaches the disk when it is written (a process, which
    // may be killed at any moment).
    kDurable,
    // Not locked, and no file stays open: rows and files are kept in memory until Flush() (a
    // simulated node: thousands of them share one process's file descriptors).
    kBuffered,
  };

  // How a kBuffered folder's files reach the disk at Flush(): `bytes` to `path`, atomically.
  using FileWriter = std::function<Status(const std::string& path, std::string_view bytes)>;

  // Opens `dir` (created if missing) and locks it ("<dir>/node.lock", held until this object
  // goes). With `resume_round` < 0 rounds.csv starts afresh; otherwise rows of rounds after
  // `resume_round` (written before a crash, not checkpointed) are dropped so that the resumed
  // run continues without gaps or repeats. kUnavailable when another node holds the folder's
  // lock (two writers would mix their rows); kIoError naming the path when the folder or
  // rounds.csv cannot be written; kMalformed naming the line and column when, resuming, the
  // rounds.csv there does not read (ReadRoundsCsv). `log`, when given, hears of a folder recreated
  // (below). A kBuffered folder is neither locked nor written before Flush(), which writes with
  // `write` (default: WriteFileAtomically).
  static Result<NodeOutputs> Open(const std::string& dir, int64_t resume_round,
                                  std::shared_ptr<spdlog::logger> log = nullptr,
                                  Mode mode = Mode::kDurable, FileWriter write = nullptr);
  // Writes the rows and files kept in memory (kBuffered), each atomically; nothing to do for a
  // kDurable folder. kIoError naming the path.
  Status Flush();

  // Appends the row of `record` (bytes_in/out: the transport's totals so far) and flushes.
  //
  // Every write here checks, before and after, that rounds.csv is still the file this object
  // writes. When it is gone (someone deleted it, or the whole folder, while the node ran), the
  // folder, its lock and rounds.csv (the header and every row written so far) are recreated, a
  // warning is logged, and a write the deletion made fail is done again: the node never goes on
  // without its rows.
  Status AppendRound(const RoundRecord& record, uint64_t bytes_in, uint64_t bytes_out);
  // Replaces the file `name` of the folder with `bytes` atomically (the checkpoint, tables).
  Status Replace(const std::string& name, std::string_view bytes);
  // Replaces comm.csv and scores.csv.
  Status WriteCommAndScores(const std::vector<topology::CommRow>& comm,
                            const std::vector<topology::PeerRecord>& scores);
  // Replaces cluster.csv with the clustering policy's latest partition: one ClusterLabelRow per
  // clustered node, all of round `round`.
  Status WriteCluster(const std::vector<std::pair<std::string, int>>& partition, int64_t round);
  // Replaces emd.csv:
  // `peer,emd,ref,accepted,peer_accepted,mutual,witness,threshold,measured_round,measured_s` (empty
  // cells: not measured or not decided; witness: the peer that measured emd in witness mode;
  // threshold: EmdRow::threshold; measured_round and measured_s: the round in progress and the
  // seconds since the exchange started when our measurement completed).
  Status WriteEmd(const std::vector<EmdRow>& rows);
  // Replaces signature.csv: `peer,distance,related` (FLT: D between our data signature and the
  // peer's; related: 1 when D < [signature] threshold).
  Status WriteSignatures(const std::vector<SignatureRow>& rows);
  // The folder.
  const std::string& dir() const { return dir_; }

 private:
  explicit NodeOutputs(std::string dir) : dir_(std::move(dir)) {}
  // Takes the folder's lock (kUnavailable naming the holder when another process has it).
  Status Lock();
  // Writes rounds.csv as `rounds_text_` and opens it for appending.
  Status StartRoundsCsv();
  // True while rounds.csv is the file this object writes (not deleted or replaced).
  bool RoundsCsvIsOurs() const;
  // Recreates the folder, its lock and rounds.csv when rounds.csv is not ours any more.
  Status RecreateIfGone();

  std::string dir_;
  bool buffered_ = false;
  FileWriter write_;                              // kBuffered: how Flush() writes a file
  std::map<std::string, std::string> unwritten_;  // kBuffered: file name -> its bytes
  bool rounds_unwritten_ = false;  // kBuffered: rounds_text_ has rows rounds.csv does not have yet
  std::ofstream rounds_;
  std::string rounds_text_;  // header and every row written, to recreate a deleted rounds.csv
  ino_t rounds_inode_ = 0;
  dev_t rounds_device_ = 0;
  std::optional<FileLock> lock_;  // "<dir>/node.lock"
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace meshlearn::node
