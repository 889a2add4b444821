#pragma once
// Internal to meshlearn_training (not part of its public API): the torch-side helpers of local
// training shared by trainer.cc and dp_sgd.cc. Includes torch; do not include from public
// headers. Training depends on the models (training/torch_model.h), never the other way.

#include <cstdint>
#include <memory>
#include <string>

#include "training/dataset.h"
#include "training/torch_model.h"
#include "training/trainer.h"

namespace meshlearn::training::internal {

// `model` as the TorchModel every model CreateModel() returns is.
inline TorchModel& AsTorch(Model& model) { return static_cast<TorchModel&>(model); }

// Checks that `model` can consume `data` (sample size, classes, regression outputs).
Status CheckCompatible(const Model& model, const Dataset& data);

// The whole dataset as tensors viewing its buffers (no copy; never written to).
struct DataTensors {
  torch::Tensor x;  // [N, *input_shape]
  torch::Tensor y;  // [N] int64 labels or float targets
};
DataTensors View(const Model& model, const Dataset& data);

// Loss of `outputs` [B, C] against `y` [B] for `task`, reduced by `reduction`: cross-entropy for
// classification, squared error for regression.
torch::Tensor Loss(Task task, const torch::Tensor& outputs, const torch::Tensor& y,
                   torch::Reduction::Reduction reduction);

using OptimizerPtr = std::unique_ptr<torch::optim::Optimizer>;

// A fresh optimiser of `config` over the parameters of `model`; kInvalidArgument for an unknown
// kind or values out of range.
Result<OptimizerPtr> MakeOptimizer(TorchModel& model, const OptimizerConfig& config);

// TrainLocal with config.privacy set (training/dp_sgd.h): DP-SGD steps with Poisson sampling.
// `model` and `train` have been checked with CheckCompatible.
Result<TrainStats> TrainLocalDpSgd(TorchModel& model, const Dataset& train,
                                   const TrainConfig& config, torch::optim::Optimizer& optimizer,
                                   uint64_t seed);

}  // namespace meshlearn::training::internal
