// The built-in architectures, the model factory table (the torchscript architecture is in
// torchscript_model.cc) and the process's compute threads.

#include <dlfcn.h>
#include <malloc.h>
#include <torch/torch.h>

#include <array>
#include <atomic>
#include <cmath>
#include <mutex>

#include "training/pool_relu.h"
#include "training/seeded_random.h"
#include "training/torch_model.h"

namespace meshlearn::training {
namespace {

using internal::IsChannelsLast;
using internal::LayoutOf;
using internal::PoolRelu;
using internal::PoolReluInputGradient;
using internal::PoolReluValues;

// Set by SetComputeThreads or by the first CreateModel, which applies the default of 1 thread.
std::atomic<bool> threads_configured{false};

// LibTorch's matrix products go to the system's BLAS (libblas.so.3). scripts/setup.sh installs
// serial BLIS, which computes on the calling thread; OpenBLAS, where a machine has it instead,
// keeps a pool of threads of its own, as many as cores unless told: a node computing on one
// thread must hold it to one as well, or 100 nodes would run 200 BLAS threads on 2 cores.
void SetBlasThreads(int threads) {
  using SetThreads = void (*)(int);
  auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  if (set != nullptr) set(threads);
}

// One compute thread, unless SetComputeThreads chose first.
void ApplyDefaultComputeThreads() {
  if (threads_configured.exchange(true)) return;
  torch::set_num_threads(1);
  SetBlasThreads(1);
}

// glibc hands a freed block of a few MB back to the kernel (munmap, or madvise when the top of a
// thread's heap shrinks past the trim threshold), and the next batch's activations of the same
// size then fault their pages in again, zero-filled. That made a cnn's first convolution over 32
// images 7-10x slower per image than over 8 or 50, by which sizes happened to cross glibc's
// moving thresholds (meshlearn-bench BM_EmdExchangeVsRounds). Fixed thresholds of 32 MiB, the
// largest glibc takes for M_MMAP_THRESHOLD, keep such blocks in the heap for reuse; a process
// keeps at most 32 MiB free at the top of each heap. Under tcmalloc (what the programs that train
// link, training/CMakeLists.txt) mallopt does nothing; this holds for builds without it.
void KeepActivationBlocksMapped() {
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 32 << 20);
  });
}

int64_t Numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Appends {kind, input, output} to `layers` when recording (non-null); returns `output`.
torch::Tensor Recorded(LayerRecord::Kind kind, const torch::Tensor& input, torch::Tensor output,
                       std::vector<LayerRecord>* layers) {
  if (layers != nullptr) layers->push_back({kind, input, output});
  return output;
}

// A built-in network: forward plus the penultimate activations as embedding. forward_recording
// is the forward pass that also records its weighted layers (TorchModel::ForwardRecordingLayers).
class BuiltinNet : public torch::nn::Module {
 public:
  torch::Tensor forward(torch::Tensor x) { return forward_recording(x, nullptr); }
  virtual torch::Tensor forward_recording(torch::Tensor x, std::vector<LayerRecord>* layers) = 0;
  virtual torch::Tensor embed(torch::Tensor x) = 0;
  // TorchModel::ClassificationStep (`layers` null, the mean loss, the parameters' gradients
  // stored) and TorchModel::ClassificationLayerGradients (`layers` set, the summed loss); none by
  // default.
  virtual std::optional<torch::Tensor> classification_pass(const torch::Tensor& /*x*/,
                                                           const torch::Tensor& /*labels*/,
                                                           std::vector<LayerGradient>* /*layers*/) {
    return std::nullopt;
  }
  // TorchModel::SetPlainLibTorch.
  void set_plain(bool plain) { plain_ = plain; }

 protected:
  bool plain_ = false;
};

class LinearNet final : public BuiltinNet {
 public:
  LinearNet(int64_t in, int64_t out) : fc_(register_module("fc", torch::nn::Linear(in, out))) {}
  torch::Tensor forward_recording(torch::Tensor x, std::vector<LayerRecord>* layers) override {
    x = x.flatten(1);
    return Recorded(LayerRecord::Kind::kLinear, x, fc_(x), layers);
  }
  torch::Tensor embed(torch::Tensor x) override { return x.flatten(1); }

