#include "training/robust_merge.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <utility>

#include "similarity/vector_kernels.h"

namespace meshlearn::training {
namespace {

constexpr NamedValue<RobustKind> kRobustNames[] = {{"none", RobustKind::kNone},
                                                   {"clip", RobustKind::kClip},
                                                   {"trimmed_mean", RobustKind::kTrimmedMean},
                                                   {"median", RobustKind::kMedian},
                                                   {"krum", RobustKind::kKrum},
                                                   {"multi_krum", RobustKind::kMultiKrum},
                                                   {"distance_gate", RobustKind::kDistanceGate},
                                                   {"torchscript", RobustKind::kTorchScript}};

// Floats per model in one chunk of SquaredDistances: a few models' chunks stay in L2 while every
// pair of them is measured, so each model is read from memory once.
constexpr size_t kDistanceChunk = 8192;
// Coordinates per block of TrimmedMean: the block's n rows stay in L1 while they are sorted.
constexpr size_t kTrimBlock = 256;

// Models' bytes compared: the canonical order of inputs whose order could change the rounding.
bool ContentLess(std::span<const float> a, std::span<const float> b) {
  return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) < 0;
}

// Four float lanes, explicit (as in similarity/vector_kernels.cc): GCC does not if-convert the
// scalar loop's two selects, and a compare-exchange network is nothing but them.
typedef float Lanes __attribute__((vector_size(16)));
constexpr size_t kWidth = sizeof(Lanes) / sizeof(float);

// Compare-exchange: a gets the smaller, b the larger value of each lane.
inline void Order(Lanes& a, Lanes& b) {
#if defined(__SSE__)
  const Lanes small = __builtin_ia32_minps(a, b), large = __builtin_ia32_maxps(a, b);
#else
  const auto less = a < b;
  const Lanes small = less ? a : b, large = less ? b : a;
#endif
  a = small;
  b = large;
}
inline void Order(float& a, float& b) {
  const float small = std::min(a, b), large = std::max(a, b);
  a = small;
  b = large;
}

// The trimmed mean of N values (Lanes or float) in place: T bubble passes carry the largest to
// the top, T more the smallest to the bottom, and the values between are summed in row order.
template <size_t N, size_t T, typename V>
V TrimmedOf(V (&v)[N], float scale) {
#pragma GCC unroll 16
  for (size_t pass = 0; pass < T; ++pass) {
#pragma GCC unroll 16
    for (size_t r = 0; r + 1 < N - pass; ++r) Order(v[r], v[r + 1]);
  }
#pragma GCC unroll 16
  for (size_t pass = 0; pass < T; ++pass) {
#pragma GCC unroll 16
    for (size_t r = N - T - 1; r > pass; --r) Order(v[r - 1], v[r]);
  }
  V sum = v[T];
#pragma GCC unroll 16
  for (size_t r = T + 1; r < N - T; ++r) sum += v[r];
  return sum * scale;
}

// TrimmedMean for N models and trim T known at compile time: each group of four coordinates
// is sorted in registers.
template <size_t N, size_t T>
void TrimKernel(std::span<const std::span<const float>> models, std::span<float> out) {
  const float scale = 1.0f / static_cast<float>(N - 2 * T);
  size_t i = 0;
  for (; i + kWidth <= out.size(); i += kWidth) {
    Lanes v[N];
    for (size_t r = 0; r < N; ++r) std::memcpy(&v[r], models[r].data() + i, sizeof(Lanes));
    const Lanes mean = TrimmedOf<N, T>(v, scale);
    std::memcpy(out.data() + i, &mean, sizeof(mean));
  }
  for (; i < out.size(); ++i) {
    float v[N];
    for (size_t r = 0; r < N; ++r) v[r] = models[r][i];
    out[i] = TrimmedOf<N, T>(v, scale);
  }
}

// The kernels for 2 to kMaxKernelModels models and trims 0 to kMaxKernelTrim (null where
// 2·trim ≥ models).
constexpr size_t kMaxKernelModels = 8, kMaxKernelTrim = 3;
using TrimKernelFn = void (*)(std::span<const std::span<const float>>, std::span<float>);
template <size_t N, size_t T>
constexpr TrimKernelFn KernelFor() {
  if constexpr (2 * T < N) {
    return &TrimKernel<N, T>;
  } else {
    return nullptr;
  }
}
template <size_t... N>
constexpr auto MakeTrimKernels(std::index_sequence<N...>) {
  return std::array<std::array<TrimKernelFn, kMaxKernelTrim + 1>, sizeof...(N)>{
      {{KernelFor<N + 2, 0>(), KernelFor<N + 2, 1>(), KernelFor<N + 2, 2>(),
        KernelFor<N + 2, 3>()}...}};
}
constexpr auto kTrimKernels = MakeTrimKernels(std::make_index_sequence<kMaxKernelModels - 1>());

// Compare-exchange of two rows over n floats (the general path, any count of models).
void Exchange(float* __restrict lo, float* __restrict hi, size_t n) {
  size_t i = 0;
  for (; i + kWidth <= n; i += kWidth) {
    Lanes a, b;
    std::memcpy(&a, lo + i, sizeof(a));
    std::memcpy(&b, hi + i, sizeof(b));
    Order(a, b);
    std::memcpy(lo + i, &a, sizeof(a));
    std::memcpy(hi + i, &b, sizeof(b));
  }
  for (; i < n; ++i) Order(lo[i], hi[i]);
}

std::vector<MergeInput> Select(std::span<const MergeInput> peers, const std::vector<bool>& kept) {
  std::vector<MergeInput> out;
  for (size_t j = 0; j < peers.size(); ++j) {
    if (kept[j]) out.push_back(peers[j]);
  }
  return out;
}

// The models, own first, as spans.
std::vector<std::span<const float>> Models(const MergeInput& own,
                                           std::span<const MergeInput> peers) {
  std::vector<std::span<const float>> models = {own.weights};
  for (const MergeInput& p : peers) models.push_back(p.weights);
  return models;
}

// Clipping as coefficients: Σ c_k z_k = (c_0 + Σ c_j (1 − s_j)) x_i + Σ c_j s_j x_j, with
// s_j = min(1, τ/d_j).
Status Clip(const MergeWeights& weights, const RobustOptions& o, const MergeInput& own,
            std::span<const MergeInput> peers, std::span<float> out, MergeReport& report) {
  Result<std::vector<double>> c = weights.Coefficients(own, peers);
  if (!c.ok()) return c.status();
  const std::vector<double> d2 = SquaredDistances(Models(own, peers), 1);
  const size_t n = peers.size();
  std::vector<double> d(n);
  for (size_t j = 0; j < n; ++j) d[j] = std::sqrt(d2[j + 1]);
  double tau = o.clip_tau.value_or(0);
  if (!o.clip_tau) {
    std::vector<double> descending = d;
    std::sort(descending.begin(), descending.end(), std::greater<>());
    const size_t k = std::min(static_cast<size_t>(std::ceil(o.clip_share * n)), n - 1);
    tau = descending[k];
  }
  std::vector<double> coefficients = *c;
  for (size_t j = 0; j < n; ++j) {
    if (d[j] <= tau) continue;
    const double s = tau / d[j];
    coefficients[0] += coefficients[j + 1] * (1 - s);
    coefficients[j + 1] *= s;
    report.clipped[j] = true;
  }
  return MergeWeighted(own, peers, coefficients, out);
}

// Krum's choice: which peers multi-Krum with `keep` kept peers keeps.
std::vector<bool> KrumKept(const MergeInput& own, std::span<const MergeInput> peers, int f,
                           size_t keep) {
  const std::vector<std::span<const float>> models = Models(own, peers);
  const size_t total = models.size(), n = peers.size();
  const std::vector<double> d2 = SquaredDistances(models, total);
  const long nearest = static_cast<long>(total) - f - 2;
  const size_t k = static_cast<size_t>(std::clamp<long>(nearest, 1, static_cast<long>(n)));
  std::vector<double> score(n);
  for (size_t j = 0; j < n; ++j) {
    std::vector<double> row;
    for (size_t l = 0; l < total; ++l) {
      if (l != j + 1) row.push_back(d2[(j + 1) * total + l]);
    }
    std::partial_sort(row.begin(), row.begin() + k, row.end());
    score[j] = std::accumulate(row.begin(), row.begin() + k, 0.0);
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (score[a] != score[b]) return score[a] < score[b];
    return ContentLess(peers[a].weights, peers[b].weights);
  });
  std::vector<bool> kept(n, false);
  for (size_t r = 0; r < std::min(keep, n); ++r) kept[order[r]] = true;
  return kept;
}

