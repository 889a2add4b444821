#include "training/aggregation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <utility>

namespace meshlearn::training {
namespace {

// Floats per block: the block's partial sum (16 KiB) stays in L1 while every input streams by.
constexpr size_t kBlockFloats = 4096;

// The one table where config strings meet rule types.
constexpr NamedValue<AggregationKind> kRuleNames[] = {{"fedavg", AggregationKind::kFedAvg},
                                                      {"fedsim", AggregationKind::kFedSim}};

}  // namespace

namespace {

// block[i] = sum_k c[k] * in[k][start + i] for i < n, with the input count K known at compile
// time so that the K streams are read side by side in one vectorised loop.
template <size_t K>
void SumBlock(const std::span<const float>* inputs, const float* c, size_t start, size_t n,
              float* __restrict block) {
  const float* __restrict in[K];
  for (size_t k = 0; k < K; ++k) in[k] = inputs[k].data() + start;
  for (size_t i = 0; i < n; ++i) {
    float acc = c[0] * in[0][i];
    for (size_t k = 1; k < K; ++k) acc += c[k] * in[k][i];
    block[i] = acc;
  }
}

// The same for any input count: the first kFusedInputs inputs fused, the rest added one by one.
constexpr size_t kFusedInputs = 8;
using SumBlockFn = void (*)(const std::span<const float>*, const float*, size_t, size_t,
                            float* __restrict);
template <size_t... K>
constexpr std::array<SumBlockFn, sizeof...(K)> MakeKernels(std::index_sequence<K...>) {
  return {&SumBlock<K + 1>...};
}
constexpr auto kKernels = MakeKernels(std::make_index_sequence<kFusedInputs>());

}  // namespace

bool WeightedSum(std::span<const std::span<const float>> inputs,
                 std::span<const float> coefficients, std::span<float> out) {
  alignas(64) float block[kBlockFloats];
  const size_t fused = std::min(inputs.size(), kFusedInputs);
  uint32_t non_finite = 0;
  for (size_t start = 0; start < out.size(); start += kBlockFloats) {
    const size_t n = std::min(kBlockFloats, out.size() - start);
    kKernels[fused - 1](inputs.data(), coefficients.data(), start, n, block);
    for (size_t k = fused; k < inputs.size(); ++k) {
      const float c = coefficients[k];
      const float* in = inputs[k].data() + start;
      for (size_t i = 0; i < n; ++i) block[i] += c * in[i];
    }
    // NaN/Inf have an all-ones exponent. NaN or Inf in any input reaches the sum (0 * Inf is
    // NaN), so checking the output block covers the inputs. Integer OR keeps it vectorised.
    for (size_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &block[i], 4);
      non_finite |= static_cast<uint32_t>((bits & 0x7F800000u) == 0x7F800000u);
    }
    // The block is complete before `out` is written, so `out` may alias an input.
    std::memcpy(out.data() + start, block, n * sizeof(float));
  }
  return non_finite == 0;
}

namespace {

std::string InputName(size_t k) {
  return k == 0 ? std::string("own model") : "peer model " + std::to_string(k - 1);
}

}  // namespace

Status CheckMergeLayout(const MergeInput& own, std::span<const MergeInput> peers, size_t floats) {
  for (size_t k = 0; k <= peers.size(); ++k) {
    const size_t size = (k == 0 ? own : peers[k - 1]).weights.size();
    if (size != floats) {
      return Status::LayoutMismatch(InputName(k) + " has " + std::to_string(size) +
                                    " floats, expected " + std::to_string(floats));
    }
  }
  return Status::Ok();
}

Status MergeWeighted(const MergeInput& own, std::span<const MergeInput> peers,
                     std::span<const double> coefficients, std::span<float> out) {
  MESHLEARN_RETURN_IF_ERROR(CheckMergeLayout(own, peers, out.size()));
  const size_t count = peers.size() + 1;
  auto input_at = [&](size_t k) -> const MergeInput& { return k == 0 ? own : peers[k - 1]; };
  // Canonical order: by coefficient, then by content. Equal keys mean equal contributions, so
  // the summation order (and therefore the rounding) is the same for every order of `peers`.
  // (A few small vectors per merge; nothing is allocated inside the pass over the weights.)
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double ca = coefficients[a], cb = coefficients[b];
    if (ca != cb) return ca > cb;
    const std::span<const float> wa = input_at(a).weights, wb = input_at(b).weights;
    return std::memcmp(wa.data(), wb.data(), wa.size() * sizeof(float)) < 0;
  });
  std::vector<std::span<const float>> inputs(count);
  std::vector<float> coef(count);
  for (size_t i = 0; i < count; ++i) {
    inputs[i] = input_at(order[i]).weights;
    coef[i] = static_cast<float>(coefficients[order[i]]);
  }
  if (!WeightedSum(inputs, coef, out)) {
    // Name the culprit. (When `out` aliases the own model, that model is already overwritten.)
    for (size_t k = 0; k < count; ++k) {
      const std::span<const float> w = input_at(k).weights;
      if (std::any_of(w.begin(), w.end(), [](float v) { return !std::isfinite(v); })) {
        return Status::NonFinite(InputName(k) + " holds NaN or Inf weights");
      }
    }
    return Status::NonFinite("the merged weights overflow to Inf");
  }
  return Status::Ok();
}

namespace {

Result<std::vector<double>> FedAvgCoefficients(const MergeInput& own,
                                               std::span<const MergeInput> peers) {
  double total = static_cast<double>(own.train_size);
  for (const MergeInput& p : peers) total += static_cast<double>(p.train_size);
  if (total <= 0) {
    return Status::InvalidArgument("fedavg: every model has train_size 0, nothing to weigh by");
  }
  std::vector<double> c;
  c.reserve(peers.size() + 1);
  c.push_back(static_cast<double>(own.train_size) / total);
  for (const MergeInput& p : peers) c.push_back(static_cast<double>(p.train_size) / total);
  return c;
}

Result<std::vector<double>> FedSimCoefficients(std::span<const MergeInput> peers) {
  double max_p = 0, total = 0;
  for (size_t j = 0; j < peers.size(); ++j) {
    const double p = peers[j].probability;
    if (!std::isfinite(p) || p < 0) {
      return Status::InvalidArgument("fedsim: probability of peer " + std::to_string(j) +
                                     " is negative or not finite");
    }
    max_p = std::max(max_p, p);
    total += p;
  }
  std::vector<double> c(peers.size() + 1, 0.0);
  if (max_p == 0) {
    c[0] = 1.0;
    return c;
  }
  total += max_p;  // the node's own weight is the largest peer probability
  c[0] = max_p / total;
  for (size_t j = 0; j < peers.size(); ++j) c[j + 1] = peers[j].probability / total;
  return c;
}

}  // namespace

NameTable<AggregationKind> AggregationKindNames() { return kRuleNames; }

Result<std::vector<double>> AggregationCoefficients(AggregationKind kind, const MergeInput& own,
                                                    std::span<const MergeInput> peers) {
  if (kind == AggregationKind::kFedSim) return FedSimCoefficients(peers);
  return FedAvgCoefficients(own, peers);
}

}  // namespace meshlearn::training
