#include "training/pool_relu.h"

#include <cmath>

#include "training/fused_kernels.h"

namespace meshlearn::training::internal {
namespace {

// One window by max_pool2d's rule (a later NaN winning), for rows PoolReluRow leaves: the value
// of ReLU then max-pool and the winner (kNoWinner where the value is not positive).
void WindowWithNan(float v0, float v1, float v2, float v3, float& out, int32_t& code) {
  const float v[4] = {v0, v1, v2, v3};
  int32_t best = 0;
  for (int32_t k = 1; k < 4; ++k) {
    if (v[k] > v[best] || std::isnan(v[k])) best = k;
  }
  const float m = v[best];
  out = m > 0 || std::isnan(m) ? m : 0.0f;
  code = m > 0 ? best : kNoWinner;
}

// A tensor of `shape` {N, C, H, W} laid out channels-last ({N, H, W, C} in memory), zeroed when
// `zeroed`.
torch::Tensor EmptyChannelsLast(const std::vector<int64_t>& shape,
                                const torch::TensorOptions& options, bool zeroed) {
  const std::vector<int64_t> nhwc = {shape[0], shape[2], shape[3], shape[1]};
  torch::Tensor t = zeroed ? torch::zeros(nhwc, options) : torch::empty(nhwc, options);
  return t.permute({0, 3, 1, 2});
}

// Calls visit(in, pixel, row, out) for every 2 x 2 window of a channels-last tensor of `shape`
// {N, C, H, W}: `in` is the offset of the window's first pixel (its channels contiguous), `pixel`
// and `row` the steps to the next pixel and row, `out` the offset of its output pixel in the
// channels-last {N, C, H/2, W/2} result.
template <typename Visit>
void ForEachWindowChannelsLast(const std::vector<int64_t>& shape, Visit visit) {
  const int64_t batch = shape[0], channels = shape[1], height = shape[2], width = shape[3];
  int64_t out = 0;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t i = 0; i < height / 2; ++i) {
      for (int64_t j = 0; j < width / 2; ++j, out += channels) {
        visit(((n * height + 2 * i) * width + 2 * j) * channels, channels, width * channels, out);
      }
    }
  }
}

// PoolReluValues for a channels-last input of several channels.
torch::Tensor PoolReluValuesChannelsLast(const torch::Tensor& x, torch::Tensor* winners) {
  const int64_t batch = x.size(0), channels = x.size(1), height = x.size(2), width = x.size(3);
  const int64_t out_h = height / 2;
  const int64_t out_w = width / 2;
  torch::Tensor out = EmptyChannelsLast({batch, channels, out_h, out_w}, x.options(), false);
  torch::Tensor codes =
      torch::empty({batch * out_h * out_w * channels}, x.options().dtype(torch::kInt32));
  const float* src = x.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  int32_t* code = codes.data_ptr<int32_t>();
  ForEachWindowChannelsLast(
      x.sizes().vec(), [&](int64_t in, int64_t pixel, int64_t row, int64_t out_at) {
        const float* a = src + in;
        float* o = dst + out_at;
        int32_t* c = code + out_at;
        if (PoolReluPixels(a, a + pixel, a + row, a + row + pixel, channels, o, c)) return;
        for (int64_t k = 0; k < channels; ++k) {
          WindowWithNan(a[k], a[pixel + k], a[row + k], a[row + pixel + k], o[k], c[k]);
        }
      });
  if (winners != nullptr) *winners = std::move(codes);
  return out;
}

// PoolReluInputGradient for an output written channels-last.
torch::Tensor BackwardChannelsLast(const torch::Tensor& grad, const torch::Tensor& winners,
                                   const std::vector<int64_t>& shape) {
  const auto channels_last = torch::MemoryFormat::ChannelsLast;
  const torch::Tensor g = grad.contiguous(channels_last);
  const int64_t channels = shape[1], height = shape[2], width = shape[3];
  // A last odd row or column took no part in the pooling: its gradient is zero.
  torch::Tensor gx = EmptyChannelsLast(shape, g.options(), height % 2 != 0 || width % 2 != 0);
  const torch::Tensor g_bits = g.view(torch::kInt32);
  torch::Tensor gx_bits = gx.view(torch::kInt32);
  const int32_t* src = g_bits.data_ptr<int32_t>();
  const int32_t* code = winners.data_ptr<int32_t>();
  int32_t* dst = gx_bits.data_ptr<int32_t>();
  ForEachWindowChannelsLast(shape, [&](int64_t in, int64_t pixel, int64_t row, int64_t out_at) {
    int32_t* a = dst + in;
    PoolReluPixelsBackward(src + out_at, code + out_at, channels, a, a + pixel, a + row,
                           a + row + pixel);
  });
  return gx;
}

