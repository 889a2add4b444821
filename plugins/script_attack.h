#pragma once
// A model attack written in Python, for robustness experiments: `[attack] kind = "torchscript"`,
// `attack_path` (docs/plugins.md; configs/README.md "[attack]"). The attack decorator
// (node/learner/poisoned_learner.h) serves what it returns, as it does a built-in attack's.
//
// Specification.
// - The module's forward is
//     forward(self, own: Tensor, fetched: List[Tensor]) -> Tensor
//   own is the attacker's honestly trained model w of this round, fetched the models it fetched
//   this round from the peers its own sampler drew (possibly none: round 0, or nobody answered),
//   all 1-D float32 tensors over the node's buffers (no copy; the module must not write into
//   them). It returns the model the attacker serves: a 1-D float32 (or float64) tensor of own's
//   size. What a built-in attack sees, no more: the attacker is an ordinary peer.
// - Refused at load, naming the file and what was expected: what ScriptModule::Load refuses
//   (plugins/script_module.h), a forward of another signature, and a probe that fails: forward is
//   called on a random model of `floats` floats with nothing fetched and with two fetched models,
//   and must return a finite model of that size without writing into its inputs.
// - At run time a result of another shape or type (kLayoutMismatch), one holding NaN or Inf
//   (kNonFinite) and an exception inside the module (kInternal) are errors naming the file and
//   saying what the module returned; the decorator then serves the honest model that round.
// - One instance may be called from several threads at once; the calls into the module take
//   turns (plugins/script_module.h).

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace meshlearn::plugins {

// A loaded attack module.
class ScriptAttack {
 public:
  virtual ~ScriptAttack() = default;
  // The file it was loaded from.
  virtual const std::string& Path() const = 0;
  // The model served instead of `own`, given the models `fetched` this round (see the
  // specification).
  virtual Result<std::vector<float>> Served(
      std::span<const float> own, std::span<const std::span<const float>> fetched) const = 0;
};

// Loads the attack at `path` and probes it on models of `floats` floats (see the specification).
Result<std::unique_ptr<ScriptAttack>> LoadScriptAttack(const std::string& path, size_t floats);

}  // namespace meshlearn::plugins
