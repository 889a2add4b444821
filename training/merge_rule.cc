#include "training/merge_rule.h"

namespace meshlearn::training {

Result<std::vector<double>> MergeWeights::Coefficients(const MergeInput& own,
                                                       std::span<const MergeInput> peers) const {
  Result<std::vector<double>> c = AggregationCoefficients(aggregation, own, peers);
  if (c.ok()) ApplyStalenessWeights(staleness, peers, *c);
  return c;
}

Status MergeRule::Merge(const MergeInput& own, std::span<const MergeInput> peers,
                        std::span<float> out, MergeReport* report) const {
  MergeReport local;
  MergeReport& r = report ? *report : local;
  r.kept.assign(peers.size(), true);
  r.clipped.assign(peers.size(), false);
  MESHLEARN_RETURN_IF_ERROR(CheckMergeLayout(own, peers, out.size()));
  if (peers.empty()) return WeightedAverage(own, peers, out);
  return MergePeers(own, peers, out, r);
}

Status MergeRule::WeightedAverage(const MergeInput& own, std::span<const MergeInput> peers,
                                  std::span<float> out) const {
  Result<std::vector<double>> coefficients = weights_.Coefficients(own, peers);
  if (!coefficients.ok()) return coefficients.status();
  return MergeWeighted(own, peers, *coefficients, out);
}

}  // namespace meshlearn::training
