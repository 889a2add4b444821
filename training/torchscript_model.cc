// The torchscript architecture: a user's TorchScript module behind the Model interface.

#include <torch/script.h>
#include <torch/torch.h>

#include <filesystem>

#include "training/torch_model.h"
#include "training/torchscript_file.h"

namespace meshlearn::training::internal {
namespace {

class ScriptModel final : public TorchModel {
 public:
  ScriptModel(ModelSpec spec, torch::jit::Module module, int64_t embedding_dim)
      : spec_(std::move(spec)), module_(std::move(module)), embedding_dim_(embedding_dim) {
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
      named.push_back({item.name, item.value});
    }
    layout_ = LayoutOf(named);
  }
  std::string_view Name() const override { return NameOf(ArchitectureNames(), spec_.architecture); }
  const ModelSpec& Spec() const override { return spec_; }
  const ParamLayout& Layout() const override { return layout_; }
  int64_t EmbeddingDim() const override { return embedding_dim_; }
  torch::Tensor Forward(const torch::Tensor& batch) override {
    torch::Tensor out = module_.forward({batch}).toTensor();
    return out.dim() == 1 ? out.unsqueeze(1) : out;
  }
  torch::Tensor EmbedBatch(const torch::Tensor& batch) override {
    return module_.get_method("embed")({batch}).toTensor();
  }
  void SetTraining(bool training) override { module_.train(training); }
  std::vector<torch::Tensor> ParameterTensors() const override {
    std::vector<torch::Tensor> out;
    for (const auto& p : module_.parameters(/*recurse=*/true)) out.push_back(p);
    return out;
  }
  Result<std::unique_ptr<Model>> Clone() const override {
    return std::unique_ptr<Model>(
        std::make_unique<ScriptModel>(spec_, module_.clone(), embedding_dim_));
  }

 private:
  ModelSpec spec_;
  torch::jit::Module module_;
  int64_t embedding_dim_;
  ParamLayout layout_;
};

std::string ShapeText(at::IntArrayRef sizes) {
  std::string s;
  for (int64_t d : sizes) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

}  // namespace

}  // namespace meshlearn::training::internal

namespace meshlearn::training {

Result<torch::jit::Module> LoadTorchScriptFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(path + ": no such TorchScript file");
  }
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, torch::kCPU);
  } catch (const std::exception& e) {
    return Status::Malformed(path +
                             ": not a TorchScript archive (save one with "
                             "torch.jit.script(model).save(path)): " +
                             FirstLine(e.what()));
  }
  if (!module.find_method("forward")) {
    return Status::InvalidArgument(path + ": the module has no forward method");
  }
  return module;
}

}  // namespace meshlearn::training

namespace meshlearn::training::internal {

Result<std::unique_ptr<Model>> MakeTorchScript(const ModelSpec& spec) {
  const std::string& path = spec.torchscript_path;
  if (path.empty()) return Status::InvalidArgument("model 'torchscript' needs torchscript_path");
  Result<torch::jit::Module> loaded = LoadTorchScriptFile(path);
  if (!loaded.ok()) return loaded.status();
  torch::jit::Module module = std::move(*loaded);
  const std::string where = path + ": ";
  int64_t params = 0;
  for (const auto& p : module.parameters(/*recurse=*/true)) {
    if (p.scalar_type() != torch::kFloat32) {
      return Status::InvalidArgument(where + "parameters must be float32, found " +
                                     std::string(c10::toString(p.scalar_type())));
    }
    ++params;
  }
  if (params == 0) return Status::InvalidArgument(where + "the module has no trainable parameters");
  // Probe the module with a zero batch of two samples to check its output shapes.
  std::vector<int64_t> batch_shape = {2};
  batch_shape.insert(batch_shape.end(), spec.input_shape.begin(), spec.input_shape.end());
  const std::string input_text = ShapeText(batch_shape);
  torch::NoGradGuard no_grad;
  module.eval();
  const torch::Tensor probe = torch::zeros(batch_shape);
  try {
    torch::jit::IValue out = module.forward({probe});
    if (!out.isTensor()) {
      return Status::InvalidArgument(where + "forward must return one tensor");
    }
    torch::Tensor t = out.toTensor();
    const bool regression_vector = spec.num_outputs == 1 && t.dim() == 1 && t.size(0) == 2;
    if (!regression_vector && (t.dim() != 2 || t.size(0) != 2 || t.size(1) != spec.num_outputs)) {
      return Status::InvalidArgument(where + "forward maps input " + input_text + " to " +
                                     ShapeText(t.sizes()) + ", but the task needs [2, " +
                                     std::to_string(spec.num_outputs) + "]");
    }
  } catch (const std::exception& e) {
    return Status::InvalidArgument(where + "forward fails on an input of shape " + input_text +
                                   ": " + FirstLine(e.what()));
  }
  int64_t embedding_dim = 0;
  if (module.find_method("embed")) {
    try {
      torch::jit::IValue out = module.get_method("embed")({probe});
      torch::Tensor t = out.isTensor() ? out.toTensor() : torch::Tensor();
      if (!t.defined() || t.dim() != 2 || t.size(0) != 2 || t.size(1) < 1) {
        return Status::InvalidArgument(where + "embed must map input " + input_text +
                                       " to one tensor [2, d]");
      }
      embedding_dim = t.size(1);
    } catch (const std::exception& e) {
      return Status::InvalidArgument(where + "embed fails on an input of shape " + input_text +
                                     ": " + FirstLine(e.what()));
    }
  }
  module.train();
  return std::unique_ptr<Model>(
      std::make_unique<ScriptModel>(spec, std::move(module), embedding_dim));
}

}  // namespace meshlearn::training::internal
