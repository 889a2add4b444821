#pragma once
// DP-SGD (Abadi et al. 2016, "Deep Learning with Differential Privacy", Algorithm 1) for local
// training: record-level differential privacy of everything derived from a node's model.
// Torch-free interface; TrainLocal (training/trainer.h) runs it when TrainConfig::privacy is set.
//
// Rules:
// - Sampling: every step draws each of the N records independently with probability
//   q = min(1, batch_size / N) (Poisson sampling); an epoch is ceil(N / batch_size) steps.
//   Rationale: the accountant (training/rdp_accountant.h) bounds exactly this sampling; shuffled
//   fixed-size batches would need a different analysis.
// - Clipping: each sampled record's gradient g_i (over all parameters at once) is scaled by
//   min(1, C / (|g_i| + 1e-6)), C = max_grad_norm, so that its norm is below C (Algorithm 1
//   line 6; the 1e-6 keeps a zero gradient finite, as in Opacus).
// - Noise: N(0, σ²C²) is added to every coordinate of the sum of clipped gradients, σ =
//   noise_multiplier (line 7), and the result is divided by the expected batch size q·N, not by
//   the drawn one. Rationale: the drawn size depends on the data and would leak it.
// - Per-sample gradients of the built-in architectures come from each weighted layer's input a
//   and the gradient of the summed loss with respect to its output g: g_i a_iᵀ for a linear
//   layer, g_i times the unfolded input patches for a convolution (Goodfellow 2015, "Efficient
//   per-example gradient computations"; Opacus computes them the same way). TorchScript modules
//   have no such path and are refused.
// - Determinism: the samples and the noise of step t come from seeds derived from the training
//   seed and t only, so that a run is repeatable.

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "training/dataset.h"
#include "training/model.h"

namespace meshlearn::training {

// The DP-SGD parameters of local training.
struct DpSgdConfig {
  double noise_multiplier = 1.0;  // σ: the noise's standard deviation in units of max_grad_norm
  double max_grad_norm = 1.0;     // C: the largest norm of a record's gradient after clipping
};

// q = min(1, batch_size / records): the Poisson sampling rate (batch_size >= 1, records >= 1).
double PoissonSamplingRate(int64_t batch_size, size_t records);

// ceil(records / batch_size): DP-SGD steps per epoch (batch_size >= 1).
int64_t DpSgdStepsPerEpoch(int64_t batch_size, size_t records);

// The rows of a Poisson sample of `records` records at rate `rate`: each row in [0, records)
// independently with probability `rate`, in increasing order; the same `seed` gives the same rows.
std::vector<size_t> PoissonSample(size_t records, double rate, uint64_t seed);

// Ok when `model` can train with DP-SGD (a built-in architecture); kInvalidArgument naming the
// architecture otherwise.
Status CheckDpSgdSupported(const Model& model);

// The gradient of each sample's own loss (cross-entropy or squared error) with respect to the
// parameters, from the layers' activations: rows.size() x Layout().total_floats() floats,
// row-major. Errors: those of CheckDpSgdSupported, kInvalidArgument for a dataset the model cannot
// take or a row out of range, kInternal for a torch failure.
Result<std::vector<float>> PerSampleGradients(Model& model, const Dataset& data,
                                              std::span<const size_t> rows);

// The gradient of the summed loss of `rows` by an ordinary backward pass through the whole model
// (Layout().total_floats() floats): the reference per-sample gradients are checked against.
// Errors as for PerSampleGradients, except that any architecture is taken.
Result<std::vector<float>> SummedGradient(Model& model, const Dataset& data,
                                          std::span<const size_t> rows);

// What one DP-SGD step adds up before dividing by the expected batch size: the sum over `rows`
// of the clipped per-sample gradients plus Gaussian noise of standard deviation
// config.noise_multiplier · config.max_grad_norm per coordinate, drawn from `noise_seed`
// (Layout().total_floats() floats; rows may be empty, which leaves the noise alone). Errors as for
// PerSampleGradients, and kInvalidArgument for a noise_multiplier < 0 or a max_grad_norm <= 0.
Result<std::vector<float>> PrivateGradientSum(Model& model, const Dataset& data,
                                              std::span<const size_t> rows,
                                              const DpSgdConfig& config, uint64_t noise_seed);

}  // namespace meshlearn::training