std::vector<bool> GateKept(const MergeInput& own, std::span<const MergeInput> peers, double gamma) {
  const std::vector<double> d2 = SquaredDistances(Models(own, peers), 1);
  const double limit = gamma * gamma * similarity::FusedSquaredNorm(own.weights);
  std::vector<bool> kept(peers.size());
  for (size_t j = 0; j < peers.size(); ++j) kept[j] = d2[j + 1] <= limit;
  return kept;
}

Status CoordinateWise(const MergeInput& own, std::span<const MergeInput> peers, size_t trim,
                      std::span<float> out) {
  std::vector<std::span<const float>> models = Models(own, peers);
  std::sort(models.begin(), models.end(), ContentLess);
  trim = std::min(trim, (models.size() - 1) / 2);
  TrimmedMean(models, trim, out);
  if (!std::all_of(out.begin(), out.end(), [](float v) { return std::isfinite(v); })) {
    return Status::NonFinite("the trimmed mean holds NaN or Inf");
  }
  return Status::Ok();
}

}  // namespace

NameTable<RobustKind> RobustKindNames() { return kRobustNames; }

NameTable<RobustKind> BuiltInRobustKindNames() {
  return NameTable<RobustKind>(kRobustNames).first(std::size(kRobustNames) - 1);
}

