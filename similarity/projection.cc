#include "similarity/projection.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <string>

#include "base/stable_hash.h"

namespace meshlearn::similarity {
namespace {

// A uniform double in (0, 1] from the top 53 bits of one raw output (never 0, so log() is finite).
double UnitInterval(std::mt19937_64& engine) {
  return static_cast<double>((engine() >> 11) + 1) * 0x1.0p-53;
}

constexpr size_t kMaxProjectionEntries = size_t{1} << 26;

}  // namespace

Result<Projection> DrawProjection(uint64_t seed, size_t input_dim, double proj_ratio) {
  if (input_dim == 0) return Status::InvalidArgument("projection: input dimension is 0");
  if (!std::isfinite(proj_ratio) || !(proj_ratio > 0)) {
    return Status::InvalidArgument("projection: proj_ratio must be finite and > 0, got " +
                                   std::to_string(proj_ratio));
  }
  const double k = std::round(proj_ratio * static_cast<double>(input_dim));
  if (k < 1 || k > static_cast<double>(kMaxProjectionEntries / input_dim)) {
    return Status::InvalidArgument("projection: round(" + std::to_string(proj_ratio) + " x " +
                                   std::to_string(input_dim) + ") output columns is out of range");
  }
  Projection r;
  r.input_dim = input_dim;
  r.output_dim = static_cast<size_t>(k);
  r.matrix.resize(r.input_dim * r.output_dim);
  std::mt19937_64 engine(seed);
  // Box–Muller: two uniforms give two independent standard Gaussians, used in order.
  std::vector<double> gaussians(r.matrix.size());
  for (size_t e = 0; e < gaussians.size(); e += 2) {
    const double radius = std::sqrt(-2 * std::log(UnitInterval(engine)));
    const double angle = 2 * std::numbers::pi * UnitInterval(engine);
    gaussians[e] = radius * std::cos(angle);
    if (e + 1 < gaussians.size()) gaussians[e + 1] = radius * std::sin(angle);
  }
  for (size_t row = 0; row < r.input_dim; ++row) {
    const double* g = gaussians.data() + row * r.output_dim;
    double norm2 = 0;
    for (size_t c = 0; c < r.output_dim; ++c) norm2 += g[c] * g[c];
    // A radius is 0 only when the uniform is exactly 1 (probability 2^-53 per pair), so an
    // all-zero row does not happen in practice; it would stay zero rather than become NaN.
    const double inverse_norm = norm2 > 0 ? 1 / std::sqrt(norm2) : 0;
    for (size_t c = 0; c < r.output_dim; ++c) {
      r.matrix[row * r.output_dim + c] = static_cast<float>(g[c] * inverse_norm);
    }
  }
  return r;
}

Result<std::vector<float>> Project(const PointSet& x, const Projection& r) {
  MESHLEARN_RETURN_IF_ERROR(CheckPointSet(x, "projection: point set"));
  if (x.cols != r.input_dim || r.matrix.size() != r.input_dim * r.output_dim) {
    return Status::LayoutMismatch("projection: points have " + std::to_string(x.cols) +
                                  " columns, the projection expects " +
                                  std::to_string(r.input_dim));
  }
  std::vector<float> out(x.rows * r.output_dim);
  std::vector<double> accumulator(r.output_dim);
  for (size_t i = 0; i < x.rows; ++i) {
    std::fill(accumulator.begin(), accumulator.end(), 0.0);
    const float* point = x.values.data() + i * x.cols;
    for (size_t k = 0; k < x.cols; ++k) {
      const double value = point[k];
      const float* r_row = r.matrix.data() + k * r.output_dim;
      for (size_t c = 0; c < r.output_dim; ++c) accumulator[c] += value * r_row[c];
    }
    for (size_t c = 0; c < r.output_dim; ++c) {
      out[i * r.output_dim + c] = static_cast<float>(accumulator[c]);
    }
  }
  return out;
}

uint64_t AgreedProjectionSeed(uint64_t nonce_i, uint64_t nonce_j) {
  const uint64_t low = std::min(nonce_i, nonce_j), high = std::max(nonce_i, nonce_j);
  return Mix64(Mix64(low) ^ (high * 0xd6e8feb86659fd93ULL + 0x632be59bd9b4e019ULL));
}

}  // namespace meshlearn::similarity
