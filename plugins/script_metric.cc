#include "plugins/script_metric.h"

#include <cmath>

#include "plugins/script_module.h"

namespace meshlearn::plugins {
namespace {

using internal::ScriptModule;
using internal::View;

// The seed of the probes' random weights (any fixed value: a probe must be the same every run).
constexpr uint64_t kMetricProbeSeed = 57;

class ScriptMetric final : public similarity::SimilarityMetric {
 public:
  ScriptMetric(std::unique_ptr<ScriptModule> module, similarity::MetricNeeds needs, bool symmetric)
      : module_(std::move(module)), needs_(needs), symmetric_(symmetric) {}

  std::string_view Name() const override { return "torchscript"; }
  similarity::MetricNeeds Needs() const override { return needs_; }
  bool Symmetric() const override { return symmetric_; }

  Result<double> Score(const similarity::MetricInput& input) const override {
    MESHLEARN_RETURN_IF_ERROR(CheckShapes(input));
    std::vector<c10::IValue> args;
    const std::span<const float> none;
    args.emplace_back(View(needs_.weights ? input.own : none));
    args.emplace_back(View(needs_.weights ? input.peer : none));
    args.emplace_back(View(needs_.initial_weights ? input.initial : none));
    if (needs_.own_data_loss) {
      Result<double> loss = OwnLoss(input);
      if (!loss.ok()) return loss.status();
      args.emplace_back(*loss);
    }
    Result<c10::IValue> out = module_->Forward(std::move(args));
    if (!out.ok()) return out.status();
    return ScoreOf(*out);
  }

 private:
  Status CheckShapes(const similarity::MetricInput& input) const {
    const std::string& path = module_->Path();
    if (input.own.empty() || input.peer.empty()) {
      return Status::InvalidArgument(path + ": empty weight vector");
    }
    if (input.own.size() != input.peer.size()) {
      return Status::LayoutMismatch(path + ": own weights have " +
                                    std::to_string(input.own.size()) + " values, peer weights " +
                                    std::to_string(input.peer.size()));
    }
    if (needs_.initial_weights && input.initial.size() != input.own.size()) {
      return Status::LayoutMismatch(path + ": initial weights have " +
                                    std::to_string(input.initial.size()) + " values, expected " +
                                    std::to_string(input.own.size()));
    }
    return Status::Ok();
  }

  // The node's mean training loss of the peer's weights (needs_own_loss).
  Result<double> OwnLoss(const similarity::MetricInput& input) const {
    const std::string& path = module_->Path();
    if (!input.own_data_loss) {
      return Status::InvalidArgument(path + ": no own_loss callback (training provides it)");
    }
    Result<double> loss = input.own_data_loss(input.peer);
    if (!loss.ok()) return loss.status().WithContext(path + ": own_loss");
    if (!std::isfinite(*loss)) return Status::NonFinite(path + ": own_loss is NaN or Inf");
    return loss;
  }

  Result<double> ScoreOf(const c10::IValue& out) const {
    const std::string& path = module_->Path();
    double score = 0;
    if (out.isDouble()) {
      score = out.toDouble();
    } else if (out.isTensor() && out.toTensor().numel() == 1 &&
               out.toTensor().is_floating_point()) {
      score = out.toTensor().item<double>();
    } else {
      return Status::InvalidArgument(path +
                                     ": forward must return a float (the score); it returned " +
                                     internal::Describe(out));
    }
    if (!std::isfinite(score)) {
      return Status::NonFinite(path + ": forward returned " + internal::Describe(out) +
                               ", which is not a finite score");
    }
    return score;
  }

  std::unique_ptr<ScriptModule> module_;
  similarity::MetricNeeds needs_;
  bool symmetric_;
};

// The needs the module's attributes state (see the specification).
Result<similarity::MetricNeeds> NeedsOf(const ScriptModule& module, bool& symmetric) {
  similarity::MetricNeeds needs;
  const std::pair<const char*, bool*> flags[] = {{"needs_own_loss", &needs.own_data_loss},
                                                 {"needs_initial", &needs.initial_weights},
                                                 {"needs_weights", &needs.weights},
                                                 {"symmetric", &symmetric}};
  symmetric = false;
  for (const auto& [name, flag] : flags) {
    Result<std::optional<bool>> value = module.BoolAttribute(name);
    if (!value.ok()) return value.status();
    if (*value) *flag = **value;
  }
  if (!needs.weights && !needs.own_data_loss) {
    return Status::InvalidArgument(module.Path() +
                                   ": needs_weights = False leaves the metric nothing to score "
                                   "with; it needs needs_own_loss = True then");
  }
  return needs;
}

}  // namespace

Result<std::unique_ptr<similarity::SimilarityMetric>> LoadScriptMetric(const std::string& path,
                                                                       size_t floats) {
  auto module = ScriptModule::Load(path);
  if (!module.ok()) return module.status();
  bool symmetric = false;
  Result<similarity::MetricNeeds> needs = NeedsOf(**module, symmetric);
  if (!needs.ok()) return needs.status();
  std::vector<std::string> arguments = {"Tensor", "Tensor", "Tensor"};
  std::string expected = "forward(self, own: Tensor, peer: Tensor, initial: Tensor";
  if (needs->own_data_loss) {
    arguments.push_back("float");
    expected += ", own_loss: float";
  }
  expected += ") -> float";
  if (!needs->own_data_loss) expected += " (with needs_own_loss = True, an own_loss: float last)";
  MESHLEARN_RETURN_IF_ERROR((*module)->CheckSignature(arguments, {"float", "Tensor"}, expected));
  const ScriptModule& loaded = **module;
  auto metric = std::make_unique<ScriptMetric>(std::move(*module), *needs, symmetric);
  MESHLEARN_RETURN_IF_ERROR(internal::Probe(
      loaded, 3, floats, kMetricProbeSeed,
      "the probe on random weights of " + std::to_string(floats) + " floats",
      [&](const std::vector<std::vector<float>>& w) {
        const similarity::LossOfWeights loss = [](std::span<const float>) -> Result<double> {
          return 0.5;
        };
        return metric->Score({w[0], w[1], w[2], loss, {}}).status();
      }));
  return std::unique_ptr<similarity::SimilarityMetric>(std::move(metric));
}

}  // namespace meshlearn::plugins