std::vector<double> SquaredDistances(std::span<const std::span<const float>> models, size_t rows) {
  const size_t n = models.size();
  std::vector<double> d2(n * n, 0.0);
  const size_t floats = n ? models[0].size() : 0;
  for (size_t start = 0; start < floats; start += kDistanceChunk) {
    const size_t len = std::min(kDistanceChunk, floats - start);
    for (size_t a = 0; a < std::min(rows, n); ++a) {
      for (size_t b = a + 1; b < n; ++b) {
        d2[a * n + b] += similarity::FusedSquaredDistance(models[a].subspan(start, len),
                                                          models[b].subspan(start, len));
      }
    }
  }
  for (size_t a = 0; a < std::min(rows, n); ++a) {
    for (size_t b = a + 1; b < n; ++b) d2[b * n + a] = d2[a * n + b];
  }
  return d2;
}

void TrimmedMean(std::span<const std::span<const float>> models, size_t trim,
                 std::span<float> out) {
  const size_t n = models.size();
  if (n == 1) {
    std::copy(models[0].begin(), models[0].end(), out.begin());
    return;
  }
  if (n <= kMaxKernelModels && trim <= kMaxKernelTrim) {
    kTrimKernels[n - 2][trim](models, out);
    return;
  }
  std::vector<float> rows(n * kTrimBlock);
  const float scale = 1.0f / static_cast<float>(n - 2 * trim);
  for (size_t start = 0; start < out.size(); start += kTrimBlock) {
    const size_t len = std::min(kTrimBlock, out.size() - start);
    for (size_t r = 0; r < n; ++r) {
      std::memcpy(&rows[r * kTrimBlock], models[r].data() + start, len * sizeof(float));
    }
    // `trim` bubble passes carry the largest values to the top rows, `trim` more the smallest
    // to the bottom rows; the rows between hold the kept values.
    for (size_t pass = 0; pass < trim; ++pass) {
      for (size_t r = 0; r + 1 < n - pass; ++r) {
        Exchange(&rows[r * kTrimBlock], &rows[(r + 1) * kTrimBlock], len);
      }
    }
    for (size_t pass = 0; pass < trim; ++pass) {
      for (size_t r = n - trim - 1; r > pass; --r) {
        Exchange(&rows[(r - 1) * kTrimBlock], &rows[r * kTrimBlock], len);
      }
    }
    float* __restrict sum = out.data() + start;
    std::memcpy(sum, &rows[trim * kTrimBlock], len * sizeof(float));
    for (size_t r = trim + 1; r < n - trim; ++r) {
      const float* __restrict row = &rows[r * kTrimBlock];
      for (size_t i = 0; i < len; ++i) sum[i] += row[i];
    }
    for (size_t i = 0; i < len; ++i) sum[i] *= scale;
  }
}

