#include "training/dp_sgd.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

#include "training/seeded_random.h"
#include "training/torch_training.h"

namespace meshlearn::training {
namespace {

using internal::AsTorch;

// Keeps a zero gradient's clipping factor finite (dp_sgd.h, "Clipping").
constexpr double kNormFloor = 1e-6;

// The per-sample gradients of `x`/`y` under `model`, one tensor [B, *shape] per parameter in
// Layout() order, and the summed loss (dp_sgd.h, "Per-sample gradients").
struct PerSampleGrads {
  std::vector<torch::Tensor> grads;
  double loss_sum = 0;
};

// Every weighted layer's input and the gradient of the summed loss of `x`/`y` with respect to its
// output, in parameter order, and that loss: from the model's own backward pass where it has one
// (the cnn's, TorchModel::ClassificationLayerGradients), else from the recorded layers and
// autograd.
torch::Tensor LayerGradients(TorchModel& model, Task task, const torch::Tensor& x,
                             const torch::Tensor& y, std::vector<LayerGradient>& layers) {
  if (task == Task::kClassification) {
    std::optional<torch::Tensor> loss = model.ClassificationLayerGradients(x, y, layers);
    if (loss) return *loss;
  }
  std::vector<LayerRecord> records;
  const torch::Tensor outputs = model.ForwardRecordingLayers(x, records);
  const torch::Tensor loss = internal::Loss(task, outputs, y, torch::Reduction::Sum);
  std::vector<torch::Tensor> layer_outputs;
  for (const LayerRecord& record : records) layer_outputs.push_back(record.output);
  const std::vector<torch::Tensor> output_grads = torch::autograd::grad({loss}, layer_outputs);
  for (size_t k = 0; k < records.size(); ++k) {
    layers.push_back({records[k].kind, records[k].input.detach(), output_grads[k]});
  }
  return loss;
}

PerSampleGrads ComputePerSampleGrads(TorchModel& model, Task task, const torch::Tensor& x,
                                     const torch::Tensor& y) {
  std::vector<LayerGradient> layers;
  const torch::Tensor loss = LayerGradients(model, task, x, y, layers);
  const std::vector<torch::Tensor> params = model.ParameterTensors();
  if (params.size() != 2 * layers.size()) {
    throw std::logic_error("the recorded layers do not cover the model's parameters");
  }
  torch::NoGradGuard no_grad;
  PerSampleGrads out;
  out.loss_sum = loss.item<double>();
  const int64_t batch = x.size(0);
  for (size_t k = 0; k < layers.size(); ++k) {
    const torch::Tensor& input = layers[k].input;
    const torch::Tensor& g = layers[k].output_grad;
    const torch::Tensor& weight = params[2 * k];
    std::vector<int64_t> weight_shape = {batch};
    weight_shape.insert(weight_shape.end(), weight.sizes().begin(), weight.sizes().end());
    if (layers[k].kind == LayerRecord::Kind::kLinear) {
      out.grads.push_back(torch::bmm(g.unsqueeze(2), input.unsqueeze(1)));  // g_i a_iᵀ
      out.grads.push_back(g);
    } else {
      // The patches each output position saw: [B, C·kh·kw, positions].
      const torch::Tensor patches = torch::nn::functional::unfold(
          input, torch::nn::functional::UnfoldFuncOptions({weight.size(2), weight.size(3)}));
      out.grads.push_back(torch::bmm(g.flatten(2), patches.transpose(1, 2)).view(weight_shape));
      out.grads.push_back(g.sum({2, 3}));
    }
  }
  return out;
}

// The sum over the batch of the per-sample gradients, each scaled to norm <= max_grad_norm.
std::vector<torch::Tensor> ClippedSum(const std::vector<torch::Tensor>& per_sample,
                                      double max_grad_norm) {
  torch::NoGradGuard no_grad;
  torch::Tensor squared_norms = torch::zeros({per_sample.front().size(0)});
  for (const torch::Tensor& g : per_sample) squared_norms += g.flatten(1).pow(2).sum(1);
  const torch::Tensor factors =
      (max_grad_norm / (squared_norms.sqrt() + kNormFloor)).clamp_max(1.0);
  std::vector<torch::Tensor> sums;
  for (const torch::Tensor& g : per_sample) sums.push_back(torch::tensordot(factors, g, {0}, {0}));
  return sums;
}

// Adds N(0, stddev²) to every coordinate of `sums`, drawn from a generator seeded with `seed`.
void AddGaussianNoise(std::vector<torch::Tensor>& sums, double stddev, uint64_t seed) {
  if (stddev == 0) return;
  torch::NoGradGuard no_grad;
  at::Generator generator = at::detail::createCPUGenerator(seed);
  for (torch::Tensor& s : sums) {
    s.add_(torch::randn(s.sizes(), generator, torch::kFloat32), stddev);
  }
}

// The noisy clipped gradient sum of `x`/`y` (dp_sgd.h, PrivateGradientSum), one tensor per
// parameter, and the summed loss. An empty batch gives pure noise.
PerSampleGrads NoisyClippedSum(TorchModel& model, Task task, const torch::Tensor& x,
                               const torch::Tensor& y, const DpSgdConfig& config,
                               uint64_t noise_seed) {
  PerSampleGrads out;
  if (x.size(0) > 0) {
    PerSampleGrads per_sample = ComputePerSampleGrads(model, task, x, y);
    out.grads = ClippedSum(per_sample.grads, config.max_grad_norm);
    out.loss_sum = per_sample.loss_sum;
  } else {
    for (const torch::Tensor& p : model.ParameterTensors()) {
      out.grads.push_back(torch::zeros_like(p).detach());
    }
  }
  AddGaussianNoise(out.grads, config.noise_multiplier * config.max_grad_norm, noise_seed);
  return out;
}

// The samples `rows` of `data` as tensors; kInvalidArgument for a row out of range.
Result<internal::DataTensors> SelectRows(const Model& model, const Dataset& data,
                                         std::span<const size_t> rows) {
  MESHLEARN_RETURN_IF_ERROR(internal::CheckCompatible(model, data));
  std::vector<int64_t> index;
  for (size_t r : rows) {
    if (r >= data.size()) {
      return Status::InvalidArgument("row " + std::to_string(r) + " is outside the " +
                                     std::to_string(data.size()) + " samples");
    }
    index.push_back(static_cast<int64_t>(r));
  }
  const internal::DataTensors all = internal::View(model, data);
  const torch::Tensor picked =
      torch::from_blob(index.data(), {static_cast<int64_t>(index.size())}, torch::kInt64);
  return internal::DataTensors{all.x.index_select(0, picked), all.y.index_select(0, picked)};
}

// `tensors` (one per parameter, each [B, ...] when `per_row`, else [...]) flattened into
// row-major floats: B rows of all parameters, or one row.
std::vector<float> Flatten(const std::vector<torch::Tensor>& tensors, bool per_row) {
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& t : tensors) {
    flat.push_back(per_row ? t.flatten(1) : t.reshape({1, -1}));
  }
  const torch::Tensor joined = torch::cat(flat, 1).contiguous();
  std::vector<float> out(static_cast<size_t>(joined.numel()));
  std::memcpy(out.data(), joined.data_ptr<float>(), out.size() * sizeof(float));
  return out;
}

// Runs `body`, turning a torch exception into kInternal saying what failed (`doing`).
template <class T, class Body>
Result<T> Guarded(const Model& model, const char* doing, Body body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Status::Internal(std::string(doing) + " with model '" + std::string(model.Name()) +
                            "' failed: " + FirstLine(e.what()));
  }
}

}  // namespace

