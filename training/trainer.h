#pragma once
// Local training, evaluation, embeddings and the loss-of-weights callback over a Model and a
// Dataset. Torch stays inside trainer.cc.
//
// Training is deterministic for a given model, dataset, config and seed when one compute thread
// is used: the batch order comes from SeededRandom, not from torch's generator.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"
#include "training/dataset.h"
#include "training/dp_sgd.h"
#include "training/model.h"

namespace meshlearn::training {

// The optimisers.
enum class OptimizerKind {
  kAdam,  // "adam"
  kSgd,   // "sgd" (with momentum and weight decay)
};

// The config name of every OptimizerKind ([training] optimizer), in documentation order.
NameTable<OptimizerKind> OptimizerKindNames();

// The optimiser. A fresh optimiser (empty Adam moments, zero momentum) is built for every
// TrainLocal call, as in the authors' code: after a merge the old moments describe other weights.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdam;
  double learning_rate = 1e-3;
  double momentum = 0;      // sgd only
  double weight_decay = 0;  // L2 penalty, both optimisers
};

// One call of local training.
struct TrainConfig {
  OptimizerConfig optimizer;
  int64_t batch_size = 8;
  int epochs = 1;
  // Set: DP-SGD (training/dp_sgd.h) instead of shuffled mini-batches: each epoch is
  // DpSgdStepsPerEpoch(batch_size, N) steps, each on a Poisson sample of the records at rate
  // PoissonSamplingRate(batch_size, N), with clipped per-sample gradients and Gaussian noise.
  std::optional<DpSgdConfig> privacy;
  // Tests and meshlearn-bench only: train with the textbook LibTorch loop (torch::optim's
  // optimiser, a batch gathered per step, LibTorch's relu and max-pool) instead of the fast path
  // (one fused pass of the optimiser over each parameter, batches gathered in chunks, fused
  // ReLU + max-pool). The two compute the same step up to float rounding (training_models_test
  // checks 1e-5 relative). DP-SGD always takes torch::optim's optimiser.
  bool plain_libtorch = false;
};

// What a TrainLocal call did.
struct TrainStats {
  double mean_loss = 0;  // mean of the per-batch losses of the last epoch
  int64_t steps = 0;     // optimiser steps over all epochs (with privacy: DP-SGD steps)
};

// Loss and metric of a model on a dataset.
struct Evaluation {
  double loss = 0;      // mean cross-entropy (classification) or mean squared error (regression)
  double accuracy = 0;  // fraction correct in [0, 1]; NaN for regression
  size_t samples = 0;
};

// Trains `model` for config.epochs passes over `train` in shuffled mini-batches (the last batch
// may be smaller), with the loss of the dataset's task. `seed` decides the batch order (with
// config.privacy: the Poisson samples and the noise). With config.privacy, a model without
// per-sample gradients (torchscript) is kInvalidArgument.
// Errors: kInvalidArgument for an empty or invalid dataset, a dataset the model cannot take
// (sample size or classes), an unknown optimiser or a non-positive batch size / learning rate;
// kNonFinite when the loss becomes NaN/Inf (the model's weights are then unspecified).
Result<TrainStats> TrainLocal(Model& model, const Dataset& train, const TrainConfig& config,
                              uint64_t seed);

// Samples per forward pass when evaluating or embedding. Small enough that 100 in-process nodes
// evaluating at once stay within a few MB of activations each, and that a cnn batch's activations
// stay in cache: embedding 100 images took 9.4 ms in batches of 128, 6.0 ms in batches of 50 and
// 5.9 ms in batches of 32 (meshlearn-bench BM_EmdExchangeVsRounds, one thread).
inline constexpr int64_t kEvaluationBatch = 32;

// How an evaluation averages the loss over a dataset ([training] loss_mean).
enum class LossMean {
  kSamples,  // "samples": the mean over the samples
  kBatches,  // "batches": the mean of the batches' mean losses, over batches taken in the
             // dataset's order, the last one shorter, so that its samples weigh more: file 004's
             // code (utils/classes.py:371-398, DataLoader batches, drop_last=False)
};

// The config name of every LossMean, in documentation order.
NameTable<LossMean> LossMeanNames();

// How Evaluate runs: `batch` samples a forward pass and, under LossMean::kBatches, a batch whose
// mean loss is averaged.
struct LossAveraging {
  LossMean mean = LossMean::kSamples;
  int64_t batch = kEvaluationBatch;
};

// Evaluates `model` on `data` without changing it; the accuracy is over the samples whatever
// `averaging` says. Errors as for TrainLocal.
Result<Evaluation> Evaluate(Model& model, const Dataset& data, LossAveraging averaging = {});

// The embeddings of samples `rows` of `data`: rows.size() x model.EmbeddingDim() floats,
// row-major. kInvalidArgument when the model has no embedding or a row is out of range.
Result<std::vector<float>> Embed(Model& model, const Dataset& data, std::span<const size_t> rows);

// "Mean loss on my data of these flat weights": the inv_loss metric's callback.
using WeightsLossFn = std::function<Result<double>(std::span<const float> weights)>;

// Returns a callback that loads the given weights into a private clone of `prototype` and
// returns their loss on `data` (which must outlive the callback), averaged as `averaging` says.
// The callback errors with kLayoutMismatch on a wrong length and kNonFinite on NaN/Inf weights.
// It is not thread-safe.
Result<WeightsLossFn> MakeWeightsLossFn(const Model& prototype, const Dataset& data,
                                        LossAveraging averaging = {});

}  // namespace meshlearn::training
