#include "plugins/script_attack.h"

#include "plugins/script_module.h"

namespace meshlearn::plugins {
namespace {

using internal::ScriptModule;
using internal::View;

constexpr uint64_t kAttackProbeSeed = 59;

class LoadedAttack final : public ScriptAttack {
 public:
  explicit LoadedAttack(std::unique_ptr<ScriptModule> module) : module_(std::move(module)) {}

  const std::string& Path() const override { return module_->Path(); }
  const ScriptModule& Module() const { return *module_; }

  Result<std::vector<float>> Served(
      std::span<const float> own, std::span<const std::span<const float>> fetched) const override {
    c10::List<torch::Tensor> models;
    for (std::span<const float> f : fetched) {
      if (f.size() != own.size()) {
        return Status::LayoutMismatch(Path() + ": a fetched model has " + std::to_string(f.size()) +
                                      " floats, the own " + std::to_string(own.size()));
      }
      models.push_back(View(f));
    }
    Result<c10::IValue> served = module_->Forward({View(own), std::move(models)});
    if (!served.ok()) return served.status();
    std::vector<float> out(own.size());
    MESHLEARN_RETURN_IF_ERROR(internal::CopyModel(*served, out, Path() + ": the served model"));
    return out;
  }

 private:
  std::unique_ptr<ScriptModule> module_;
};

// Serves from a random model with `fetched` random fetched models (internal::Probe).
Status ProbeAttack(const LoadedAttack& attack, size_t fetched, size_t floats) {
  return internal::Probe(attack.Module(), fetched + 1, floats, kAttackProbeSeed + fetched,
                         "the probe with " + std::to_string(fetched) + " fetched models of " +
                             std::to_string(floats) + " floats",
                         [&](const std::vector<std::vector<float>>& models) {
                           std::vector<std::span<const float>> others(models.begin() + 1,
                                                                      models.end());
                           return attack.Served(models[0], others).status();
                         });
}

}  // namespace

Result<std::unique_ptr<ScriptAttack>> LoadScriptAttack(const std::string& path, size_t floats) {
  auto module = ScriptModule::Load(path);
  if (!module.ok()) return module.status();
  MESHLEARN_RETURN_IF_ERROR(
      (*module)->CheckSignature({"Tensor", "List[Tensor]"}, {"Tensor"},
                                "forward(self, own: Tensor, fetched: List[Tensor]) -> Tensor"));
  auto attack = std::make_unique<LoadedAttack>(std::move(*module));
  for (size_t fetched : {size_t{0}, size_t{2}}) {
    MESHLEARN_RETURN_IF_ERROR(ProbeAttack(*attack, fetched, floats));
  }
  return std::unique_ptr<ScriptAttack>(std::move(attack));
}

}  // namespace meshlearn::plugins