 private:
  torch::nn::Linear fc_;
};

class MlpNet final : public BuiltinNet {
 public:
  MlpNet(int64_t in, int64_t hidden, int64_t out)
      : fc1_(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2_(register_module("fc2", torch::nn::Linear(hidden, out))) {}
  torch::Tensor embed(torch::Tensor x) override { return Hidden(x, nullptr); }
  torch::Tensor forward_recording(torch::Tensor x, std::vector<LayerRecord>* layers) override {
    const torch::Tensor h = Hidden(x, layers);
    return Recorded(LayerRecord::Kind::kLinear, h, fc2_(h), layers);
  }

 private:
  torch::Tensor Hidden(torch::Tensor x, std::vector<LayerRecord>* layers) {
    x = x.flatten(1);
    return torch::relu(Recorded(LayerRecord::Kind::kLinear, x, fc1_(x), layers));
  }
  torch::nn::Linear fc1_, fc2_;
};

// Two convolutions (each ReLU + 2x2 max-pool) and two linear layers.
class ConvNet final : public BuiltinNet {
 public:
  ConvNet(const std::vector<int64_t>& chw, int64_t c1, int64_t c2, int64_t kernel, int64_t hidden,
          int64_t out)
      : chw_(chw),
        conv1_(register_module("conv1", torch::nn::Conv2d(chw[0], c1, kernel))),
        conv2_(register_module("conv2", torch::nn::Conv2d(c1, c2, kernel))),
        fc1_(register_module(
            "fc1", torch::nn::Linear(c2 * Side(chw[1], kernel) * Side(chw[2], kernel), hidden))),
        fc2_(register_module("fc2", torch::nn::Linear(hidden, out))) {}
  // Spatial size after conv(kernel) + pool(2) twice; < 1 means the input is too small.
  static int64_t Side(int64_t in, int64_t kernel) {
    return ((in - kernel + 1) / 2 - kernel + 1) / 2;
  }
  torch::Tensor embed(torch::Tensor x) override {
    return Hidden(x, nullptr, /*keep_winners=*/false).h;
  }
  torch::Tensor forward_recording(torch::Tensor x, std::vector<LayerRecord>* layers) override {
    const torch::Tensor h = Hidden(x, layers, /*keep_winners=*/false).h;
    return Recorded(LayerRecord::Kind::kLinear, h, fc2_(h), layers);
  }

  // The cnn's training pass written out, forward and backward, without autograd: the kernels
  // autograd's graph of forward_recording runs for the convolutions, the fused ReLU + max-pool,
  // the ReLU and the loss, and matrix products for the linear layers, so the loss and gradients
  // are the autograd path's up to float rounding (tests: FastStep in
  // tests/training/training_test.cc, PerSampleGradientsTest in dp_sgd_test.cc). Rationale:
  // autograd's engine, its graph and the fused ReLU + max-pool's autograd node took about a
  // sixth of a cnn step at batch 8 (docs/benchmarks.md "A node-round").
  std::optional<torch::Tensor> classification_pass(const torch::Tensor& batch,
                                                   const torch::Tensor& labels,
                                                   std::vector<LayerGradient>* layers) override {
    if (plain_) return std::nullopt;
    torch::NoGradGuard no_grad;
    const bool store = layers == nullptr;  // a training step: the parameters' gradients
    const int64_t reduction = store ? at::Reduction::Mean : at::Reduction::Sum;
    const HiddenPass pass = Hidden(batch, nullptr, /*keep_winners=*/true);
    const torch::Tensor& h = pass.h;
    const torch::Tensor log_probs = torch::log_softmax(fc2_(h), 1);
    const auto [loss, total_weight] =
        at::nll_loss_forward(log_probs, labels, {}, reduction, kNoIgnoredLabel);
    const torch::Tensor d_log_probs =
        at::nll_loss_backward(torch::ones({}, loss.options()), log_probs, labels, {}, reduction,
                              kNoIgnoredLabel, total_weight);
    const torch::Tensor d_logits =
        at::_log_softmax_backward_data(d_log_probs, log_probs, 1, log_probs.scalar_type());
    const torch::Tensor d_fc1 =
        at::threshold_backward(LinearBackward(fc2_, d_logits, h, store), h, 0);
    const torch::Tensor d_f = LinearBackward(fc1_, d_fc1, pass.f, store).view(pass.p2.sizes());
    const torch::Tensor d_a2 =
        PoolReluInputGradient(d_f, pass.winners2, pass.a2.sizes().vec(), IsChannelsLast(pass.p2));
    const torch::Tensor d_p1 = ConvBackward(conv2_, d_a2, pass.p1, /*input_gradient=*/true, store);
    const torch::Tensor d_a1 =
        PoolReluInputGradient(d_p1, pass.winners1, pass.a1.sizes().vec(), IsChannelsLast(pass.p1));
    if (store) {
      ConvBackward(conv1_, d_a1, pass.x, /*input_gradient=*/false, store);
    } else {
      using Kind = LayerRecord::Kind;
      layers->insert(layers->end(), {{Kind::kConv2d, pass.x, d_a1},
                                     {Kind::kConv2d, pass.p1, d_a2},
                                     {Kind::kLinear, pass.f, d_fc1},
                                     {Kind::kLinear, h, d_logits}});
    }
    return loss;
  }

