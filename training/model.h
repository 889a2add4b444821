#pragma once
// Models by name, seen by the rest of meshlearn through a torch-free interface: a flat float32
// parameter vector with its ParamLayout, an optional embedding, and deterministic creation.
//
// Architectures (DESIGN.md "Data, shifts and scenarios"):
//   linear       y = W x + b over the flattened sample
//   mlp          flatten -> fc1 (hidden, default 200) -> ReLU -> fc2 (outputs); embedding: the
//                200 ReLU activations
//   cnn          file 004's "two convolutional layers followed by two linear layers"; the layer
//                sizes are those of CNNFashion in the DAC authors' released code (Listo Zec et
//                al. 2022): conv 16@3x3 -> ReLU -> maxpool2 -> conv 32@3x3 -> ReLU -> maxpool2 ->
//                fc 64 -> ReLU -> fc outputs (56,714 parameters for 28x28, 10 classes);
//                embedding: the 64 ReLU activations
//   cnn_emd      EMD-CFL's CNN (file 000, appendix D.2: conv64-conv128-fc128-fc10; the paper
//                gives no kernel size, 5x5 is our choice): conv 64@5x5 -> ReLU -> maxpool2 ->
//                conv 128@5x5 -> ReLU -> maxpool2 -> fc 128 -> ReLU -> fc outputs; embedding:
//                the 128 ReLU activations
//   torchscript  a user's module saved with torch.jit.script(m).save(path); forward(x) maps a
//                batch [B, *input_shape] to [B, outputs]; an optional method embed(x) maps it
//                to [B, d]. Its initial weights are the file's.
//
// A Model is not thread-safe: use one from one thread at a time (clone it for another thread).

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/named_value.h"
#include "base/param_layout.h"
#include "base/status.h"

namespace meshlearn::training {

// The model architectures (DESIGN.md "Models by name").
enum class Architecture {
  kLinear,       // "linear": linear regression/classification with bias
  kMlp,          // "mlp": 784-200-C
  kCnn,          // "cnn": 2 conv + 2 linear
  kCnnEmd,       // "cnn_emd": conv64-conv128-fc128-fc10, 128-d embeddings (EMD-CFL)
  kTorchScript,  // "torchscript": a user's module exported from Python
};

// The config name of every Architecture ([model] architecture), in documentation order.
NameTable<Architecture> ArchitectureNames();

// What to build.
struct ModelSpec {
  Architecture architecture = Architecture::kMlp;
  std::vector<int64_t> input_shape;  // one sample, e.g. {1, 28, 28}; cnn/cnn_emd need 3 dims
                                     // (a flat 784 is read as {1, 28, 28})
  int64_t num_outputs = 0;           // classes, or 1 for regression
  uint64_t seed = 0;                 // built-ins: same seed -> same initial weights everywhere
  int64_t hidden = 200;              // mlp hidden width
  std::string torchscript_path;      // torchscript only: the .pt file
};

// A trainable model with a flat parameter view.
class Model {
 public:
  virtual ~Model() = default;
  // The architecture name ("cnn", "torchscript", ...).
  virtual std::string_view Name() const = 0;
  // The spec the model was built from.
  virtual const ModelSpec& Spec() const = 0;
  // The layout of the flat parameter vector: trainable parameters in registration order.
  virtual const ParamLayout& Layout() const = 0;
  // Copies the parameters into `out`, which must hold exactly Layout().total_floats() floats
  // (kLayoutMismatch otherwise).
  virtual Status CopyParameters(std::span<float> out) const = 0;
  // Replaces the parameters with `flat` (Layout().total_floats() floats; kLayoutMismatch
  // otherwise, kNonFinite on NaN/Inf, leaving the model unchanged on error).
  virtual Status LoadParameters(std::span<const float> flat) = 0;
  // Dimension of Embed() output; 0 when the model has no embedding.
  virtual int64_t EmbeddingDim() const = 0;
  // A deep copy with the same parameters (and, for torchscript, the same module).
  virtual Result<std::unique_ptr<Model>> Clone() const = 0;

  // The parameters as a new vector.
  std::vector<float> Parameters() const;
  // Like LoadParameters(flat), but first checks that `layout` (e.g. from a peer's message)
  // matches Layout() exactly; kLayoutMismatch explaining the first difference otherwise.
  Status LoadParameters(const ParamLayout& layout, std::span<const float> flat);
};

// Builds the model `spec` describes. Errors (kInvalidArgument unless noted): a shape the
// architecture cannot take, num_outputs < 1; for torchscript: kNotFound (no file), kMalformed (not
// a TorchScript archive), no forward method, forward failing on a zero batch or returning a shape
// other than [B, num_outputs], embed returning something other than [B, d], no float32 parameters.
// The first call in a process also fixes glibc's malloc thresholds at 32 MiB (models.cc
// KeepActivationBlocksMapped), so that batches reuse their activations' memory.
Result<std::unique_ptr<Model>> CreateModel(const ModelSpec& spec);

// Sets the number of intra-op compute threads of this process (torch::set_num_threads, and
// OpenBLAS's own threads when that is the BLAS). Until called, the first CreateModel() sets 1.
// kInvalidArgument when threads < 1.
Status SetComputeThreads(int threads);

// The version of LibTorch this build was compiled against ("1.13.0"), for run manifests.
std::string LibTorchVersion();

}  // namespace meshlearn::training
