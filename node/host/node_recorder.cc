#include "node/host/node_recorder.h"

namespace meshlearn::node {

NodeRecorder::NodeRecorder(NodeOutputs outputs, bool emd_enabled)
    : outputs_(std::move(outputs)), emd_enabled_(emd_enabled) {}

Status NodeRecorder::AppendRound(const RoundRecord& record, uint64_t bytes_in, uint64_t bytes_out) {
  MESHLEARN_RETURN_IF_ERROR(outputs_.AppendRound(record, bytes_in, bytes_out));
  if (record.outcome.cluster_partition.empty()) return Status::Ok();
  return outputs_.WriteCluster(record.outcome.cluster_partition, record.round);
}

Status NodeRecorder::WriteTables(const NodeStateMachine& machine) {
  MESHLEARN_RETURN_IF_ERROR(
      outputs_.WriteCommAndScores(machine.comm().Rows(), machine.sampler().Records()));
  if (emd_enabled_) {
    MESHLEARN_RETURN_IF_ERROR(outputs_.WriteEmd(machine.EmdRows()));
    written_emd_revision_ = machine.emd_revision();
  }
  return WriteSignaturesIfChanged(machine);
}

Status NodeRecorder::WriteCheckpoint(const Checkpoint& checkpoint) {
  return WriteEncodedCheckpoint(EncodeCheckpoint(checkpoint));
}

Status NodeRecorder::WriteEncodedCheckpoint(std::string_view bytes) {
  return outputs_.Replace(kCheckpointFile, bytes);
}

Status NodeRecorder::FollowExchanges(const NodeStateMachine& machine) {
  // A measurement may finish after the rounds: emd.csv follows every change of the exchange.
  if (emd_enabled_ && machine.emd_revision() != written_emd_revision_) {
    written_emd_revision_ = machine.emd_revision();
    MESHLEARN_RETURN_IF_ERROR(outputs_.WriteEmd(machine.EmdRows()));
  }
  return WriteSignaturesIfChanged(machine);
}

Status NodeRecorder::WriteSignaturesIfChanged(const NodeStateMachine& machine) {
  if (machine.signature_revision() == written_signature_revision_) return Status::Ok();
  written_signature_revision_ = machine.signature_revision();
  return outputs_.WriteSignatures(machine.SignatureRows());
}

}  // namespace meshlearn::node