double PoissonSamplingRate(int64_t batch_size, size_t records) {
  return std::min(1.0, static_cast<double>(batch_size) / static_cast<double>(records));
}

int64_t DpSgdStepsPerEpoch(int64_t batch_size, size_t records) {
  return (static_cast<int64_t>(records) + batch_size - 1) / batch_size;
}

std::vector<size_t> PoissonSample(size_t records, double rate, uint64_t seed) {
  SeededRandom rng(seed);
  std::vector<size_t> rows;
  for (size_t r = 0; r < records; ++r) {
    if (rng.Uniform() < rate) rows.push_back(r);
  }
  return rows;
}

Status CheckDpSgdSupported(const Model& model) {
  if (static_cast<const TorchModel&>(model).RecordsLayers()) return Status::Ok();
  return Status::InvalidArgument(
      "[privacy] DP-SGD needs per-sample gradients, which only the built-in architectures "
      "(linear, mlp, cnn, cnn_emd) provide; model '" +
      std::string(model.Name()) + "' cannot be trained with differential privacy");
}

Result<std::vector<float>> PerSampleGradients(Model& model, const Dataset& data,
                                              std::span<const size_t> rows) {
  MESHLEARN_RETURN_IF_ERROR(CheckDpSgdSupported(model));
  auto t = SelectRows(model, data, rows);
  if (!t.ok()) return t.status();
  if (rows.empty()) return std::vector<float>();
  return Guarded<std::vector<float>>(model, "per-sample gradients", [&] {
    return Flatten(ComputePerSampleGrads(AsTorch(model), data.task, t->x, t->y).grads, true);
  });
}

