#include "training/rdp_accountant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>

namespace meshlearn::training {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

constexpr auto kDefaultOrders = [] {
  std::array<double, 99 + 52> orders{};
  size_t n = 0;
  for (int x = 1; x < 100; ++x) orders[n++] = 1.0 + x / 10.0;
  for (int a = 12; a < 64; ++a) orders[n++] = a;
  return orders;
}();

// log(exp(a) + exp(b)) without overflow.
double LogAdd(double a, double b) {
  if (a == -kInfinity) return b;
  if (b == -kInfinity) return a;
  const double hi = std::max(a, b);
  return hi + std::log1p(std::exp(std::min(a, b) - hi));
}

// log(exp(a) - exp(b)) for a >= b; -infinity when they are equal.
double LogSub(double a, double b) {
  if (b == -kInfinity) return a;
  if (a <= b) return -kInfinity;
  return a + std::log1p(-std::exp(b - a));
}

// log(erfc(x)), finite where erfc(x) underflows: the asymptotic series
// erfc(x) ~ exp(-x²) / (x √π) · (1 - 1/(2x²) + 3/(4x⁴) - 15/(8x⁶)) for large x.
double LogErfc(double x) {
  if (x < 20) return std::log(std::erfc(x));
  const double r = 1.0 / (x * x);
  return -x * x - std::log(x) - 0.5 * std::log(std::numbers::pi) +
         std::log1p(r * (-0.5 + r * (0.75 - r * 1.875)));
}

// log(A_α) for integer α: the binomial sum of Mironov et al. 2019, Section 3.3,
// A_α = Σ_k C(α, k) (1 - q)^(α - k) q^k exp((k² - k) / (2σ²)).
double LogAInteger(double q, double sigma, int64_t alpha) {
  double log_a = -kInfinity;
  for (int64_t k = 0; k <= alpha; ++k) {
    const double log_binomial =
        std::lgamma(alpha + 1.0) - std::lgamma(k + 1.0) - std::lgamma(alpha - k + 1.0);
    const double kd = static_cast<double>(k);
    const double term = log_binomial + kd * std::log(q) +
                        static_cast<double>(alpha - k) * std::log1p(-q) +
                        (kd * kd - kd) / (2 * sigma * sigma);
    log_a = LogAdd(log_a, term);
  }
  return log_a;
}

// log(A_α) for fractional α: the two series of Mironov et al. 2019, Section 3.3, with
// z0 = σ² log(1/q - 1) + 1/2, summed until both terms fall below e^-30 of unity.
double LogAFractional(double q, double sigma, double alpha) {
  double log_a0 = -kInfinity;
  double log_a1 = -kInfinity;
  const double z0 = sigma * sigma * std::log(1 / q - 1) + 0.5;
  const double log_q = std::log(q);
  const double log_1mq = std::log1p(-q);
  double coefficient = 1;  // the generalised binomial C(α, i), which alternates in sign
  for (int64_t i = 0; i < 100000; ++i) {
    const double id = static_cast<double>(i);
    const double j = alpha - id;
    const double log_coefficient = std::log(std::abs(coefficient));
    const double log_t0 = log_coefficient + id * log_q + j * log_1mq;
    const double log_t1 = log_coefficient + j * log_q + id * log_1mq;
    const double log_e0 = std::log(0.5) + LogErfc((id - z0) / (std::numbers::sqrt2 * sigma));
    const double log_e1 = std::log(0.5) + LogErfc((z0 - j) / (std::numbers::sqrt2 * sigma));
    const double log_s0 = log_t0 + (id * id - id) / (2 * sigma * sigma) + log_e0;
    const double log_s1 = log_t1 + (j * j - j) / (2 * sigma * sigma) + log_e1;
    if (coefficient > 0) {
      log_a0 = LogAdd(log_a0, log_s0);
      log_a1 = LogAdd(log_a1, log_s1);
    } else {
      log_a0 = LogSub(log_a0, log_s0);
      log_a1 = LogSub(log_a1, log_s1);
    }
    if (std::max(log_s0, log_s1) < -30) break;
    coefficient *= (alpha - id) / (id + 1);
  }
  return LogAdd(log_a0, log_a1);
}

}  // namespace

