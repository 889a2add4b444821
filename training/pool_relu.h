#pragma once
// Internal to meshlearn_training (not part of its public API): ReLU then 2 x 2 max-pooling in one
// pass, with its own backward pass, for the cnn's fast path (training/models.cc). Max and ReLU
// commute, so the values are exactly those of torch::max_pool2d(torch::relu(x), 2), whose NCHW
// max-pool took a third of a cnn training step (meshlearn-bench BM_CnnTrainVsLibTorch, issue 29).
// The loops over raw floats are in training/fused_kernels.h. Includes torch; do not include from
// public headers.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace meshlearn::training::internal {

// 2 x 2 max-pooling with stride 2 (a last odd row or column dropped) of ReLU(x), for x
// [B, C, H, W]: the values of torch::max_pool2d(torch::relu(x), 2), in one pass over x. Each
// window's maximum is the first of its largest values in row-major order, as max_pool2d takes it
// (a NaN wins). When `winners` is set it receives, per output, the window position (0-3) the
// gradient flows to, or kNoWinner (training/fused_kernels.h) where the output is not positive
// (ReLU passes no gradient). The output is channels-last when x is and has several channels.
torch::Tensor PoolReluValues(const torch::Tensor& x, torch::Tensor* winners);

// Whether PoolReluValues wrote `out` channels-last (it did when its input was).
bool IsChannelsLast(const torch::Tensor& out);

// The gradient of the input x of `shape` from `grad`, the gradient of PoolReluValues(x,
// &winners), whose output was channels-last when `channels_last`: each output's gradient goes to
// its window's winner, as max_pool2d's and relu's backward passes route it (windows do not
// overlap, so no sums), and every other position gets +0.
torch::Tensor PoolReluInputGradient(const torch::Tensor& grad, const torch::Tensor& winners,
                                    const std::vector<int64_t>& shape, bool channels_last);

// ReLU then 2 x 2 max-pool: PoolReluValues, with autograd (PoolReluInputGradient) when it is
// enabled and x requires a gradient. `plain` takes LibTorch's relu and max_pool2d instead
// (TrainConfig::plain_libtorch).
torch::Tensor PoolRelu(const torch::Tensor& x, bool plain);

}  // namespace meshlearn::training::internal