 private:
  static constexpr auto kChannelsLast = torch::MemoryFormat::ChannelsLast;
  static constexpr int64_t kNoIgnoredLabel = -100;  // nll_loss's ignore_index: none

  // The forward pass up to the embedding, and what classification_pass's backward pass needs of
  // it.
  struct HiddenPass {
    torch::Tensor x;                   // the images [B, C, H, W] conv1 took
    torch::Tensor a1, p1;              // conv1's output, and its ReLU + max-pool (conv2's input)
    torch::Tensor a2, p2;              // conv2's output, and its ReLU + max-pool
    torch::Tensor f;                   // p2 flattened: fc1's input
    torch::Tensor h;                   // the ReLU of fc1's output: the embedding
    torch::Tensor winners1, winners2;  // the pools' winners (PoolReluValues), when kept
  };

  // The gradient of `input` from `grad`, the gradient of `layer`'s output for it; when `store`,
  // also stores the gradients of the layer's weight and bias.
  static torch::Tensor LinearBackward(torch::nn::Linear& layer, const torch::Tensor& grad,
                                      const torch::Tensor& input, bool store) {
    if (store) {
      layer->weight.mutable_grad() = grad.t().mm(input);
      layer->bias.mutable_grad() = grad.sum(0);
    }
    return grad.mm(layer->weight);
  }

  // The gradient of `input` when `input_gradient` (else undefined) from `grad`, the gradient of
  // `layer`'s output for it; when `store`, also stores the gradients of its weight and bias.
  static torch::Tensor ConvBackward(torch::nn::Conv2d& layer, const torch::Tensor& grad,
                                    const torch::Tensor& input, bool input_gradient, bool store) {
    auto [d_input, d_weight, d_bias] = at::convolution_backward(
        grad, input, layer->weight, layer->bias.sizes(), /*stride=*/{1, 1}, /*padding=*/{0, 0},
        /*dilation=*/{1, 1}, /*transposed=*/false, /*output_padding=*/{0, 0}, /*groups=*/1,
        {input_gradient, store, store});
    if (store) {
      layer->weight.mutable_grad() = d_weight;
      layer->bias.mutable_grad() = d_bias;
    }
    return d_input;
  }

  // `batch` as images [B, C, H, W] laid out channels-last, on the fast path: oneDNN then writes
  // the convolutions' outputs channels-last without reorders, and the fused ReLU + max-pool runs
  // along contiguous channels. A one-channel image keeps its memory and only gets channels-last
  // strides (LibTorch counts a one-channel NCHW tensor as channels-last already, so
  // contiguous(ChannelsLast) would not change its strides); that took 10% off a cnn step
  // (meshlearn-bench BM_CnnTrainVsLibTorch, issue 29).
  torch::Tensor ChannelsLastInput(const torch::Tensor& batch) const {
    const torch::Tensor x = batch.view({batch.size(0), chw_[0], chw_[1], chw_[2]});
    if (chw_[0] != 1) return x.contiguous(kChannelsLast);
    return x.contiguous().view({x.size(0), chw_[1], chw_[2], 1}).permute({0, 3, 1, 2});
  }

