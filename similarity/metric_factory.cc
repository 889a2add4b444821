// The one table that maps metric config names to metric kinds and types (STYLE.md: "one explicit
// factory table ... the only place strings meet types").

#include <array>
#include <memory>

#include "similarity/centroid_signature.h"
#include "similarity/emd_decision.h"
#include "similarity/metric.h"
#include "similarity/metrics.h"

namespace meshlearn::similarity {
namespace {

struct MetricEntry {
  NamedValue<MetricKind> named;
  std::unique_ptr<SimilarityMetric> (*make)();
};

template <typename Metric>
std::unique_ptr<SimilarityMetric> Make() {
  return std::make_unique<Metric>();
}

// Append new metrics here.
constexpr MetricEntry kMetricTable[] = {
    {{"inv_loss", MetricKind::kInvLoss}, &Make<InverseLossMetric>},
    {{"cos_weights", MetricKind::kCosWeights}, &Make<CosineWeightsMetric>},
    {{"cos_grad", MetricKind::kCosGrad}, &Make<CosineGradMetric>},
    {{"inv_l2", MetricKind::kInvL2}, &Make<InverseL2Metric>},
    {{"emd", MetricKind::kEmd}, &Make<EmdMetric>},
    {{"centroid", MetricKind::kCentroid}, &Make<CentroidMetric>},
};

// The built-in metrics, then the one a file brings.
constexpr auto kMetricNames = [] {
  std::array<NamedValue<MetricKind>, std::size(kMetricTable) + 1> names{};
  for (size_t i = 0; i < std::size(kMetricTable); ++i) names[i] = kMetricTable[i].named;
  names.back() = {"torchscript", MetricKind::kTorchScript};
  return names;
}();

}  // namespace

NameTable<MetricKind> MetricKindNames() { return kMetricNames; }

NameTable<MetricKind> BuiltInMetricKindNames() {
  return NameTable<MetricKind>(kMetricNames).first(std::size(kMetricTable));
}

std::unique_ptr<SimilarityMetric> MakeSimilarityMetric(MetricKind kind) {
  for (const MetricEntry& entry : kMetricTable) {
    if (entry.named.value == kind) return entry.make();
  }
  return nullptr;  // kTorchScript: a file's metric
}

}  // namespace meshlearn::similarity
