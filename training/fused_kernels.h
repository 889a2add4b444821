#pragma once
// Internal to meshlearn_training (not part of its public API): the loops of the fast training
// path over raw floats, torch-free (pool_relu.cc and trainer.cc wrap them in tensors). They are
// compiled for AVX2 and for the baseline, one picked at load time, and written so that the
// compiler vectorises them: selects instead of branches on the values. Every element's result is
// the same on either path (no fused multiply-adds; adds, products, quotients and square roots
// are exactly rounded), so these loops give the same bits whichever version runs.

#include <cstddef>
#include <cstdint>

namespace meshlearn::training::internal {

// The window position of PoolReluRow's outputs that pass no gradient (not positive).
inline constexpr int32_t kNoWinner = 255;

// One output row of a 2 x 2, stride-2 max-pool of ReLU(x): output j is the ReLU of the maximum of
// top[2j], top[2j+1], bottom[2j], bottom[2j+1] (rows of x), into out[j]; code[j] is the position
// (0-3, row-major) max_pool2d takes for it, the first of equal maxima, or kNoWinner when the
// output is not positive. Returns false when a window holds a NaN (or infinities of both signs);
// that row's results are then not valid and the caller takes it by max_pool2d's rule itself.
bool PoolReluRow(const float* top, const float* bottom, int64_t n, float* out, int32_t* code);

// The backward pass of one PoolReluRow: grad[j] goes to the winner code[j] of window j in rows
// `top` and `bottom`, and every other position of the window gets +0. The floats are passed as
// their bits (a tensor's int32 view), which the pass copies or clears without arithmetic.
void PoolReluRowBackward(const int32_t* grad, const int32_t* code, int64_t n, int32_t* top,
                         int32_t* bottom);

// PoolReluRow for channels-last data: output k (of `n` channels) pools a[k], b[k], c[k], d[k],
// the same channel of the window's four pixels in row-major order. Same results and rules.
bool PoolReluPixels(const float* a, const float* b, const float* c, const float* d, int64_t n,
                    float* out, int32_t* code);

// PoolReluRowBackward for channels-last data: grad[k] goes to channel k of the winning pixel
// among a, b, c, d, and +0 to the three others.
void PoolReluPixelsBackward(const int32_t* grad, const int32_t* code, int64_t n, int32_t* a,
                            int32_t* b, int32_t* c, int32_t* d);

// Adam's update of `n` weights `w` from gradients `g` with moments `m` and `v`, as torch::optim::
// Adam computes it (PyTorch 1.13, no amsgrad): g' = g + decay w; m = b1 m + (1 - b1) g';
// v = b2 v + (1 - b2) g'^2; w -= step_size m / (sqrt(v) / sqrt_correction2 + eps).
struct AdamScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float step_size;         // lr / (1 - beta1^t)
  float sqrt_correction2;  // sqrt(1 - beta2^t)
  float eps, decay;
};
void AdamPass(float* w, const float* g, float* m, float* v, size_t n, const AdamScalars& s);

// SGD's update as torch::optim::SGD computes it (no dampening, no Nesterov): d = g + decay w;
// with momentum, buf = momentum buf + d (buf = d on the first step, `first`) and d = buf;
// w -= lr d. `buf` is unused without momentum.
void SgdPass(float* w, const float* g, float* buf, size_t n, float lr, float momentum, float decay,
             bool first);

}  // namespace meshlearn::training::internal
