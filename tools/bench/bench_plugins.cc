// The plug-ins' cost (docs/plugins.md "Cost", issue 57): the TorchScript examples against the
// built-ins they rewrite, alternating in the same run, over the inputs a node gives them.
// Targets: the cos_weights plug-in at most 1.5x the built-in metric over a cnn-sized model; the
// FedAvg plug-in at most 2x the built-in merge over the own model and 5 peers of that size. The
// examples are saved by a build with tests (plugins/examples/CMakeLists.txt); without them the
// benchmarks are skipped with that error.
#include <benchmark/benchmark.h>

#include <random>

#include "plugins/script_merge.h"
#include "plugins/script_metric.h"
#include "tools/bench/comparison.h"
#include "training/model.h"
#include "training/robust_merge.h"

namespace meshlearn::bench {
namespace {

// The floats of the cnn on 28x28 images and 10 classes (as the training benchmarks build it).
size_t CnnFloats() {
  training::ModelSpec spec;
  spec.architecture = training::Architecture::kCnn;
  spec.input_shape = {1, 28, 28};
  spec.num_outputs = 10;
  auto model = training::CreateModel(spec);
  return model.ok() ? (*model)->Layout().total_floats() : 0;
}

// `count` models of `floats` standard normal values (seed 57).
std::vector<std::vector<float>> Models(size_t count, size_t floats) {
  std::mt19937 gen(57);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> models(count, std::vector<float>(floats));
  for (auto& m : models) {
    for (float& v : m) v = normal(gen);
  }
  return models;
}

std::string Example(const std::string& name) {
  return std::string(MESHLEARN_PLUGIN_EXAMPLES) + "/" + name + ".pt";
}

void BM_ScriptCosWeightsVsBuiltIn(benchmark::State& state) {
  const size_t floats = CnnFloats();
  auto script = plugins::LoadScriptMetric(Example("cos_weights"), floats);
  if (!script.ok()) return state.SkipWithError(script.status().ToString().c_str());
  const auto builtin = similarity::MakeSimilarityMetric(similarity::MetricKind::kCosWeights);
  const auto models = Models(3, floats);
  const similarity::MetricInput input{models[0], models[1], models[2], {}, {}};
  bool all_ok = true;
  const PairTiming t = TimeAlternating(
      state,
      [&] {
        Result<double> score = (*script)->Score(input);
        all_ok &= score.ok();
        benchmark::DoNotOptimize(score);
      },
      [&] {
        Result<double> score = builtin->Score(input);
        benchmark::DoNotOptimize(score);
      });
  if (!all_ok) state.SkipWithError("the plug-in failed");
  std::vector<double> script_over_builtin;
  for (double r : t.pair_ratios) script_over_builtin.push_back(1.0 / r);
  state.counters["floats"] = static_cast<double>(floats);
  ReportRatio(state, "script_cos_weights_vs_builtin", SpreadOf(script_over_builtin), 1.5,
              Goal::kAtMost);
}
BENCHMARK(BM_ScriptCosWeightsVsBuiltIn)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.5);

void BM_ScriptFedAvgVsBuiltIn(benchmark::State& state) {
  const size_t floats = CnnFloats();
  auto script = plugins::LoadScriptMergeRule(Example("fedavg"), {}, floats);
  if (!script.ok()) return state.SkipWithError(script.status().ToString().c_str());
  const auto builtin = training::CreateMergeRule({}, {});
  const auto models = Models(6, floats);
  std::vector<training::MergeInput> peers;
  for (size_t k = 1; k < models.size(); ++k) peers.push_back({models[k], 100 + k, 0});
  const training::MergeInput own{models[0], 100, 0};
  std::vector<float> merged(floats);
  bool all_ok = true;
  const PairTiming t = TimeAlternating(
      state,
      [&] {
        all_ok &= (*script)->Merge(own, peers, merged).ok();
        benchmark::DoNotOptimize(merged.data());
      },
      [&] {
        Status s = builtin->Merge(own, peers, merged);
        benchmark::DoNotOptimize(s);
        benchmark::DoNotOptimize(merged.data());
      });
  if (!all_ok) state.SkipWithError("the plug-in failed");
  std::vector<double> script_over_builtin;
  for (double r : t.pair_ratios) script_over_builtin.push_back(1.0 / r);
  state.counters["floats"] = static_cast<double>(floats);
  ReportRatio(state, "script_fedavg_vs_builtin", SpreadOf(script_over_builtin), 2.0, Goal::kAtMost);
}
BENCHMARK(BM_ScriptFedAvgVsBuiltIn)->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);

}  // namespace
}  // namespace meshlearn::bench