std::span<const double> DefaultRdpOrders() { return kDefaultOrders; }

double SubsampledGaussianRdp(double q, double noise_multiplier, double order) {
  if (q <= 0) return 0;
  if (q >= 1) return order / (2 * noise_multiplier * noise_multiplier);  // no subsampling
  const double log_a = std::floor(order) == order
                           ? LogAInteger(q, noise_multiplier, static_cast<int64_t>(order))
                           : LogAFractional(q, noise_multiplier, order);
  if (!std::isfinite(log_a)) return kInfinity;
  return log_a / (order - 1);
}

RdpAccountant::RdpAccountant(std::span<const double> orders)
    : orders_(orders.begin(), orders.end()), rdp_(orders.size(), 0.0) {}

Status RdpAccountant::AddSteps(double q, double noise_multiplier, int64_t steps) {
  if (!(q >= 0 && q <= 1) || !(noise_multiplier > 0) || steps < 0) {
    return Status::InvalidArgument(
        "privacy accounting needs a sampling rate in [0, 1], a noise multiplier > 0 and steps >= "
        "0; got q = " +
        std::to_string(q) + ", noise multiplier = " + std::to_string(noise_multiplier) +
        ", steps = " + std::to_string(steps));
  }
  if (steps == 0) return Status::Ok();
  for (size_t k = 0; k < orders_.size(); ++k) {
    rdp_[k] += static_cast<double>(steps) * SubsampledGaussianRdp(q, noise_multiplier, orders_[k]);
  }
  steps_ += steps;
  return Status::Ok();
}

double RdpAccountant::Epsilon(double delta, RdpConversion conversion) const {
  if (!(delta > 0 && delta < 1)) return kInfinity;
  if (steps_ == 0) return 0;
  double best = kInfinity;
  for (size_t k = 0; k < orders_.size(); ++k) {
    const double alpha = orders_[k];
    double epsilon = 0;
    if (conversion == RdpConversion::kClassic) {
      epsilon = rdp_[k] - std::log(delta) / (alpha - 1);
    } else {
      epsilon = rdp_[k] - (std::log(delta) + std::log(alpha)) / (alpha - 1) +
                std::log((alpha - 1) / alpha);
    }
    if (std::isfinite(epsilon)) best = std::min(best, std::max(0.0, epsilon));
  }
  return best;
}

double DpSgdEpsilon(double q, double noise_multiplier, int64_t steps, double delta) {
  RdpAccountant accountant;
  if (!accountant.AddSteps(q, noise_multiplier, steps).ok()) return kInfinity;
  return accountant.Epsilon(delta);
}

Result<double> NoiseMultiplierFor(double target_epsilon, double delta, double q, int64_t steps) {
  if (!(target_epsilon > 0) || !(delta > 0 && delta < 1) || !(q > 0 && q <= 1) || steps < 1) {
    return Status::InvalidArgument(
        "deriving the noise multiplier needs target epsilon > 0, 0 < delta < 1, 0 < q <= 1 and "
        "steps >= 1");
  }
  double low = 0.01;
  double high = 1e4;
  if (DpSgdEpsilon(q, high, steps, delta) > target_epsilon) {
    return Status::InvalidArgument("no noise multiplier up to 10^4 reaches epsilon " +
                                   std::to_string(target_epsilon) + " in " + std::to_string(steps) +
                                   " steps");
  }
  if (DpSgdEpsilon(q, low, steps, delta) <= target_epsilon) return low;
  // ε falls as σ grows: bisect on log σ, keeping ε(high) <= target.
  while (high / low > 1 + 1e-4) {
    const double mid = std::sqrt(low * high);
    if (DpSgdEpsilon(q, mid, steps, delta) <= target_epsilon) {
      high = mid;
    } else {
      low = mid;
    }
  }
  return high;
}

}  // namespace meshlearn::training