namespace {

// A built-in rule: the weights and the [learning] robust options it was made with.
class BuiltInRule : public MergeRule {
 public:
  BuiltInRule(const MergeWeights& weights, const RobustOptions& options)
      : MergeRule(weights), options_(options) {}
  std::string_view Name() const final { return NameOf(RobustKindNames(), options_.kind); }

 protected:
  const RobustOptions& Options() const { return options_; }

 private:
  RobustOptions options_;
};

// kNone: the weighted average.
class WeightedAverageRule final : public BuiltInRule {
 public:
  using BuiltInRule::BuiltInRule;

 protected:
  Status MergePeers(const MergeInput& own, std::span<const MergeInput> peers, std::span<float> out,
                    MergeReport& /*report*/) const override {
    return WeightedAverage(own, peers, out);
  }
};

// kClip.
class ClipRule final : public BuiltInRule {
 public:
  using BuiltInRule::BuiltInRule;

 protected:
  Status MergePeers(const MergeInput& own, std::span<const MergeInput> peers, std::span<float> out,
                    MergeReport& report) const override {
    return Clip(Weights(), Options(), own, peers, out, report);
  }
};

// kTrimmedMean and kMedian: unweighted, coordinate by coordinate.
class CoordinateWiseRule final : public BuiltInRule {
 public:
  using BuiltInRule::BuiltInRule;

 protected:
  Status MergePeers(const MergeInput& own, std::span<const MergeInput> peers, std::span<float> out,
                    MergeReport& /*report*/) const override {
    const size_t trim = Options().kind == RobustKind::kMedian ? peers.size() / 2
                                                              : static_cast<size_t>(Options().trim);
    return CoordinateWise(own, peers, trim, out);
  }
};

// kKrum, kMultiKrum and kDistanceGate: a choice of peers, merged by their weights.
class SelectingRule final : public BuiltInRule {
 public:
  using BuiltInRule::BuiltInRule;

 protected:
  Status MergePeers(const MergeInput& own, std::span<const MergeInput> peers, std::span<float> out,
                    MergeReport& report) const override {
    report.kept = Kept(own, peers);
    const std::vector<MergeInput> kept = Select(peers, report.kept);
    if (kept.empty()) {
      if (out.data() != own.weights.data()) {
        std::copy(own.weights.begin(), own.weights.end(), out.begin());
      }
      return Status::Ok();
    }
    return WeightedAverage(own, kept, out);
  }

 private:
  std::vector<bool> Kept(const MergeInput& own, std::span<const MergeInput> peers) const {
    const RobustOptions& o = Options();
    const size_t n = peers.size();
    switch (o.kind) {
      case RobustKind::kKrum:
        return KrumKept(own, peers, o.krum_f, 1);
      case RobustKind::kMultiKrum: {
        const long all_but_f = std::max(1L, static_cast<long>(n) - o.krum_f);
        const size_t keep =
            o.krum_m > 0 ? static_cast<size_t>(o.krum_m) : static_cast<size_t>(all_but_f);
        return KrumKept(own, peers, o.krum_f, keep);
      }
      default:  // kDistanceGate
        return GateKept(own, peers, o.gate_gamma);
    }
  }
};

}  // namespace

std::unique_ptr<MergeRule> CreateMergeRule(const MergeWeights& weights,
                                           const RobustOptions& robust) {
  switch (robust.kind) {
    case RobustKind::kNone:
      return std::make_unique<WeightedAverageRule>(weights, robust);
    case RobustKind::kClip:
      return std::make_unique<ClipRule>(weights, robust);
    case RobustKind::kTrimmedMean:
    case RobustKind::kMedian:
      return std::make_unique<CoordinateWiseRule>(weights, robust);
    case RobustKind::kKrum:
    case RobustKind::kMultiKrum:
    case RobustKind::kDistanceGate:
      return std::make_unique<SelectingRule>(weights, robust);
    case RobustKind::kTorchScript:
      break;
  }
  return nullptr;  // kTorchScript: a file's rule
}

}  // namespace meshlearn::training
