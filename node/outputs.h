#pragma once
// A node's output folder (DESIGN.md "Outputs"): rounds.csv, comm.csv, scores.csv and the
// checkpoint. rounds.csv gets one row per round, flushed at once, so a killed node leaves only
// complete rows; comm.csv and scores.csv are replaced atomically every round.

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "base/status.h"
#include "node/state_machine.h"
#include "topology/comm_counters.h"
#include "topology/sampler.h"

namespace meshlearn::node {

// The header of rounds.csv: DESIGN.md's columns, then train_s and eval_s (seconds spent in local
// training and evaluation that round, for the launcher's round-overhead figure) and peers (the
// sampled peer ids, separated by ';').
inline constexpr const char* kRoundsCsvHeader =
    "round,wall_s,train_loss,val_loss,val_acc,test_loss,test_acc,sampled,answered,bytes_in,"
    "bytes_out,stopped,train_s,eval_s,temperature,peers";

// One row of rounds.csv, as read back by the launcher and tests. Empty cells read as NaN.
struct RoundRow {
  int64_t round = 0;
  double wall_s = 0, train_loss = 0, val_loss = 0, val_acc = 0, test_loss = 0, test_acc = 0;
  int sampled = 0, answered = 0;
  uint64_t bytes_in = 0, bytes_out = 0;
  bool stopped = false;
  double train_s = 0, eval_s = 0;
  double temperature = 0;  // OCFL's clustering temperature; NaN when the sampler has none
  std::vector<std::string> peers;
};

// Reads a rounds.csv written by NodeOutputs. kNotFound when missing; kMalformed naming the line
// for a header other than kRoundsCsvHeader or a row that does not parse.
Result<std::vector<RoundRow>> ReadRoundsCsv(const std::string& path);

// The output folder of one node.
class NodeOutputs {
 public:
  // Opens `dir` (created if missing). With `resume_round` < 0 rounds.csv starts afresh;
  // otherwise rows of rounds after `resume_round` (written before a crash, not checkpointed)
  // are dropped so that the resumed run continues without gaps or repeats.
  static Result<NodeOutputs> Open(const std::string& dir, int64_t resume_round);

  // Appends the row of `record` (bytes_in/out: the transport's totals so far) and flushes.
  Status AppendRound(const RoundRecord& record, uint64_t bytes_in, uint64_t bytes_out);
  // Replaces comm.csv and scores.csv.
  Status WriteCommAndScores(const std::vector<topology::CommRow>& comm,
                            const std::vector<topology::PeerRecord>& scores);
  // Replaces cluster.csv with the clustering policy's latest partition, `node,label,round` (one
  // line per clustered node; round: when it was computed).
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
  // The path of the checkpoint file in this folder.
  std::string CheckpointPath() const { return dir_ + "/checkpoint.bin"; }
  // The folder.
  const std::string& dir() const { return dir_; }

 private:
  explicit NodeOutputs(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  std::ofstream rounds_;
};

}  // namespace meshlearn::node