Result<std::vector<float>> SummedGradient(Model& model, const Dataset& data,
                                          std::span<const size_t> rows) {
  auto t = SelectRows(model, data, rows);
  if (!t.ok()) return t.status();
  TorchModel& m = AsTorch(model);
  return Guarded<std::vector<float>>(model, "the gradient", [&] {
    const torch::Tensor loss =
        internal::Loss(data.task, m.Forward(t->x), t->y, torch::Reduction::Sum);
    return Flatten(torch::autograd::grad({loss}, m.ParameterTensors()), false);
  });
}

Result<std::vector<float>> PrivateGradientSum(Model& model, const Dataset& data,
                                              std::span<const size_t> rows,
                                              const DpSgdConfig& config, uint64_t noise_seed) {
  MESHLEARN_RETURN_IF_ERROR(CheckDpSgdSupported(model));
  if (!(config.noise_multiplier >= 0) || !(config.max_grad_norm > 0)) {
    return Status::InvalidArgument("DP-SGD needs noise_multiplier >= 0 and max_grad_norm > 0");
  }
  auto t = SelectRows(model, data, rows);
  if (!t.ok()) return t.status();
  return Guarded<std::vector<float>>(model, "the private gradient", [&] {
    return Flatten(NoisyClippedSum(AsTorch(model), data.task, t->x, t->y, config, noise_seed).grads,
                   false);
  });
}

namespace internal {

Result<TrainStats> TrainLocalDpSgd(TorchModel& model, const Dataset& train,
                                   const TrainConfig& config, torch::optim::Optimizer& optimizer,
                                   uint64_t seed) {
  MESHLEARN_RETURN_IF_ERROR(CheckDpSgdSupported(model));
  const DpSgdConfig& dp = *config.privacy;
  if (!(dp.noise_multiplier >= 0) || !(dp.max_grad_norm > 0)) {
    return Status::InvalidArgument("DP-SGD needs noise_multiplier >= 0 and max_grad_norm > 0");
  }
  const size_t n = train.size();
  const double rate = PoissonSamplingRate(config.batch_size, n);
  const int64_t steps_per_epoch = DpSgdStepsPerEpoch(config.batch_size, n);
  // dp_sgd.h, "Noise": divide by the expected batch size, never by the drawn one.
  const double expected_batch = rate * static_cast<double>(n);
  const DataTensors data = View(model, train);
  const std::vector<torch::Tensor> params = model.ParameterTensors();
  TrainStats stats;
  try {
    model.SetTraining(true);
    for (int epoch = 0; epoch < config.epochs; ++epoch) {
      double loss_sum = 0;
      int64_t samples = 0;
      for (int64_t step = 0; step < steps_per_epoch; ++step) {
        const uint64_t step_seed = DeriveSeed(seed, static_cast<uint64_t>(stats.steps));
        std::vector<int64_t> rows;
        for (size_t r : PoissonSample(n, rate, DeriveSeed(step_seed, 0))) {
          rows.push_back(static_cast<int64_t>(r));
        }
        const torch::Tensor index =
            torch::from_blob(rows.data(), {static_cast<int64_t>(rows.size())}, torch::kInt64);
        PerSampleGrads sum =
            NoisyClippedSum(model, train.task, data.x.index_select(0, index),
                            data.y.index_select(0, index), dp, DeriveSeed(step_seed, 1));
        if (!std::isfinite(sum.loss_sum)) {
          return Status::NonFinite("training loss became " + std::to_string(sum.loss_sum) +
                                   " in epoch " + std::to_string(epoch) +
                                   "; lower the learning rate");
        }
        // Replaces the gradients (no zero_grad: it would detach the previous step's in place).
        for (size_t k = 0; k < params.size(); ++k) {
          params[k].mutable_grad() = sum.grads[k].div(expected_batch);
        }
        optimizer.step();
        loss_sum += sum.loss_sum;
        samples += static_cast<int64_t>(rows.size());
        ++stats.steps;
      }
      // TrainStats::mean_loss: with Poisson batches of varying size, per sampled record.
      stats.mean_loss = samples > 0 ? loss_sum / static_cast<double>(samples) : 0;
    }
  } catch (const std::exception& e) {
    return Status::Internal("DP-SGD training of model '" + std::string(model.Name()) +
                            "' failed: " + FirstLine(e.what()));
  }
  return stats;
}

}  // namespace internal
}  // namespace meshlearn::training
