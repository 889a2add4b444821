#include "plugins/script_merge.h"

#include "plugins/script_module.h"

namespace meshlearn::plugins {
namespace {

using internal::ScriptModule;
using internal::View;

constexpr uint64_t kMergeProbeSeed = 58;

class ScriptMergeRule final : public training::MergeRule {
 public:
  ScriptMergeRule(std::unique_ptr<ScriptModule> module, const training::MergeWeights& weights)
      : MergeRule(weights), module_(std::move(module)) {}

  std::string_view Name() const override { return "torchscript"; }
  const ScriptModule& Module() const { return *module_; }

 protected:
  Status MergePeers(const training::MergeInput& own, std::span<const training::MergeInput> peers,
                    std::span<float> out, training::MergeReport& /*report*/) const override {
    Result<std::vector<double>> c = Weights().Coefficients(own, peers);
    if (!c.ok()) return c.status();
    c10::List<torch::Tensor> models;
    for (const training::MergeInput& p : peers) models.push_back(View(p.weights));
    torch::Tensor coefficients = torch::tensor(*c, torch::kFloat64);
    Result<c10::IValue> merged =
        module_->Forward({View(own.weights), std::move(models), std::move(coefficients)});
    if (!merged.ok()) return merged.status();
    return internal::CopyModel(*merged, out, module_->Path() + ": the merged model");
  }

 private:
  std::unique_ptr<ScriptModule> module_;
};

// Merges random models with `peers` peers of equal coefficients (internal::Probe).
Status ProbeMerge(const ScriptMergeRule& rule, size_t peers, size_t floats) {
  return internal::Probe(rule.Module(), peers + 1, floats, kMergeProbeSeed + peers,
                         "the probe with " + std::to_string(peers) +
                             (peers == 1 ? " peer" : " peers") + " of " + std::to_string(floats) +
                             " floats",
                         [&](const std::vector<std::vector<float>>& models) {
                           std::vector<training::MergeInput> inputs;
                           for (size_t k = 1; k <= peers; ++k)
                             inputs.push_back({models[k], 1, 1.0});
                           std::vector<float> out(floats);
                           return rule.Merge({models[0], 1, 1.0}, inputs, out);
                         });
}

}  // namespace

Result<std::unique_ptr<training::MergeRule>> LoadScriptMergeRule(
    const std::string& path, const training::MergeWeights& weights, size_t floats) {
  auto module = ScriptModule::Load(path);
  if (!module.ok()) return module.status();
  MESHLEARN_RETURN_IF_ERROR((*module)->CheckSignature(
      {"Tensor", "List[Tensor]", "Tensor"}, {"Tensor"},
      "forward(self, own: Tensor, peers: List[Tensor], coefficients: Tensor) -> Tensor"));
  auto rule = std::make_unique<ScriptMergeRule>(std::move(*module), weights);
  for (size_t peers : {size_t{1}, size_t{3}})
    MESHLEARN_RETURN_IF_ERROR(ProbeMerge(*rule, peers, floats));
  return std::unique_ptr<training::MergeRule>(std::move(rule));
}

}  // namespace meshlearn::plugins
