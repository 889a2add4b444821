#pragma once
// The shared random projection R of the EMD embedding exchange (DESIGN.md "EMD embedding
// exchange", steps 1-3; file 000, the projection that hides raw embeddings).
//
// Specification.
// - R is a d × k matrix, k = round(proj_ratio · d) (proj_ratio = 0.9 by default), with independent
//   standard Gaussian entries, after which each of its d rows is scaled to unit L2 norm.
// - R is a pure function of (seed, d, proj_ratio): the entries are drawn row-major from
//   std::mt19937_64(seed)'s raw 64-bit outputs through a Box–Muller transform written here, never
//   through std:: distributions.
//   Rationale: i and j each draw R from the agreed seed and must hold the same matrix; the
//   standard distributions are implementation-defined and differ between standard libraries,
//   while the Mersenne Twister's output sequence is fixed by the C++ standard.
// - Both peers get the seed from AgreedProjectionSeed(), which is symmetric in the two nonces.
//   Rationale: neither side picks R alone, and no extra round trip is needed.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"
#include "similarity/emd.h"

namespace meshlearn::similarity {

// DESIGN.md "EMD embedding exchange": k = round(proj_ratio · d).
inline constexpr double kDefaultProjectionRatio = 0.9;

// A d × k projection matrix, row-major: entry (r, c) is matrix[r * output_dim + c].
struct Projection {
  size_t input_dim = 0;   // d: the embedding width the projection accepts
  size_t output_dim = 0;  // k = round(proj_ratio · d)
  std::vector<float> matrix;
};

// Draws R for `input_dim` = d from `seed` as in the header specification. Returns
// kInvalidArgument when d is 0, when proj_ratio is not finite and > 0, when k rounds to 0, or when
// d · k exceeds 2^26 entries.
Result<Projection> DrawProjection(uint64_t seed, size_t input_dim,
                                  double proj_ratio = kDefaultProjectionRatio);

// Returns x · R (x.rows × R.output_dim, row-major), accumulated in double. Errors: an empty x or a
// values span whose size is not rows × cols is kInvalidArgument; x.cols != R.input_dim is
// kLayoutMismatch; a NaN or Inf in x is kNonFinite.
Result<std::vector<float>> Project(const PointSet& x, const Projection& r);

// The projection seed two peers agree on from their nonces (DESIGN.md "EMD embedding exchange",
// step 1: "a hash of both nodes' nonces"). Symmetric: AgreedProjectionSeed(a, b) ==
// AgreedProjectionSeed(b, a). A splitmix64-style mix of the ordered pair, so a change of one bit in
// either nonce changes about half the bits of the seed.
uint64_t AgreedProjectionSeed(uint64_t nonce_i, uint64_t nonce_j);

}  // namespace meshlearn::similarity
