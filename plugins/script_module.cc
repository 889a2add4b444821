#include "plugins/script_module.h"

#include <torch/csrc/jit/runtime/graph_executor.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "base/float_array.h"
#include "training/torchscript_file.h"

namespace meshlearn::plugins::internal {
namespace {

const c10::FunctionSchema& ForwardSchema(const torch::jit::Module& module) {
  return module.get_method("forward").function().getSchema();
}

std::string Joined(const std::vector<std::string>& words, const std::string& separator) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : separator) + w;
  return out;
}

// What a user needs from an exception thrown inside a module: the interpreter's message ends
// with the Python exception ("builtins.ValueError: ...") after a traceback whose last "File"
// line is where it was raised in the user's source; other exceptions say it on their first line.
std::string ErrorText(const std::string& what) {
  if (what.rfind("The following operation failed in the TorchScript interpreter", 0) != 0) {
    return training::FirstLine(what);
  }
  std::vector<std::string> lines;
  std::istringstream in(what);
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(' ') != std::string::npos) lines.push_back(line);
  }
  std::string where;
  for (const std::string& line : lines) {
    const size_t file = line.find("File \"");
    if (file != std::string::npos) where = line.substr(file);
  }
  std::string text = lines.empty() ? what : lines.back();
  if (!where.empty()) text += " (" + where + ")";
  return text;
}

}  // namespace

Result<std::unique_ptr<ScriptModule>> ScriptModule::Load(const std::string& path) {
  Result<torch::jit::Module> module = training::LoadTorchScriptFile(path);
  if (!module.ok()) return module.status();
  module->eval();
  return std::unique_ptr<ScriptModule>(new ScriptModule(path, std::move(*module)));
}

std::string ScriptModule::Signature() const {
  std::ostringstream text;
  text << ForwardSchema(module_);
  return text.str();
}

std::vector<std::string> ScriptModule::ArgumentTypes() const {
  std::vector<std::string> types;
  const std::vector<c10::Argument>& arguments = ForwardSchema(module_).arguments();
  for (size_t i = 1; i < arguments.size(); ++i)
    types.push_back(arguments[i].type()->annotation_str());
  return types;
}

Status ScriptModule::CheckSignature(const std::vector<std::string>& arguments,
                                    const std::vector<std::string>& returns,
                                    const std::string& expected) const {
  const c10::FunctionSchema& schema = ForwardSchema(module_);
  bool fits = ArgumentTypes() == arguments && schema.returns().size() == 1;
  if (fits) {
    const std::string type = schema.returns()[0].type()->annotation_str();
    fits = std::find(returns.begin(), returns.end(), type) != returns.end();
  }
  if (fits) return Status::Ok();
  return Status::InvalidArgument(path_ + ": forward must be " + expected + " (returning " +
                                 Joined(returns, " or ") + "); the module's is " + Signature());
}

Result<std::optional<bool>> ScriptModule::BoolAttribute(const std::string& name) const {
  if (!module_.hasattr(name)) return std::optional<bool>();
  const c10::IValue value = module_.attr(name);
  if (!value.isBool()) {
    return Status::InvalidArgument(path_ + ": attribute '" + name + "' must be a bool, it is " +
                                   Describe(value));
  }
  return std::optional<bool>(value.toBool());
}

Result<c10::IValue> ScriptModule::Forward(std::vector<c10::IValue> inputs) const {
  std::lock_guard<std::mutex> lock(calls_);
  c10::InferenceMode inference;
  torch::jit::GraphOptimizerEnabledGuard plain(false);
  try {
    return module_.forward(std::move(inputs));
  } catch (const std::exception& e) {
    return Status::Internal(path_ + ": forward threw: " + ErrorText(e.what()));
  }
}

torch::Tensor View(std::span<const float> values) {
  if (values.empty()) return torch::empty({0}, torch::kFloat32);
  // from_blob takes a mutable pointer; the module must not write through it (specification).
  return torch::from_blob(const_cast<float*>(values.data()), {static_cast<int64_t>(values.size())},
                          torch::kFloat32);
}

std::string Describe(const c10::IValue& value) {
  std::ostringstream text;
  if (value.isTensor()) {
    const torch::Tensor& t = value.toTensor();
    text << "a tensor of shape " << t.sizes() << " (" << t.scalar_type() << ")";
    if (t.numel() == 1) text << " holding " << t.item<double>();
  } else if (value.isDouble()) {
    text << "a float (" << value.toDouble() << ")";
  } else if (value.isInt()) {
    text << "an int (" << value.toInt() << ")";
  } else if (value.isBool()) {
    text << "a bool (" << (value.toBool() ? "True" : "False") << ")";
  } else {
    text << "a " << value.tagKind();
  }
  return text.str();
}

Status CopyModel(const c10::IValue& value, std::span<float> out, const std::string& what) {
  const bool is_vector = value.isTensor() && value.toTensor().dim() == 1 &&
                         (value.toTensor().scalar_type() == torch::kFloat32 ||
                          value.toTensor().scalar_type() == torch::kFloat64) &&
                         value.toTensor().numel() == static_cast<int64_t>(out.size());
  if (!is_vector) {
    return Status::LayoutMismatch(what + " must be a 1-D float32 tensor of " +
                                  std::to_string(out.size()) + " floats; it is " + Describe(value));
  }
  const torch::Tensor t = value.toTensor().to(torch::kFloat32).contiguous();
  const float* data = t.data_ptr<float>();
  if (!CheckFinite({data, out.size()}).ok()) {
    const size_t i =
        std::find_if_not(data, data + out.size(), [](float v) { return std::isfinite(v); }) - data;
    return Status::NonFinite(what + " holds NaN or Inf (at index " + std::to_string(i) + ")");
  }
  if (data != out.data()) std::memmove(out.data(), data, out.size() * sizeof(float));
  return Status::Ok();
}

Status Probe(const ScriptModule& module, size_t count, size_t floats, uint64_t seed,
             const std::string& what,
             const std::function<Status(const std::vector<std::vector<float>>&)>& call) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> inputs(count, std::vector<float>(floats));
  for (std::vector<float>& v : inputs) {
    for (float& x : v) x = normal(rng);
  }
  const std::vector<std::vector<float>> before = inputs;
  MESHLEARN_RETURN_IF_ERROR(call(inputs).WithContext(what));
  if (before == inputs) return Status::Ok();
  return Status::InvalidArgument(module.Path() +
                                 ": forward wrote into its inputs; they are the node's own "
                                 "buffers (use out-of-place operations, or .clone() first)");
}

}  // namespace meshlearn::plugins::internal
