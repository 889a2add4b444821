#include "training/trainer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>

#include "training/fused_kernels.h"
#include "training/seeded_random.h"
#include "training/torch_training.h"

namespace meshlearn::training {
namespace {

using internal::AsTorch;
using internal::CheckCompatible;
using internal::DataTensors;
using internal::Loss;
using internal::MakeOptimizer;
using internal::OptimizerPtr;
using internal::View;

// The one table where optimiser names meet torch optimisers.
struct OptimizerEntry {
  NamedValue<OptimizerKind> named;
  OptimizerPtr (*make)(std::vector<torch::Tensor>, const OptimizerConfig&);
};
constexpr std::array<OptimizerEntry, 2> kOptimizers = {{
    {{"adam", OptimizerKind::kAdam},
     [](std::vector<torch::Tensor> params, const OptimizerConfig& c) -> OptimizerPtr {
       return std::make_unique<torch::optim::Adam>(
           std::move(params),
           torch::optim::AdamOptions(c.learning_rate).weight_decay(c.weight_decay));
     }},
    {{"sgd", OptimizerKind::kSgd},
     [](std::vector<torch::Tensor> params, const OptimizerConfig& c) -> OptimizerPtr {
       return std::make_unique<torch::optim::SGD>(std::move(params),
                                                  torch::optim::SGDOptions(c.learning_rate)
                                                      .momentum(c.momentum)
                                                      .weight_decay(c.weight_decay));
     }},
}};

// The optimiser of a training loop: torch::optim's (the plain path), or the fused one.
class StepOptimizer {
 public:
  virtual ~StepOptimizer() = default;
  // Clears the parameters' gradients before a backward pass.
  virtual void ZeroGrad() = 0;
  // Updates the parameters from their gradients.
  virtual void Step() = 0;
};

class TorchOptimizer final : public StepOptimizer {
 public:
  explicit TorchOptimizer(OptimizerPtr optimizer) : optimizer_(std::move(optimizer)) {}
  void ZeroGrad() override { optimizer_->zero_grad(); }
  void Step() override { optimizer_->step(); }

 private:
  OptimizerPtr optimizer_;
};

// Adam and SGD as torch::optim computes them, for contiguous float parameters (PyTorch 1.13: Adam
// without amsgrad, betas 0.9 and 0.999, eps 1e-8; SGD without dampening or Nesterov), each
// parameter updated in one pass over its floats instead of about ten tensor operations, the state
// in one flat buffer per moment. Gradients are cleared by dropping them, so the next backward pass
// stores each gradient instead of adding it to zeros.
class FusedOptimizer final : public StepOptimizer {
 public:
  FusedOptimizer(std::vector<torch::Tensor> params, const OptimizerConfig& config)
      : params_(std::move(params)), config_(config) {
    size_t total = 0;
    for (const torch::Tensor& p : params_) total += static_cast<size_t>(p.numel());
    first_.assign(total, 0.0f);
    if (config_.kind == OptimizerKind::kAdam) second_.assign(total, 0.0f);
  }
  void ZeroGrad() override {
    for (torch::Tensor& p : params_) p.mutable_grad() = torch::Tensor();
  }
  void Step() override {
    ++step_;
    torch::NoGradGuard no_grad;
    size_t offset = 0;
    for (torch::Tensor& p : params_) {
      const auto n = static_cast<size_t>(p.numel());
      const torch::Tensor& grad = p.grad();
      if (grad.defined()) {
        const torch::Tensor g = grad.contiguous();
        if (config_.kind == OptimizerKind::kAdam) {
          AdamPass(p.data_ptr<float>(), g.data_ptr<float>(), offset, n);
        } else {
          SgdPass(p.data_ptr<float>(), g.data_ptr<float>(), offset, n);
        }
      }
      offset += n;
    }
    momentum_started_ = true;
  }

 private:
  void AdamPass(float* w, const float* g, size_t offset, size_t n) {
    const double beta1 = 0.9, beta2 = 0.999;
    internal::AdamScalars c;
    c.beta1 = static_cast<float>(beta1);
    c.beta2 = static_cast<float>(beta2);
    c.one_minus_beta1 = static_cast<float>(1 - beta1);
    c.one_minus_beta2 = static_cast<float>(1 - beta2);
    const double correction1 = 1 - std::pow(beta1, static_cast<double>(step_));
    const double correction2 = 1 - std::pow(beta2, static_cast<double>(step_));
    c.sqrt_correction2 = static_cast<float>(std::sqrt(correction2));
    c.step_size = static_cast<float>(config_.learning_rate / correction1);
    c.eps = 1e-8f;
    c.decay = static_cast<float>(config_.weight_decay);
    internal::AdamPass(w, g, first_.data() + offset, second_.data() + offset, n, c);
  }
  void SgdPass(float* w, const float* g, size_t offset, size_t n) {
    internal::SgdPass(w, g, first_.data() + offset, n, static_cast<float>(config_.learning_rate),
                      static_cast<float>(config_.momentum),
                      static_cast<float>(config_.weight_decay), !momentum_started_);
  }

