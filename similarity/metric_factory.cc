// The one table that maps metric config strings to metric types (STYLE.md: "one explicit factory
// table ... the only place strings meet types").

#include <memory>
#include <string>
#include <vector>

#include "similarity/centroid_signature.h"
#include "similarity/emd_decision.h"
#include "similarity/metric.h"
#include "similarity/metrics.h"

namespace meshlearn::similarity {
namespace {

struct MetricEntry {
  std::string_view name;
  std::unique_ptr<SimilarityMetric> (*make)();
};

template <typename Metric>
std::unique_ptr<SimilarityMetric> Make() {
  return std::make_unique<Metric>();
}

// Append new metrics here.
constexpr MetricEntry kMetricTable[] = {
    {"inv_loss", &Make<InverseLossMetric>},
    {"cos_weights", &Make<CosineWeightsMetric>},
    {"cos_grad", &Make<CosineGradMetric>},
    {"inv_l2", &Make<InverseL2Metric>},
    {"emd", &Make<EmdMetric>},
    {"centroid", &Make<CentroidMetric>},
};

}  // namespace

Result<std::unique_ptr<SimilarityMetric>> MakeSimilarityMetric(std::string_view name) {
  for (const MetricEntry& entry : kMetricTable) {
    if (entry.name == name) return entry.make();
  }
  std::string accepted;
  for (const std::string& known : SimilarityMetricNames()) {
    accepted += (accepted.empty() ? "" : ", ") + known;
  }
  return Status::InvalidArgument("unknown similarity metric \"" + std::string(name) +
                                 "\" (accepted: " + accepted + ")");
}

std::vector<std::string> SimilarityMetricNames() {
  std::vector<std::string> names;
  for (const MetricEntry& entry : kMetricTable) names.emplace_back(entry.name);
  return names;
}

}  // namespace meshlearn::similarity
