#include "training/fused_kernels.h"

#include <cmath>

namespace meshlearn::training::internal {

#define MESHLEARN_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))

// One window v0 v1 / v2 v3 of PoolReluRow into `out` and `code`; returns 1 when it holds a NaN
// (or infinities of both signs), whose results are then not valid. A tournament keeps
// max_pool2d's choice among equal maxima: ties go to the lower position.
__attribute__((always_inline)) inline int PoolWindow(float v0, float v1, float v2, float v3,
                                                     float& out, int32_t& code) {
  const float sum = v0 + v1 + v2 + v3;
  const bool right_top = v1 > v0;
  const bool right_bottom = v3 > v2;
  const float upper = right_top ? v1 : v0;
  const float lower = right_bottom ? v3 : v2;
  const bool down = lower > upper;
  const float m = down ? lower : upper;
  const int32_t best =
      down ? 2 + static_cast<int32_t>(right_bottom) : static_cast<int32_t>(right_top);
  out = m > 0 ? m : 0.0f;
  code = m > 0 ? best : kNoWinner;
  return static_cast<int>(sum != sum);
}

MESHLEARN_VECTOR_CLONES bool PoolReluRow(const float* __restrict__ top,
                                         const float* __restrict__ bottom, int64_t n,
                                         float* __restrict__ out, int32_t* __restrict__ code) {
  int odd = 0;
  for (int64_t j = 0; j < n; ++j) {
    odd |=
        PoolWindow(top[2 * j], top[2 * j + 1], bottom[2 * j], bottom[2 * j + 1], out[j], code[j]);
  }
  return odd == 0;
}

MESHLEARN_VECTOR_CLONES void PoolReluRowBackward(const int32_t* __restrict__ grad,
                                                 const int32_t* __restrict__ code, int64_t n,
                                                 int32_t* __restrict__ top,
                                                 int32_t* __restrict__ bottom) {
  // Masks on the bits rather than selects of floats: the result is exactly the gradient or +0,
  // whatever the gradient holds, and the loop vectorises.
  for (int64_t j = 0; j < n; ++j) {
    const int32_t g = grad[j];
    const int32_t c = code[j];
    top[2 * j] = g & -static_cast<int32_t>(c == 0);
    top[2 * j + 1] = g & -static_cast<int32_t>(c == 1);
    bottom[2 * j] = g & -static_cast<int32_t>(c == 2);
    bottom[2 * j + 1] = g & -static_cast<int32_t>(c == 3);
  }
}

MESHLEARN_VECTOR_CLONES bool PoolReluPixels(const float* __restrict__ a,
                                            const float* __restrict__ b,
                                            const float* __restrict__ c,
                                            const float* __restrict__ d, int64_t n,
                                            float* __restrict__ out, int32_t* __restrict__ code) {
  int odd = 0;
  for (int64_t k = 0; k < n; ++k) odd |= PoolWindow(a[k], b[k], c[k], d[k], out[k], code[k]);
  return odd == 0;
}

MESHLEARN_VECTOR_CLONES void PoolReluPixelsBackward(const int32_t* __restrict__ grad,
                                                    const int32_t* __restrict__ code, int64_t n,
                                                    int32_t* __restrict__ a,
                                                    int32_t* __restrict__ b,
                                                    int32_t* __restrict__ c,
                                                    int32_t* __restrict__ d) {
  for (int64_t k = 0; k < n; ++k) {
    const int32_t g = grad[k];
    const int32_t w = code[k];
    a[k] = g & -static_cast<int32_t>(w == 0);
    b[k] = g & -static_cast<int32_t>(w == 1);
    c[k] = g & -static_cast<int32_t>(w == 2);
    d[k] = g & -static_cast<int32_t>(w == 3);
  }
}

MESHLEARN_VECTOR_CLONES void AdamPass(float* __restrict__ w, const float* __restrict__ g,
                                      float* __restrict__ m, float* __restrict__ v, size_t n,
                                      const AdamScalars& s) {
  const AdamScalars c = s;
  for (size_t i = 0; i < n; ++i) {
    const float gi = c.decay != 0 ? g[i] + c.decay * w[i] : g[i];
    m[i] = m[i] * c.beta1 + c.one_minus_beta1 * gi;
    v[i] = v[i] * c.beta2 + c.one_minus_beta2 * gi * gi;
    const float denom = std::sqrt(v[i]) / c.sqrt_correction2 + c.eps;
    w[i] -= c.step_size * (m[i] / denom);
  }
}

MESHLEARN_VECTOR_CLONES void SgdPass(float* __restrict__ w, const float* __restrict__ g,
                                     float* __restrict__ buf, size_t n, float lr, float momentum,
                                     float decay, bool first) {
  for (size_t i = 0; i < n; ++i) {
    float d = decay != 0 ? g[i] + decay * w[i] : g[i];
    if (momentum != 0) {
      buf[i] = first ? d : buf[i] * momentum + d;
      d = buf[i];
    }
    w[i] -= lr * d;
  }
}

}  // namespace meshlearn::training::internal