  std::vector<torch::Tensor> params_;
  OptimizerConfig config_;
  std::vector<float> first_;   // Adam's first moment, or SGD's momentum buffer
  std::vector<float> second_;  // Adam's second moment
  int64_t step_ = 0;
  bool momentum_started_ = false;
};

}  // namespace

namespace internal {

Result<OptimizerPtr> MakeOptimizer(TorchModel& model, const OptimizerConfig& config) {
  if (!(config.learning_rate > 0) || !(config.momentum >= 0) || !(config.weight_decay >= 0)) {
    return Status::InvalidArgument(
        "optimiser needs learning_rate > 0, momentum >= 0 and weight_decay >= 0");
  }
  for (const OptimizerEntry& e : kOptimizers) {
    if (config.kind == e.named.value) return e.make(model.ParameterTensors(), config);
  }
  return Status::InvalidArgument("unknown optimiser");
}

Status CheckCompatible(const Model& model, const Dataset& data) {
  MESHLEARN_RETURN_IF_ERROR(data.Validate());
  if (data.size() == 0) return Status::InvalidArgument("the dataset is empty");
  const ModelSpec& spec = model.Spec();
  const size_t want = static_cast<size_t>(std::accumulate(
      spec.input_shape.begin(), spec.input_shape.end(), int64_t{1}, std::multiplies<int64_t>()));
  if (data.SampleNumel() != want) {
    return Status::InvalidArgument("samples hold " + std::to_string(data.SampleNumel()) +
                                   " floats but model '" + std::string(model.Name()) + "' takes " +
                                   std::to_string(want));
  }
  if (data.task == Task::kClassification && data.num_classes > spec.num_outputs) {
    return Status::InvalidArgument("the dataset has " + std::to_string(data.num_classes) +
                                   " classes but the model only " +
                                   std::to_string(spec.num_outputs) + " outputs");
  }
  if (data.task == Task::kRegression && spec.num_outputs != 1) {
    return Status::InvalidArgument("regression needs a model with exactly 1 output");
  }
  return Status::Ok();
}

DataTensors View(const Model& model, const Dataset& data) {
  std::vector<int64_t> shape = {static_cast<int64_t>(data.size())};
  const auto& in = model.Spec().input_shape;
  shape.insert(shape.end(), in.begin(), in.end());
  DataTensors t;
  t.x = torch::from_blob(const_cast<float*>(data.features.data()), shape, torch::kFloat32);
  const int64_t n = static_cast<int64_t>(data.size());
  if (data.task == Task::kClassification) {
    t.y = torch::from_blob(const_cast<int64_t*>(data.labels.data()), {n}, torch::kInt64);
  } else {
    t.y = torch::from_blob(const_cast<float*>(data.targets.data()), {n}, torch::kFloat32);
  }
  return t;
}

torch::Tensor Loss(Task task, const torch::Tensor& outputs, const torch::Tensor& y,
                   torch::Reduction::Reduction reduction) {
  if (task == Task::kClassification) {
    return torch::nll_loss(torch::log_softmax(outputs, 1), y, {}, reduction);
  }
  return torch::mse_loss(outputs.view({-1}), y, reduction);
}

}  // namespace internal

namespace {

// Runs `body` without autograd and with `model` in evaluation mode, restoring training mode
// afterwards. A torch exception becomes kInternal saying what failed (`doing`) with which model.
// InferenceMode rather than NoGradGuard: its tensors skip autograd's version counters and views'
// bookkeeping, which is a measurable share of a small cnn's forward pass (body copies its results
// out, so no inference tensor outlives it).
Status RunInEvalMode(TorchModel& model, const char* doing, const std::function<void()>& body) {
  c10::InferenceMode inference;
  model.SetTraining(false);
  Status status;
  try {
    body();
  } catch (const std::exception& e) {
    status = Status::Internal(std::string(doing) + " with model '" + std::string(model.Name()) +
                              "' failed: " + FirstLine(e.what()));
  }
  model.SetTraining(true);
  return status;
}

}  // namespace

NameTable<LossMean> LossMeanNames() {
  static constexpr NamedValue<LossMean> kNames[] = {
      {"samples", LossMean::kSamples},
      {"batches", LossMean::kBatches},
  };
  return kNames;
}

NameTable<OptimizerKind> OptimizerKindNames() {
  static constexpr auto kNames = [] {
    std::array<NamedValue<OptimizerKind>, kOptimizers.size()> names{};
    for (size_t i = 0; i < names.size(); ++i) names[i] = kOptimizers[i].named;
    return names;
  }();
  return kNames;
}

Result<TrainStats> TrainLocal(Model& model, const Dataset& train, const TrainConfig& config,
                              uint64_t seed) {
  MESHLEARN_RETURN_IF_ERROR(CheckCompatible(model, train));
  if (config.batch_size < 1 || config.epochs < 0) {
    return Status::InvalidArgument("training needs batch_size >= 1 and epochs >= 0");
  }
  TorchModel& m = AsTorch(model);
  Result<OptimizerPtr> optimizer = MakeOptimizer(m, config.optimizer);
  if (!optimizer.ok()) return optimizer.status();
  if (config.privacy) return internal::TrainLocalDpSgd(m, train, config, **optimizer, seed);
  std::unique_ptr<StepOptimizer> stepper;
  const std::vector<torch::Tensor> params = m.ParameterTensors();
  const bool fusable = std::all_of(params.begin(), params.end(), [](const torch::Tensor& p) {
    return p.is_contiguous() && p.scalar_type() == torch::kFloat32;
  });
  if (config.plain_libtorch || !fusable) {
    stepper = std::make_unique<TorchOptimizer>(std::move(*optimizer));
  } else {
    stepper = std::make_unique<FusedOptimizer>(params, config.optimizer);
  }
  const DataTensors data = View(model, train);
  const size_t n = train.size();
  // The fast path gathers the shuffled rows of many batches at once (at most about kGatherRows
  // rows, whole batches) and takes each batch as a view of them; the plain one gathers per batch.
  constexpr int64_t kGatherRows = 1024;
  const int64_t gather =
      config.plain_libtorch
          ? config.batch_size
          : std::max<int64_t>(1, kGatherRows / config.batch_size) * config.batch_size;
  TrainStats stats;
  try {
    m.SetTraining(true);
    m.SetPlainLibTorch(config.plain_libtorch);
    std::vector<int64_t> order(n);
    for (int epoch = 0; epoch < config.epochs; ++epoch) {
      std::iota(order.begin(), order.end(), int64_t{0});
      SeededRandom rng(DeriveSeed(seed, static_cast<uint64_t>(epoch)));
      rng.Shuffle(order);
      const torch::Tensor index =
          torch::from_blob(order.data(), {static_cast<int64_t>(n)}, torch::kInt64);
      double loss_sum = 0;
      int64_t batches = 0;
      torch::Tensor gathered_x, gathered_y;
      int64_t gathered_from = 0;
      for (size_t start = 0; start < n; start += static_cast<size_t>(config.batch_size)) {
        const auto first = static_cast<int64_t>(start);
        const int64_t len = std::min<int64_t>(config.batch_size, static_cast<int64_t>(n) - first);
        if (first % gather == 0) {
          const torch::Tensor rows =
              index.narrow(0, first, std::min<int64_t>(gather, static_cast<int64_t>(n) - first));
          gathered_x = data.x.index_select(0, rows);
          gathered_y = data.y.index_select(0, rows);
          gathered_from = first;
        }
        const torch::Tensor x = gathered_x.narrow(0, first - gathered_from, len);
        const torch::Tensor y = gathered_y.narrow(0, first - gathered_from, len);
        stepper->ZeroGrad();
        // The model's own step where it has one (the cnn's, without autograd); a model set to
        // plain LibTorch above has none.
        std::optional<torch::Tensor> stepped;
        if (train.task == Task::kClassification) stepped = m.ClassificationStep(x, y);
        const torch::Tensor loss =
            stepped ? *stepped : Loss(train.task, m.Forward(x), y, torch::Reduction::Mean);
        const double value = loss.item<double>();
        if (!std::isfinite(value)) {
          m.SetPlainLibTorch(false);
          return Status::NonFinite("training loss became " + std::to_string(value) + " in epoch " +
                                   std::to_string(epoch) + "; lower the learning rate");
        }
        if (!stepped) loss.backward();
        stepper->Step();
        loss_sum += value;
        ++batches;
        ++stats.steps;
      }
      stats.mean_loss = loss_sum / static_cast<double>(batches);
    }
    m.SetPlainLibTorch(false);
  } catch (const std::exception& e) {
    m.SetPlainLibTorch(false);
    return Status::Internal("training model '" + std::string(model.Name()) +
                            "' failed: " + FirstLine(e.what()));
  }
  return stats;
}

Result<Evaluation> Evaluate(Model& model, const Dataset& data, LossAveraging averaging) {
  MESHLEARN_RETURN_IF_ERROR(CheckCompatible(model, data));
  const int64_t batch_size = averaging.batch;
  if (batch_size < 1) return Status::InvalidArgument("evaluation needs batch_size >= 1");
  TorchModel& m = AsTorch(model);
  const DataTensors t = View(model, data);
  const int64_t n = static_cast<int64_t>(data.size());
  double loss_sum = 0;        // over the samples
  double batch_mean_sum = 0;  // of the batches' mean losses
  int64_t batches = 0;
  int64_t correct = 0;
  MESHLEARN_RETURN_IF_ERROR(RunInEvalMode(m, "evaluating", [&] {
    for (int64_t start = 0; start < n; start += batch_size) {
      const int64_t len = std::min(batch_size, n - start);
      const torch::Tensor outputs = m.Forward(t.x.narrow(0, start, len));
      const torch::Tensor y = t.y.narrow(0, start, len);
      const double batch_loss = Loss(data.task, outputs, y, torch::Reduction::Sum).item<double>();
      loss_sum += batch_loss;
      batch_mean_sum += batch_loss / static_cast<double>(len);
      ++batches;
      if (data.task == Task::kClassification) {
        correct += outputs.argmax(1).eq(y).sum().item<int64_t>();
      }
    }
  }));
  Evaluation result;
  result.samples = data.size();
  result.loss = averaging.mean == LossMean::kBatches ? batch_mean_sum / static_cast<double>(batches)
                                                     : loss_sum / static_cast<double>(n);
  result.accuracy = data.task == Task::kClassification
                        ? static_cast<double>(correct) / static_cast<double>(n)
                        : std::nan("");
  return result;
}

Result<std::vector<float>> Embed(Model& model, const Dataset& data, std::span<const size_t> rows) {
  const int64_t dim = model.EmbeddingDim();
  if (dim <= 0) {
    return Status::InvalidArgument("model '" + std::string(model.Name()) + "' has no embedding");
  }
  MESHLEARN_RETURN_IF_ERROR(CheckCompatible(model, data));
  std::vector<int64_t> index;
  index.reserve(rows.size());
  for (size_t r : rows) {
    if (r >= data.size()) {
      return Status::InvalidArgument("row " + std::to_string(r) + " is outside the " +
                                     std::to_string(data.size()) + " samples");
    }
    index.push_back(static_cast<int64_t>(r));
  }
  std::vector<float> out(rows.size() * static_cast<size_t>(dim));
  if (rows.empty()) return out;
  TorchModel& m = AsTorch(model);
  const DataTensors t = View(model, data);
  MESHLEARN_RETURN_IF_ERROR(RunInEvalMode(m, "embedding", [&] {
    const int64_t n = static_cast<int64_t>(index.size());
    const torch::Tensor all = torch::from_blob(index.data(), {n}, torch::kInt64);
    for (int64_t start = 0; start < n; start += kEvaluationBatch) {
      const int64_t len = std::min(kEvaluationBatch, n - start);
      const torch::Tensor e =
          m.EmbedBatch(t.x.index_select(0, all.narrow(0, start, len))).contiguous();
      std::memcpy(out.data() + start * dim, e.data_ptr<float>(),
                  static_cast<size_t>(len * dim) * sizeof(float));
    }
  }));
  return out;
}

Result<WeightsLossFn> MakeWeightsLossFn(const Model& prototype, const Dataset& data,
                                        LossAveraging averaging) {
  Result<std::unique_ptr<Model>> clone = prototype.Clone();
  if (!clone.ok()) return clone.status();
  MESHLEARN_RETURN_IF_ERROR(CheckCompatible(**clone, data));
  std::shared_ptr<Model> scratch = std::move(clone).value();
  const Dataset* d = &data;
  return WeightsLossFn([scratch, d, averaging](std::span<const float> weights) -> Result<double> {
    MESHLEARN_RETURN_IF_ERROR(scratch->LoadParameters(weights));
    Result<Evaluation> e = Evaluate(*scratch, *d, averaging);
    if (!e.ok()) return e.status();
    return e->loss;
  });
}

}  // namespace meshlearn::training
