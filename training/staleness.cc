#include "training/staleness.h"

#include <cmath>

namespace meshlearn::training {
namespace {

// The one table where config strings meet staleness kinds.
constexpr NamedValue<StalenessKind> kStalenessNames[] = {{"none", StalenessKind::kNone},
                                                         {"polynomial", StalenessKind::kPolynomial},
                                                         {"hinge", StalenessKind::kHinge}};

}  // namespace

NameTable<StalenessKind> StalenessKindNames() { return kStalenessNames; }

double StalenessWeight(const StalenessOptions& options, int64_t staleness) {
  if (staleness <= 0) return 1;
  const auto d = static_cast<double>(staleness);
  switch (options.kind) {
    case StalenessKind::kNone:
      return 1;
    case StalenessKind::kPolynomial:
      return std::pow(1 + d, -options.a);
    case StalenessKind::kHinge:
      return d <= options.b ? 1 : 1 / (options.a * (d - options.b) + 1);
  }
  return 1;
}

void ApplyStalenessWeights(const StalenessOptions& options, std::span<const MergeInput> peers,
                           std::vector<double>& coefficients) {
  if (options.kind == StalenessKind::kNone) return;
  for (size_t j = 0; j < peers.size(); ++j) {
    const double kept = coefficients[j + 1] * StalenessWeight(options, peers[j].staleness);
    coefficients[0] += coefficients[j + 1] - kept;
    coefficients[j + 1] = kept;
  }
}

}  // namespace meshlearn::training
