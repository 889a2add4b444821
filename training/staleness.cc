#include "training/staleness.h"

#include <cmath>
#include <utility>

namespace meshlearn::training {
namespace {

// The one table where config strings meet staleness kinds.
constexpr NamedValue<StalenessKind> kStalenessNames[] = {{"none", StalenessKind::kNone},
                                                         {"polynomial", StalenessKind::kPolynomial},
                                                         {"hinge", StalenessKind::kHinge}};

class StalenessWeightedRule final : public AggregationRule {
 public:
  StalenessWeightedRule(std::unique_ptr<AggregationRule> rule, StalenessOptions options)
      : rule_(std::move(rule)), options_(options) {}

  std::string_view Name() const override { return rule_->Name(); }

  Result<std::vector<double>> Coefficients(const MergeInput& own,
                                           std::span<const MergeInput> peers) const override {
    Result<std::vector<double>> c = rule_->Coefficients(own, peers);
    if (!c.ok()) return c;
    std::vector<double> coefficients = std::move(*c);
    for (size_t j = 0; j < peers.size(); ++j) {
      const double kept = coefficients[j + 1] * StalenessWeight(options_, peers[j].staleness);
      coefficients[0] += coefficients[j + 1] - kept;
      coefficients[j + 1] = kept;
    }
    return coefficients;
  }

 private:
  std::unique_ptr<AggregationRule> rule_;
  StalenessOptions options_;
};

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

std::unique_ptr<AggregationRule> WithStalenessWeights(std::unique_ptr<AggregationRule> rule,
                                                      const StalenessOptions& options) {
  if (options.kind == StalenessKind::kNone) return rule;
  return std::make_unique<StalenessWeightedRule>(std::move(rule), options);
}

}  // namespace meshlearn::training
