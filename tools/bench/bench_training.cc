// Benchmarks of training/ (issue 3): the FedAvg merge against memcpy bandwidth measured in the
// same run, local training steps per second of the cnn and mlp models, and a DP-SGD step of the
// cnn against a normal step (issue 32).

#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "tools/bench/comparison.h"
#include "training/aggregation.h"
#include "training/model.h"
#include "training/trainer.h"

namespace meshlearn::bench {
namespace {

// FedAvg of the own model and 5 peers, 1M floats each (DESIGN.md target: >= 0.5x memory
// bandwidth).
//
// Bytes counted: the merge reads 6 x 4 MB and writes 4 MB, 28 MB of memory traffic per merge.
// The baseline is memcpy of 14 MB, which reads 14 MB and writes 14 MB: the same 28 MB of
// traffic. ratio = (28 MB / merge time) / (28 MB / memcpy time) = memcpy time / merge time.
// Both work sets (28 MB) exceed the last-level cache, so both stream from DRAM.
void BM_FedAvgVsMemcpy(benchmark::State& state) {
  constexpr size_t kFloats = 1'000'000;
  constexpr size_t kModels = 6;
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<std::vector<float>> models(kModels, std::vector<float>(kFloats));
  for (auto& m : models) {
    for (float& v : m) v = uniform(gen);
  }
  std::vector<training::MergeInput> peers;
  for (size_t k = 1; k < kModels; ++k) peers.push_back({models[k], 100 + k, 0});
  const training::MergeInput own{models[0], 100, 0};
  std::vector<float> merged(kFloats);
  const size_t copy_bytes = (kModels + 1) * kFloats * sizeof(float) / 2;
  std::vector<char> copy_src(copy_bytes, 1), copy_dst(copy_bytes, 0);
  const training::FedAvgRule rule;

  const PairTiming t = TimeAlternating(
      state,
      [&] {
        Status s = rule.Merge(own, peers, merged);
        benchmark::DoNotOptimize(s);
        benchmark::DoNotOptimize(merged.data());
      },
      [&] {
        std::memcpy(copy_dst.data(), copy_src.data(), copy_bytes);
        benchmark::DoNotOptimize(copy_dst.data());
      });
  const double traffic = static_cast<double>((kModels + 1) * kFloats * sizeof(float));
  state.counters["merge_GBps"] = traffic / t.subject_seconds * state.iterations() / 1e9;
  state.counters["memcpy_GBps"] = traffic / t.baseline_seconds * state.iterations() / 1e9;
  ReportRatio(state, "fedavg_vs_memcpy", t.baseline_seconds / t.subject_seconds, 0.5,
              Goal::kAtLeast);
}
BENCHMARK(BM_FedAvgVsMemcpy)->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);

// 800 random 28x28 images of 10 classes.
training::Dataset RandomImages() {
  training::Dataset data;
  data.sample_shape = {1, 28, 28};
  data.num_classes = 10;
  std::mt19937 gen(2);
  std::uniform_real_distribution<float> pixel(0, 1);
  for (int i = 0; i < 800; ++i) {
    for (int p = 0; p < 784; ++p) data.features.push_back(pixel(gen));
    data.labels.push_back(i % 10);
  }
  return data;
}

// A 28x28, 10-class model of `architecture` on one thread; null (and `state` skipped) on error.
std::unique_ptr<training::Model> BenchModel(benchmark::State& state,
                                            training::Architecture architecture) {
  if (!training::SetComputeThreads(1).ok()) state.SkipWithError("cannot set threads");
  training::ModelSpec spec;
  spec.architecture = architecture;
  spec.input_shape = {1, 28, 28};
  spec.num_outputs = 10;
  spec.seed = 1;
  auto model = training::CreateModel(spec);
  if (!model.ok()) {
    state.SkipWithError(model.status().ToString().c_str());
    return nullptr;
  }
  return std::move(*model);
}

// Training steps per second at batch 8 on one thread, over 800 random 28x28 images (one epoch
// = 100 optimiser steps, Adam).
void TrainingSteps(benchmark::State& state, training::Architecture architecture) {
  auto model = BenchModel(state, architecture);
  if (!model) return;
  const training::Dataset data = RandomImages();
  training::TrainConfig config;
  config.batch_size = 8;
  int64_t steps = 0;
  uint64_t seed = 0;
  for (auto _ : state) {
    auto stats = training::TrainLocal(*model, data, config, ++seed);
    if (!stats.ok()) {
      state.SkipWithError(stats.status().ToString().c_str());
      return;
    }
    steps += stats->steps;
  }
  state.counters["steps_per_s"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate);
}
void BM_TrainStepsCnn(benchmark::State& state) {
  TrainingSteps(state, training::Architecture::kCnn);
}
void BM_TrainStepsMlp(benchmark::State& state) {
  TrainingSteps(state, training::Architecture::kMlp);
}
BENCHMARK(BM_TrainStepsCnn)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TrainStepsMlp)->Unit(benchmark::kMillisecond);

// An epoch of DP-SGD of the cnn (100 steps on Poisson samples of expected size 8: per-sample
// gradients, clipping, noise) against an epoch of normal training (100 steps at batch 8) over
// the same 800 images, alternating. ratio = DP-SGD time / normal time, the cost of a DP step in
// normal steps (issue 32's target: <= 3).
void BM_DpSgdStepVsStepCnn(benchmark::State& state) {
  auto model = BenchModel(state, training::Architecture::kCnn);
  if (!model) return;
  const training::Dataset data = RandomImages();
  training::TrainConfig normal;
  normal.batch_size = 8;
  training::TrainConfig dp = normal;
  dp.privacy = training::DpSgdConfig{.noise_multiplier = 1.0, .max_grad_norm = 1.0};
  uint64_t seed = 0;
  auto epoch = [&](const training::TrainConfig& config) {
    auto stats = training::TrainLocal(*model, data, config, ++seed);
    if (!stats.ok() || stats->steps != 100) state.SkipWithError("training failed");
  };
  const PairTiming t = TimeAlternating(
      state, [&] { epoch(dp); }, [&] { epoch(normal); });
  std::vector<double> dp_over_normal;
  for (double r : t.pair_ratios) dp_over_normal.push_back(1.0 / r);
  RatioSpread spread = SpreadOf(dp_over_normal);
  ReportRatio(state, "dp_sgd_step_vs_step_cnn", spread, 3.0, Goal::kAtMost);
}
BENCHMARK(BM_DpSgdStepVsStepCnn)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(6);

}  // namespace
}  // namespace meshlearn::bench
