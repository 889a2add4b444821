#pragma once
// Internal to meshlearn_training (not part of its public API): the torch side of Model, shared
// by models.cc, trainer.cc and dp_sgd.cc. Includes torch; do not include from public headers.

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "training/model.h"
#include "training/torchscript_file.h"

namespace meshlearn::training {

namespace internal {

// The layout of the parameters `named` (name and tensor), in that order.
ParamLayout LayoutOf(const std::vector<std::pair<std::string, torch::Tensor>>& named);

// The torchscript architecture's constructor for CreateModel (training/torchscript_model.cc),
// with the errors CreateModel lists for it.
Result<std::unique_ptr<Model>> MakeTorchScript(const ModelSpec& spec);

}  // namespace internal

// A layer with a weight and a bias, seen in a recorded forward pass (TorchModel::
// ForwardRecordingLayers): what per-sample gradients are computed from (training/dp_sgd.h).
struct LayerRecord {
  enum class Kind {
    kLinear,  // input [B, in], output [B, out] = input W^T + b
    kConv2d,  // input [B, C, H, W], output [B, O, H', W']: stride 1, no padding, no dilation
  };
  Kind kind = Kind::kLinear;
  torch::Tensor input;   // what the layer was applied to (never needs a gradient itself)
  torch::Tensor output;  // the layer's output, part of the autograd graph of the forward pass
};

// A weighted layer's input and the gradient of the loss with respect to its output, from a
// backward pass without autograd (TorchModel::ClassificationLayerGradients): what DP-SGD's
// per-sample gradients are computed from, as from a LayerRecord and autograd's gradient.
struct LayerGradient {
  LayerRecord::Kind kind = LayerRecord::Kind::kLinear;
  torch::Tensor input;        // what the layer was applied to
  torch::Tensor output_grad;  // d loss / d output, the shape of the layer's output
};

// A Model backed by torch tensors. Every model CreateModel() returns is one.
class TorchModel : public Model {
 public:
  // Maps a batch [B, *input_shape] to outputs [B, num_outputs].
  virtual torch::Tensor Forward(const torch::Tensor& batch) = 0;
  // Maps a batch to embeddings [B, EmbeddingDim()]; requires EmbeddingDim() > 0.
  virtual torch::Tensor EmbedBatch(const torch::Tensor& batch) = 0;
  // The trainable parameters, in Layout() order.
  virtual std::vector<torch::Tensor> ParameterTensors() const = 0;
  // Switches training mode (dropout, batch norm) on or off.
  virtual void SetTraining(bool training) = 0;
  // Plain: the forward pass uses LibTorch's own kernels only (relu then max_pool2d), as the
  // textbook loop does, instead of the fused ones; the values and gradients are the same. For
  // TrainConfig::plain_libtorch; no effect on models without fused kernels.
  virtual void SetPlainLibTorch(bool /*plain*/) {}
  // One training step's forward and backward pass without autograd, for a classification batch
  // [B, *input_shape] with int64 `labels` [B]: stores in every parameter's grad() the gradient of
  // the mean cross-entropy, and returns that loss (a scalar), as Forward, the loss and autograd's
  // backward pass would, up to float rounding. nullopt (no gradient touched) when the model has
  // no such path or is set to plain LibTorch; the caller then takes autograd's.
  virtual std::optional<torch::Tensor> ClassificationStep(const torch::Tensor& /*batch*/,
                                                          const torch::Tensor& /*labels*/) {
    return std::nullopt;
  }
  // The same pass for the summed cross-entropy of the batch, without touching any parameter's
  // grad(): appends every weighted layer's input and output gradient to `layers`, in the order
  // of ForwardRecordingLayers, and returns the summed loss. nullopt (nothing appended) when the
  // model has no such path; the caller then records the layers and takes autograd's gradients.
  virtual std::optional<torch::Tensor> ClassificationLayerGradients(
      const torch::Tensor& /*batch*/, const torch::Tensor& /*labels*/,
      std::vector<LayerGradient>& /*layers*/) {
    return std::nullopt;
  }
  // True when ForwardRecordingLayers is available: the built-in architectures, whose every
  // parameter is the weight or the bias of a recorded layer.
  virtual bool RecordsLayers() const { return false; }
  // Forward(batch), appending every weighted layer to `layers` in the order of its parameters in
  // Layout() (each layer's weight, then its bias). Only when RecordsLayers(); throws otherwise.
  virtual torch::Tensor ForwardRecordingLayers(const torch::Tensor& batch,
                                               std::vector<LayerRecord>& layers);

  Status CopyParameters(std::span<float> out) const override;
  Status LoadParameters(std::span<const float> flat) override;
  using Model::LoadParameters;
};

}  // namespace meshlearn::training