  // The one forward pass of the layers up to the embedding, for forward, embed and
  // classification_pass: conv1, ReLU + max-pool, conv2, ReLU + max-pool, fc1, ReLU. Records the
  // weighted layers in `layers` when set. With `keep_winners` (classification_pass, no autograd)
  // the pools keep their winners for the backward pass; otherwise they run with autograd when it
  // is enabled.
  HiddenPass Hidden(const torch::Tensor& batch, std::vector<LayerRecord>* layers,
                    bool keep_winners) {
    using Kind = LayerRecord::Kind;
    const auto pool = [&](const torch::Tensor& a, torch::Tensor& winners) {
      return keep_winners ? PoolReluValues(a, &winners) : PoolRelu(a, plain_);
    };
    HiddenPass pass;
    // DP-SGD's recorded layers go channels-last too: its per-sample gradients read any layout,
    // and its step took 4% less.
    pass.x =
        plain_ ? batch.view({batch.size(0), chw_[0], chw_[1], chw_[2]}) : ChannelsLastInput(batch);
    pass.a1 = Recorded(Kind::kConv2d, pass.x, conv1_(pass.x), layers);
    pass.p1 = pool(pass.a1, pass.winners1);
    // It is channels-last already, unless oneDNN chose otherwise.
    if (!plain_) pass.p1 = pass.p1.contiguous(kChannelsLast);
    pass.a2 = Recorded(Kind::kConv2d, pass.p1, conv2_(pass.p1), layers);
    pass.p2 = pool(pass.a2, pass.winners2);
    pass.f = pass.p2.flatten(1);
    pass.h = torch::relu(Recorded(Kind::kLinear, pass.f, fc1_(pass.f), layers));
    return pass;
  }

  std::vector<int64_t> chw_;
  torch::nn::Conv2d conv1_, conv2_;
  torch::nn::Linear fc1_, fc2_;
};

// PyTorch's default initialisation of Linear/Conv layers (kaiming_uniform with a = sqrt(5) for
// weights, which is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the same bound for biases), drawn
// from SeededRandom so that a seed gives the same weights in every process and thread.
void InitializeFromSeed(const std::vector<std::pair<std::string, torch::Tensor>>& named,
                        uint64_t seed) {
  torch::NoGradGuard no_grad;
  SeededRandom rng(seed);
  double bound = 1.0;
  for (const auto& [name, tensor] : named) {
    if (tensor.dim() >= 2) bound = 1.0 / std::sqrt(static_cast<double>(tensor[0].numel()));
    auto values = tensor.contiguous();
    float* p = values.data_ptr<float>();
    for (int64_t i = 0; i < values.numel(); ++i)
      p[i] = static_cast<float>(rng.Uniform(-bound, bound));
    tensor.copy_(values);
  }
}

class BuiltinModel final : public TorchModel {
 public:
  BuiltinModel(ModelSpec spec, std::shared_ptr<BuiltinNet> net, int64_t embedding_dim)
      : spec_(std::move(spec)), net_(std::move(net)), embedding_dim_(embedding_dim) {
    const auto named = NamedParameters();
    layout_ = LayoutOf(named);
    InitializeFromSeed(named, spec_.seed);
  }
  std::string_view Name() const override { return NameOf(ArchitectureNames(), spec_.architecture); }
  const ModelSpec& Spec() const override { return spec_; }
  const ParamLayout& Layout() const override { return layout_; }
  int64_t EmbeddingDim() const override { return embedding_dim_; }
  torch::Tensor Forward(const torch::Tensor& batch) override { return net_->forward(batch); }
  torch::Tensor EmbedBatch(const torch::Tensor& batch) override { return net_->embed(batch); }
  void SetTraining(bool training) override { net_->train(training); }
  std::vector<torch::Tensor> ParameterTensors() const override { return net_->parameters(); }
  bool RecordsLayers() const override { return true; }
  void SetPlainLibTorch(bool plain) override { net_->set_plain(plain); }
  std::optional<torch::Tensor> ClassificationStep(const torch::Tensor& batch,
                                                  const torch::Tensor& labels) override {
    return net_->classification_pass(batch, labels, nullptr);
  }
  std::optional<torch::Tensor> ClassificationLayerGradients(
      const torch::Tensor& batch, const torch::Tensor& labels,
      std::vector<LayerGradient>& layers) override {
    return net_->classification_pass(batch, labels, &layers);
  }
  torch::Tensor ForwardRecordingLayers(const torch::Tensor& batch,
                                       std::vector<LayerRecord>& layers) override {
    return net_->forward_recording(batch, &layers);
  }
  Result<std::unique_ptr<Model>> Clone() const override {
    Result<std::unique_ptr<Model>> copy = CreateModel(spec_);
    if (!copy.ok()) return copy.status();
    MESHLEARN_RETURN_IF_ERROR((*copy)->LoadParameters(Parameters()));
    return copy;
  }

