#pragma once
// The matrix product a bᵀ behind the EMD's cosine cost matrix (similarity/emd.h), with a portable
// kernel and an AVX2 one chosen at run time.
//
// Specification.
// - DotProducts writes out[i · n_b + j] = a_i · b_j for the rows of a (n_a × d) and b (n_b × d),
//   both row-major.
// - Every entry is summed in the same order (k ascending from 0.0, a multiply then an add, never
//   fused), so both kernels give the same bits.
//   Rationale: the EMD must not depend on the machine it ran on; tests compare the kernels bit for
//   bit.
// - The AVX2 kernel runs only where the CPU has AVX2 (checked once, at run time); elsewhere, and
//   off x86, every request runs the portable kernel. No -march flag is needed.
//   Rationale: a binary built here must not die of SIGILL on an older CPU; the AVX2 kernel computes
//   the product at n = 512, d = 115 in under 2 ms, the portable one several times slower (issue
//   19).

#include <cstddef>

namespace meshlearn::similarity {

// Which kernel computes DotProducts.
enum class DotKernel { kPortable, kAvx2 };

// Returns true when this CPU runs the AVX2 kernel (always false off x86).
bool Avx2Supported();

// Returns the fastest kernel this CPU runs: kAvx2 when Avx2Supported(), else kPortable.
DotKernel FastestDotKernel();

// Writes the n_a × n_b products a_i · b_j to `out` (see the specification) with `kernel`, or with
// the portable kernel when `kernel` is kAvx2 and the CPU lacks AVX2. `out` holds n_a · n_b values.
void DotProducts(const double* a, size_t n_a, const double* b, size_t n_b, size_t d, double* out,
                 DotKernel kernel = FastestDotKernel());

}  // namespace meshlearn::similarity
