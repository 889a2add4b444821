#pragma once
// The similarity metric interface: how node i scores peer j (DESIGN.md "Similarity metrics").
//
// Specification.
// - A score s_ij is a finite double, higher = more similar. A metric never returns NaN or Inf:
//   every failure is a Status.
//   Rationale: scores feed a softmax (topology/dac_sampler.h); one NaN there would poison every
//   probability of the node.
// - Weight-based metrics see flat parameter vectors (the layout is checked by the caller, see
//   base/param_layout.h). Every weight span the metric reads must have the same length, be
//   non-empty and hold only finite values; otherwise the score is kLayoutMismatch, kInvalidArgument
//   or kNonFinite. Rationale: the peer's weights come from the network; a bad peer must cost an
//   error line, never a crash or a NaN.
// - A metric that normalises (the cosines) rejects a zero-norm vector with kInvalidArgument.
//   Rationale: the cosine is undefined there; returning 0 would silently rank the peer as
//   "orthogonal" (file 004, section 3 definitions).
// - A metric declares what it needs (MetricNeeds), so the node fetches a model only for metrics
// that
//   read weights and asks an exchange for metrics whose score is computed elsewhere (`emd`, EMD
//   issue).
//   Rationale: a fetch of a 1M-parameter model per sampled peer is the dominant network cost.
// - Metrics are stateless and const: one instance may score many peers from several threads.
//
// A metric is chosen by its MetricKind; MetricKindNames() (similarity/metric_factory.cc) is the
// only place where config strings meet metric types. A metric may also come from a user's
// TorchScript file (kTorchScript, plugins/script_metric.h), behind the same interface.

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"

namespace meshlearn::similarity {

// The similarity metrics (DESIGN.md "Similarity metrics").
enum class MetricKind {
  kInvLoss,      // "inv_loss"
  kCosWeights,   // "cos_weights"
  kCosGrad,      // "cos_grad"
  kInvL2,        // "inv_l2"
  kEmd,          // "emd": from the EMD embedding exchange
  kCentroid,     // "centroid": from FLT's data signatures
  kTorchScript,  // "torchscript": a user's module from a file (plugins/script_metric.h)
};

// The config name of every MetricKind, in documentation order.
NameTable<MetricKind> MetricKindNames();

// The names of the built-in metrics: every kind but kTorchScript, in documentation order.
NameTable<MetricKind> BuiltInMetricKindNames();

// "Mean training loss of these weights on my data": evaluates `weights` (a flat parameter vector
// with the local model's layout) on node i's own training set. Provided by the training library;
// metrics never see the data.
using LossOfWeights = std::function<Result<double>(std::span<const float> weights)>;

// Everything a metric may read to compute s_ij. Spans are views; the caller keeps the vectors alive
// for the duration of Score().
struct MetricInput {
  // w_i: node i's current flat weights.
  std::span<const float> own;
  // w_j: peer j's flat weights, as received.
  std::span<const float> peer;
  // w0: the shared initial weights (same seed on every node); empty when the metric does not need
  // them.
  std::span<const float> initial;
  // Node i's mean training loss of given weights; empty when the metric does not need it.
  LossOfWeights own_data_loss;
  // A score computed outside the metric by an exchange with the peer (the `emd` metric); empty for
  // weight-based metrics.
  std::optional<double> exchanged_score;
};

// What a metric reads, so the node gathers only that.
struct MetricNeeds {
  // Reads MetricInput::own and MetricInput::peer (the node must fetch the peer's model).
  bool weights = true;
  // Reads MetricInput::initial (w0).
  bool initial_weights = false;
  // Calls MetricInput::own_data_loss.
  bool own_data_loss = false;
  // Reads MetricInput::exchanged_score instead of weights.
  bool exchanged_score = false;
};

// A similarity metric s_ij. Implementations: similarity/metrics.h.
class SimilarityMetric {
 public:
  virtual ~SimilarityMetric() = default;

  // The config name of this metric ("cos_weights"), as accepted by MakeSimilarityMetric().
  virtual std::string_view Name() const = 0;
  // What Score() reads from its input.
  virtual MetricNeeds Needs() const = 0;
  // True when Score(i, j) == Score(j, i) for every input (swapping `own` and `peer`).
  virtual bool Symmetric() const = 0;
  // Returns the finite score of `input.peer` seen from `input.own` (higher = more similar), or an
  // error as in the header specification. Never returns NaN or Inf.
  virtual Result<double> Score(const MetricInput& input) const = 0;
};

// Builds the built-in metric of `kind`; null for kTorchScript, whose metric comes from a file
// (plugins::LoadScriptMetric, made by the node's learner from [learning] metric_path).
std::unique_ptr<SimilarityMetric> MakeSimilarityMetric(MetricKind kind);

}  // namespace meshlearn::similarity
