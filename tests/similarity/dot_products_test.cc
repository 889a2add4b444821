// The cost matrix's product (similarity/dot_products.h): both kernels give the same bits.
#include "similarity/dot_products.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>
#include <vector>

namespace meshlearn::similarity {
namespace {

std::vector<double> Random(size_t n, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  std::vector<double> v(n);
  for (double& x : v) x = normal(rng);
  return v;
}

class DotKernelsTest : public ::testing::TestWithParam<std::tuple<size_t, size_t, size_t>> {};

// Shapes with and without whole 4 × 8 tiles: the AVX2 kernel's edges are computed by the portable
// loop, and every entry must equal the portable kernel's bit for bit (and a_i · b_j to rounding).
TEST_P(DotKernelsTest, Avx2AndPortableKernelsGiveTheSameBits) {
  const auto [n_a, n_b, d] = GetParam();
  std::mt19937_64 rng(n_a * 1000003 + n_b * 1009 + d);
  const std::vector<double> a = Random(n_a * d, rng), b = Random(n_b * d, rng);
  std::vector<double> portable(n_a * n_b, -1), fastest(n_a * n_b, -2);
  DotProducts(a.data(), n_a, b.data(), n_b, d, portable.data(), DotKernel::kPortable);
  DotProducts(a.data(), n_a, b.data(), n_b, d, fastest.data(), DotKernel::kAvx2);
  ASSERT_EQ(std::memcmp(portable.data(), fastest.data(), portable.size() * sizeof(double)), 0)
      << "the kernels differ (AVX2 on this CPU: " << Avx2Supported() << ")";
  for (size_t i = 0; i < n_a; ++i) {
    for (size_t j = 0; j < n_b; ++j) {
      long double exact = 0;
      for (size_t k = 0; k < d; ++k) exact += static_cast<long double>(a[i * d + k]) * b[j * d + k];
      EXPECT_NEAR(portable[i * n_b + j], static_cast<double>(exact), 1e-12 * d) << i << "," << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DotKernelsTest,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(3, 7, 5),
                                           std::make_tuple(4, 8, 115), std::make_tuple(13, 29, 115),
                                           std::make_tuple(64, 40, 17)));

// The kernel this CPU is given is one it can run: AVX2 only where the CPU reports it.
TEST(DotKernelsTest, TheFastestKernelIsAvx2ExactlyWhereTheCpuHasIt) {
  EXPECT_EQ(FastestDotKernel() == DotKernel::kAvx2, Avx2Supported());
#if defined(__x86_64__) || defined(__i386__)
  EXPECT_EQ(Avx2Supported(), static_cast<bool>(__builtin_cpu_supports("avx2")));
#else
  EXPECT_FALSE(Avx2Supported());
#endif
}

}  // namespace
}  // namespace meshlearn::similarity
