#pragma once
// What a node writes to its output folder as it runs (DESIGN.md "Outputs"): a rounds.csv row and
// cluster.csv per round, comm.csv and scores.csv, and emd.csv and signature.csv as the exchanges
// change. Shared by the node process (node/host/node.h) and the simulator, so that both leave the
// same files.

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "node/host/checkpoint.h"
#include "node/host/outputs.h"
#include "node/logic/state_machine.h"

namespace meshlearn::node {

// The output files of one node. Not thread-safe.
class NodeRecorder {
 public:
  // Writes into `outputs`; emd.csv is kept when `emd_enabled`.
  NodeRecorder(NodeOutputs outputs, bool emd_enabled);

  // Appends the row of `record` to rounds.csv (bytes_in/out: the transport's totals so far) and,
  // when the round clustered, replaces cluster.csv.
  Status AppendRound(const RoundRecord& record, uint64_t bytes_in, uint64_t bytes_out);
  // Replaces comm.csv, scores.csv and (with the exchange) emd.csv from `machine`, and
  // signature.csv when it changed.
  Status WriteTables(const NodeStateMachine& machine);
  // Replaces emd.csv and signature.csv when `machine`'s exchanges changed since the last write.
  Status FollowExchanges(const NodeStateMachine& machine);
  // Replaces checkpoint.bin with `checkpoint` (atomically; node/host/checkpoint.h).
  Status WriteCheckpoint(const Checkpoint& checkpoint);
  // Replaces checkpoint.bin with `bytes`, a checkpoint as EncodeCheckpoint wrote it.
  Status WriteEncodedCheckpoint(std::string_view bytes);
  // Writes what the folder keeps in memory (NodeOutputs::Flush).
  Status Flush() { return outputs_.Flush(); }
  // The output folder.
  const NodeOutputs& outputs() const { return outputs_; }

 private:
  Status WriteSignaturesIfChanged(const NodeStateMachine& machine);

  NodeOutputs outputs_;
  bool emd_enabled_;
  uint64_t written_emd_revision_ = 0;        // the machine's emd_revision() in emd.csv
  uint64_t written_signature_revision_ = 0;  // its signature_revision() in signature.csv
};

}  // namespace meshlearn::node