// PoolReluValues as an autograd function, whose backward pass is PoolReluInputGradient.
struct PoolReluFunction : torch::autograd::Function<PoolReluFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    torch::Tensor winners;
    torch::Tensor out = PoolReluValues(x, &winners);
    ctx->saved_data["winners"] = winners;
    ctx->saved_data["shape"] = x.sizes().vec();
    ctx->saved_data["channels_last"] = IsChannelsLast(out);
    return out;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    return {PoolReluInputGradient(grads[0], ctx->saved_data["winners"].toTensor(),
                                  ctx->saved_data["shape"].toIntVector(),
                                  ctx->saved_data["channels_last"].toBool())};
  }
};

}  // namespace

torch::Tensor PoolReluValues(const torch::Tensor& input, torch::Tensor* winners) {
  if (input.size(1) > 1 && input.is_contiguous(torch::MemoryFormat::ChannelsLast)) {
    return PoolReluValuesChannelsLast(input, winners);
  }
  const torch::Tensor x = input.contiguous();
  const int64_t planes = x.size(0) * x.size(1);
  const int64_t height = x.size(2);
  const int64_t width = x.size(3);
  const int64_t out_h = height / 2;
  const int64_t out_w = width / 2;
  torch::Tensor out = torch::empty({x.size(0), x.size(1), out_h, out_w}, x.options());
  torch::Tensor codes = torch::empty({planes * out_h * out_w}, x.options().dtype(torch::kInt32));
  const float* src = x.data_ptr<float>();
  float* dst = out.data_ptr<float>();
  int32_t* code = codes.data_ptr<int32_t>();
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t i = 0; i < out_h; ++i) {
      const float* row = src + (p * height + 2 * i) * width;
      if (!PoolReluRow(row, row + width, out_w, dst, code)) {
        for (int64_t j = 0; j < out_w; ++j) {
          const float* w = row + 2 * j;
          WindowWithNan(w[0], w[1], w[width], w[width + 1], dst[j], code[j]);
        }
      }
      dst += out_w;
      code += out_w;
    }
  }
  if (winners != nullptr) *winners = std::move(codes);
  return out;
}

bool IsChannelsLast(const torch::Tensor& out) {
  return out.is_contiguous(torch::MemoryFormat::ChannelsLast) && !out.is_contiguous();
}

torch::Tensor PoolReluInputGradient(const torch::Tensor& grad, const torch::Tensor& winners,
                                    const std::vector<int64_t>& shape, bool channels_last) {
  if (channels_last) return BackwardChannelsLast(grad, winners, shape);
  const torch::Tensor g = grad.contiguous();
  const int64_t height = shape[2];
  const int64_t width = shape[3];
  const int64_t out_h = height / 2;
  const int64_t out_w = width / 2;
  // A last odd row or column took no part in the pooling: its gradient is zero.
  torch::Tensor gx = height % 2 == 0 && width % 2 == 0 ? torch::empty(shape, g.options())
                                                       : torch::zeros(shape, g.options());
  const int64_t planes = shape[0] * shape[1];
  const int32_t* code = winners.data_ptr<int32_t>();
  const torch::Tensor g_bits = g.view(torch::kInt32);
  torch::Tensor gx_bits = gx.view(torch::kInt32);
  const int32_t* src = g_bits.data_ptr<int32_t>();
  int32_t* dst = gx_bits.data_ptr<int32_t>();
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t i = 0; i < out_h; ++i) {
      int32_t* row = dst + (p * height + 2 * i) * width;
      PoolReluRowBackward(src, code, out_w, row, row + width);
      src += out_w;
      code += out_w;
    }
  }
  return gx;
}

torch::Tensor PoolRelu(const torch::Tensor& x, bool plain) {
  if (plain) return torch::max_pool2d(torch::relu(x), 2);
  if (torch::GradMode::is_enabled() && x.requires_grad()) return PoolReluFunction::apply(x);
  return PoolReluValues(x, nullptr);
}

}  // namespace meshlearn::training::internal
