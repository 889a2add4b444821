#pragma once
// Internal to meshlearn_plugins (it includes torch): a user's TorchScript plug-in file as loaded,
// and how every plug-in point calls it (docs/plugins.md).
//
// Specification.
// - Load refuses, naming the file: a path that is not a regular file (kNotFound), a file that is
//   not a TorchScript archive (kMalformed), a module without a forward method
//   (kInvalidArgument).
// - CheckSignature compares forward's argument and return types (self left out) with a plug-in
//   point's; a mismatch is kInvalidArgument, naming the file and showing both signatures.
// - Forward calls the module one call at a time per loaded module, under InferenceMode and with
//   the graph executor's optimisation off; an exception thrown inside the module becomes
//   kInternal, naming the file, the exception (for a Python raise, its last line:
//   "builtins.ValueError: ...") and where in the user's source it was raised.
//   Rationale: the lock, because a module may keep state in its attributes and one plug-in
//   instance may be called from several threads (simulated mode's worker pool); InferenceMode,
//   because nothing here is differentiated; no optimisation, because the profiling executor
//   rewrites a graph after its first calls, which would make a plug-in's first rounds slower
//   than its later ones and is not needed for the few whole-vector operations a plug-in runs.
// - View wraps a span as a 1-D float32 tensor without a copy (torch::from_blob). A module must
//   not write into its inputs (they are the node's own buffers); the probes at load check it.

#include <torch/script.h>

#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace meshlearn::plugins::internal {

// One plug-in file, loaded.
class ScriptModule {
 public:
  // Loads the TorchScript module at `path` (see the specification).
  static Result<std::unique_ptr<ScriptModule>> Load(const std::string& path);

  // The file it was loaded from.
  const std::string& Path() const { return path_; }
  // forward's signature as TorchScript writes it, e.g. "forward(Tensor own, Tensor peer) -> float".
  std::string Signature() const;
  // The TorchScript types of forward's arguments ("Tensor", "List[Tensor]", "float"), self left
  // out.
  std::vector<std::string> ArgumentTypes() const;
  // kInvalidArgument unless forward's arguments have the types `arguments` and it returns one of
  // `returns`; `expected` is the signature shown in the error (e.g. "forward(self, own: Tensor,
  // peer: Tensor) -> float").
  Status CheckSignature(const std::vector<std::string>& arguments,
                        const std::vector<std::string>& returns, const std::string& expected) const;
  // The module attribute `name` when it is a bool; nullopt when the module has no such attribute;
  // kInvalidArgument, naming the file, when it has one of another type.
  Result<std::optional<bool>> BoolAttribute(const std::string& name) const;
  // forward(inputs) (see the specification).
  Result<c10::IValue> Forward(std::vector<c10::IValue> inputs) const;

 private:
  ScriptModule(std::string path, torch::jit::Module module)
      : path_(std::move(path)), module_(std::move(module)) {}

  std::string path_;
  mutable torch::jit::Module module_;
  mutable std::mutex calls_;
};

// `values` as a 1-D float32 tensor over the same memory (see the specification).
torch::Tensor View(std::span<const float> values);

// What a module returned, for an error a user can act on: "a float (0.25)", "a tensor of shape
// [3, 4] (Double)", "a tuple", ...
std::string Describe(const c10::IValue& value);

// Copies `value`, which must be a 1-D float32 or float64 tensor of out.size() floats, into `out`:
// kLayoutMismatch when it is something else (saying what it is), kNonFinite when it holds NaN or
// Inf. `what` names the result in the errors ("FILE: the merged model").
Status CopyModel(const c10::IValue& value, std::span<float> out, const std::string& what);

// A probe at load: calls `call` once on `count` vectors of `floats` standard normal values from
// `seed`. Its error, with `what` ("the probe with 1 peer of 64 floats") as context, or
// kInvalidArgument, naming the file, when it wrote into the vectors.
Status Probe(const ScriptModule& module, size_t count, size_t floats, uint64_t seed,
             const std::string& what,
             const std::function<Status(const std::vector<std::vector<float>>&)>& call);

}  // namespace meshlearn::plugins::internal