 private:
  std::vector<std::pair<std::string, torch::Tensor>> NamedParameters() const {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (const auto& item : net_->named_parameters()) out.push_back({item.key(), item.value()});
    return out;
  }
  ModelSpec spec_;
  std::shared_ptr<BuiltinNet> net_;
  int64_t embedding_dim_;
  ParamLayout layout_;
};

Status CheckImageShape(const ModelSpec& spec, std::vector<int64_t>& chw, int64_t kernel) {
  chw = spec.input_shape;
  if (chw.size() == 1 && chw[0] == 784) chw = {1, 28, 28};
  if (chw.size() == 2) chw.insert(chw.begin(), 1);
  if (chw.size() != 3 || ConvNet::Side(chw[1], kernel) < 1 || ConvNet::Side(chw[2], kernel) < 1) {
    return Status::InvalidArgument(
        "model '" + std::string(NameOf(ArchitectureNames(), spec.architecture)) +
        "' needs images {channels, height, width} of at least " + std::to_string(3 * kernel + 1) +
        "x" + std::to_string(3 * kernel + 1) + " pixels");
  }
  return Status::Ok();
}

Result<std::unique_ptr<Model>> MakeLinear(const ModelSpec& spec) {
  auto net = std::make_shared<LinearNet>(Numel(spec.input_shape), spec.num_outputs);
  return std::unique_ptr<Model>(std::make_unique<BuiltinModel>(spec, std::move(net), 0));
}

Result<std::unique_ptr<Model>> MakeMlp(const ModelSpec& spec) {
  if (spec.hidden < 1) return Status::InvalidArgument("mlp hidden width must be >= 1");
  auto net = std::make_shared<MlpNet>(Numel(spec.input_shape), spec.hidden, spec.num_outputs);
  return std::unique_ptr<Model>(std::make_unique<BuiltinModel>(spec, std::move(net), spec.hidden));
}

Result<std::unique_ptr<Model>> MakeCnn(const ModelSpec& spec) {
  std::vector<int64_t> chw;
  MESHLEARN_RETURN_IF_ERROR(CheckImageShape(spec, chw, 3));
  auto net = std::make_shared<ConvNet>(chw, 16, 32, 3, 64, spec.num_outputs);
  return std::unique_ptr<Model>(std::make_unique<BuiltinModel>(spec, std::move(net), 64));
}

Result<std::unique_ptr<Model>> MakeCnnEmd(const ModelSpec& spec) {
  std::vector<int64_t> chw;
  MESHLEARN_RETURN_IF_ERROR(CheckImageShape(spec, chw, 5));
  auto net = std::make_shared<ConvNet>(chw, 64, 128, 5, 128, spec.num_outputs);
  return std::unique_ptr<Model>(std::make_unique<BuiltinModel>(spec, std::move(net), 128));
}

// The one table where architecture names meet constructors.
struct ArchitectureEntry {
  NamedValue<Architecture> named;
  Result<std::unique_ptr<Model>> (*make)(const ModelSpec&);
};
constexpr ArchitectureEntry kArchitectures[] = {
    {{"linear", Architecture::kLinear}, MakeLinear},
    {{"mlp", Architecture::kMlp}, MakeMlp},
    {{"cnn", Architecture::kCnn}, MakeCnn},
    {{"cnn_emd", Architecture::kCnnEmd}, MakeCnnEmd},
    {{"torchscript", Architecture::kTorchScript}, internal::MakeTorchScript},
};
constexpr auto kArchitectureNames = [] {
  std::array<NamedValue<Architecture>, std::size(kArchitectures)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kArchitectures[i].named;
  return names;
}();

// Built-in modules draw nothing from torch's global generator (InitializeFromSeed overwrites
// every parameter), but their constructors do; serialise construction so that concurrent
// nodes in one process do not race on it.
std::mutex construction_mutex;

}  // namespace

