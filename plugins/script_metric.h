#pragma once
// A similarity metric written in Python: `[learning] metric = "torchscript"`, `metric_path`
// (docs/plugins.md; configs/README.md "[learning]"). The module behind similarity::
// SimilarityMetric (similarity/metric.h), whose contract it keeps.
//
// Specification.
// - The module's forward is one of
//     forward(self, own: Tensor, peer: Tensor, initial: Tensor) -> float
//     forward(self, own: Tensor, peer: Tensor, initial: Tensor, own_loss: float) -> float
//   (a one-element tensor may stand for the float). own is this node's flat weights w_i, peer
//   the peer's w_j as received, initial the shared initial weights w0: 1-D float32 tensors of
//   the model's size, over the node's own buffers (no copy; the module must not write into them).
//   The score is s_ij, higher = more similar (DESIGN.md "Similarity metrics").
// - What the metric reads, as the built-in metrics' MetricNeeds says it, comes from optional bool
//   attributes of the module:
//   - needs_own_loss (default False): the node evaluates the peer's weights on its own training
//     data and passes that mean loss as own_loss (inv_loss's input); forward then takes the
//     fourth argument, and only then;
//   - needs_initial (default False): initial is w0; without it, an empty tensor;
//   - needs_weights (default True): False gives own and peer as empty tensors, for a metric of
//     own_loss alone (which it must then need);
//   - symmetric (default False): states that forward(own, peer) = forward(peer, own).
// - Refused at load, naming the file and what was expected: what ScriptModule::Load refuses
//   (plugins/script_module.h), a forward of another signature, an attribute above that is not a
//   bool, needs_weights = False without needs_own_loss, and a probe that fails: forward is called
//   once on random weights of `floats` floats (own_loss 0.5) and must return a finite score
//   without writing into its inputs.
// - At run time a score that is not finite (kNonFinite), a result that is not a float or a
//   one-element tensor (kInvalidArgument), an exception inside the module (kInternal), weights
//   of different lengths (kLayoutMismatch) and a failed own_loss cost that peer its score: an
//   error line, as a built-in metric's Status does. Each names the file and says what the module
//   returned.
// - Name() is "torchscript". One instance may score from several threads at once; the calls
//   into the module take turns (plugins/script_module.h).

#include <memory>
#include <string>

#include "base/status.h"
#include "similarity/metric.h"

namespace meshlearn::plugins {

// Loads the metric at `path` and probes it on models of `floats` floats (see the specification).
Result<std::unique_ptr<similarity::SimilarityMetric>> LoadScriptMetric(const std::string& path,
                                                                       size_t floats);

}  // namespace meshlearn::plugins
