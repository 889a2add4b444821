#include "similarity/dot_products.h"

#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MESHLEARN_X86 1
#endif

namespace meshlearn::similarity {
namespace {

// a_i · b_j in the common order.
double DotProduct(const double* a, size_t i, const double* b, size_t j, size_t d) {
  double sum = 0;
  for (size_t k = 0; k < d; ++k) sum += a[i * d + k] * b[j * d + k];
  return sum;
}

#ifdef MESHLEARN_X86
// The 4 × 8 AVX2 tiles of the product for the first n_a − n_a % 4 rows and n_b − n_b % 8
// columns; the rest is left to DotProduct(). `panels` holds b in blocks of 8 rows, each block
// stored k-major (d × 8), so each k step loads 8 consecutive values.
// Rationale: GCC 12's vectoriser made the AVX2 clone of a plain tiled loop more than ten times
// slower than its SSE2 build here; this kernel keeps its 32 sums in eight registers over the whole
// k loop. It uses separate multiplies and adds (AVX2 has no fused ones), so it sums as
// DotProduct() does.
__attribute__((target("avx2"))) void DotProductsAvx2(const double* a, size_t n_a,
                                                     const double* panels, size_t n_b, size_t d,
                                                     double* out) {
  const size_t full_rows = n_a - n_a % 4, full_columns = n_b - n_b % 8;
  for (size_t j = 0; j < full_columns; j += 8) {
    const double* panel = panels + j * d;
    for (size_t i = 0; i < full_rows; i += 4) {
      __m256d s[4][2];
      for (auto& row : s) row[0] = row[1] = _mm256_setzero_pd();
      const double* rows = a + i * d;
      for (size_t k = 0; k < d; ++k) {
        const __m256d low = _mm256_loadu_pd(panel + k * 8);
        const __m256d high = _mm256_loadu_pd(panel + k * 8 + 4);
        for (size_t r = 0; r < 4; ++r) {
          const __m256d x = _mm256_broadcast_sd(rows + r * d + k);
          s[r][0] = _mm256_add_pd(s[r][0], _mm256_mul_pd(x, low));
          s[r][1] = _mm256_add_pd(s[r][1], _mm256_mul_pd(x, high));
        }
      }
      for (size_t r = 0; r < 4; ++r) {
        _mm256_storeu_pd(out + (i + r) * n_b + j, s[r][0]);
        _mm256_storeu_pd(out + (i + r) * n_b + j + 4, s[r][1]);
      }
    }
  }
}
#endif

}  // namespace

bool Avx2Supported() {
#ifdef MESHLEARN_X86
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
#else
  return false;
#endif
}

DotKernel FastestDotKernel() { return Avx2Supported() ? DotKernel::kAvx2 : DotKernel::kPortable; }

void DotProducts(const double* a, size_t n_a, const double* b, size_t n_b, size_t d, double* out,
                 DotKernel kernel) {
  const bool avx2 = kernel == DotKernel::kAvx2 && Avx2Supported();
  const size_t full_rows = avx2 ? n_a - n_a % 4 : 0, full_columns = avx2 ? n_b - n_b % 8 : 0;
#ifdef MESHLEARN_X86
  if (full_rows > 0 && full_columns > 0) {
    std::vector<double> panels(full_columns * d);
    for (size_t j = 0; j < full_columns; ++j) {
      for (size_t k = 0; k < d; ++k) panels[(j / 8) * 8 * d + k * 8 + j % 8] = b[j * d + k];
    }
    DotProductsAvx2(a, n_a, panels.data(), n_b, d, out);
  }
#endif
  for (size_t i = 0; i < n_a; ++i) {
    for (size_t j = i < full_rows ? full_columns : 0; j < n_b; ++j) {
      out[i * n_b + j] = DotProduct(a, i, b, j, d);
    }
  }
}

}  // namespace meshlearn::similarity