std::vector<float> Model::Parameters() const {
  std::vector<float> out(Layout().total_floats());
  (void)CopyParameters(out);
  return out;
}

Status Model::LoadParameters(const ParamLayout& layout, std::span<const float> flat) {
  MESHLEARN_RETURN_IF_ERROR(layout.Matches(Layout()));
  return LoadParameters(flat);
}

torch::Tensor TorchModel::ForwardRecordingLayers(const torch::Tensor&, std::vector<LayerRecord>&) {
  throw std::logic_error("model '" + std::string(Name()) + "' does not record its layers");
}

Status TorchModel::CopyParameters(std::span<float> out) const {
  if (out.size() != Layout().total_floats()) {
    return Status::LayoutMismatch("parameter buffer holds " + std::to_string(out.size()) +
                                  " floats, the model has " +
                                  std::to_string(Layout().total_floats()));
  }
  float* dst = out.data();
  for (const torch::Tensor& p : ParameterTensors()) {
    const torch::Tensor c = p.detach().contiguous();
    std::memcpy(dst, c.data_ptr<float>(), static_cast<size_t>(c.numel()) * sizeof(float));
    dst += c.numel();
  }
  return Status::Ok();
}

Status TorchModel::LoadParameters(std::span<const float> flat) {
  if (flat.size() != Layout().total_floats()) {
    return Status::LayoutMismatch("parameter vector holds " + std::to_string(flat.size()) +
                                  " floats, model '" + std::string(Name()) + "' has " +
                                  std::to_string(Layout().total_floats()));
  }
  for (size_t i = 0; i < flat.size(); ++i) {
    if (!std::isfinite(flat[i])) {
      return Status::NonFinite("parameter " + std::to_string(i) + " is NaN or Inf");
    }
  }
  torch::NoGradGuard no_grad;
  const float* src = flat.data();
  for (torch::Tensor& p : ParameterTensors()) {
    p.copy_(torch::from_blob(const_cast<float*>(src), p.sizes(), torch::kFloat32));
    src += p.numel();
  }
  return Status::Ok();
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

namespace internal {

ParamLayout LayoutOf(const std::vector<std::pair<std::string, torch::Tensor>>& named) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> specs;
  for (const auto& [name, tensor] : named) specs.push_back({name, tensor.sizes().vec()});
  return MakeContiguousLayout(specs);
}

}  // namespace internal

NameTable<Architecture> ArchitectureNames() { return kArchitectureNames; }

std::string LibTorchVersion() { return TORCH_VERSION; }

Status SetComputeThreads(int threads) {
  if (threads < 1) return Status::InvalidArgument("compute threads must be >= 1");
  threads_configured = true;
  torch::set_num_threads(threads);
  SetBlasThreads(threads);
  return Status::Ok();
}

Result<std::unique_ptr<Model>> CreateModel(const ModelSpec& spec) {
  ApplyDefaultComputeThreads();
  KeepActivationBlocksMapped();
  if (spec.num_outputs < 1) return Status::InvalidArgument("num_outputs must be >= 1");
  if (spec.input_shape.empty()) return Status::InvalidArgument("input_shape is empty");
  for (int64_t d : spec.input_shape) {
    if (d < 1) return Status::InvalidArgument("input_shape has a dimension < 1");
  }
  for (const ArchitectureEntry& e : kArchitectures) {
    if (spec.architecture != e.named.value) continue;
    std::lock_guard<std::mutex> lock(construction_mutex);
    try {
      return e.make(spec);
    } catch (const std::exception& ex) {
      return Status::Internal("building model '" + std::string(e.named.name) +
                              "' failed: " + FirstLine(ex.what()));
    }
  }
  return Status::InvalidArgument("unknown model architecture");
}

}  // namespace meshlearn::training
