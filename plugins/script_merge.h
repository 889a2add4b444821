#pragma once
// A merge rule written in Python: `[learning] robust = "torchscript"`, `merge_path`
// (docs/plugins.md; configs/README.md "[learning]"). The module behind training::MergeRule
// (training/merge_rule.h), whose contract it keeps.
//
// Specification.
// - The module's forward is
//     forward(self, own: Tensor, peers: List[Tensor], coefficients: Tensor) -> Tensor
//   own is the node's flat weights x_i, peers the peers' x_j that the node merges (those left
//   after merge_min_score, in the order they answered), all 1-D float32 tensors over the node's
//   buffers (no copy; the module must not write into them). coefficients is a 1-D float64 tensor
//   of 1 + len(peers) values: the rule's coefficients (MergeWeights: FedAvg or FedSim with the
//   staleness weights), own's first, summing to 1; a rule may ignore them. It returns the merged
//   model: a 1-D float32 (or float64) tensor of own's size.
// - The module is called only with at least one peer; with none the node keeps its model (the
//   weighted average of the own model alone, as every rule does). Every peer is reported kept.
// - Refused at load, naming the file and what was expected: what ScriptModule::Load refuses
//   (plugins/script_module.h), a forward of another signature, and a probe that fails: forward
//   is called on random models of `floats` floats with one peer and with three (equal
//   coefficients) and must return a finite model of that size without writing into its inputs.
// - At run time a result of another shape or type (kLayoutMismatch), one holding NaN or Inf
//   (kNonFinite) and an exception inside the module (kInternal) fail the merge, naming the file
//   and saying what the module returned; nothing non-finite is ever written into the node's
//   model (node/learner/peer_merger.h says what the round does then).
// - Name() is "torchscript". One instance may merge from several threads at once; the calls into
//   the module take turns (plugins/script_module.h).

#include <memory>
#include <string>

#include "base/status.h"
#include "training/merge_rule.h"

namespace meshlearn::plugins {

// Loads the merge rule at `path`, with coefficients from `weights`, and probes it on models of
// `floats` floats (see the specification).
Result<std::unique_ptr<training::MergeRule>> LoadScriptMergeRule(
    const std::string& path, const training::MergeWeights& weights, size_t floats);

}  // namespace meshlearn::plugins
