// Protocol benchmarks: encode + decode of a 1M-parameter Model message against memcpy, and the
// compressed blob codecs (protocol/compression.h) against memcpy.
//
// Target (DESIGN.md): codec throughput >= 0.5x memcpy bandwidth over the same bytes. The subject
// is Encode() of the message followed by Decode() of its frames with full validation (envelope,
// body, layout, blob length, finiteness scan of all 1M floats). The codec shares the weight
// buffer instead of copying it (the transport hands the frame to ZeroMQ), so its cost is the
// finiteness scan plus the small msgpack frames. The baseline copies the same 4 MB once.
#include <benchmark/benchmark.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "protocol/codec.h"
#include "protocol/compression.h"
#include "tools/bench/comparison.h"

namespace meshlearn::bench {
namespace {

Message OneMillionParameterModel() {
  std::vector<std::pair<std::string, std::vector<int64_t>>> tensors;
  for (int i = 0; i < 10; ++i) {
    tensors.push_back({"layer" + std::to_string(i) + ".weight", {1000, 100}});
  }
  Model model;
  model.round = 7;
  model.train_size = 500;
  model.layout = MakeContiguousLayout(tensors);
  std::vector<float> weights(model.layout.total_floats());
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i % 1000) * 1e-3f;
  model.weights = FloatArray::Own(std::move(weights));
  for (int i = 0; i < 30; ++i) model.score_row.push_back({"node-" + std::to_string(i), 0.5});
  return MakeMessage("node-0", 1, 7, std::move(model));
}

void BM_CodecVsMemcpy(benchmark::State& state) {
  Message message = OneMillionParameterModel();
  const FloatArray& weights = std::get<Model>(message.body).weights;
  size_t bytes = weights.size() * sizeof(float);
  std::vector<uint8_t> destination(bytes);
  bool all_ok = true;
  PairTiming t = TimeAlternating(
      state,
      [&] {
        std::vector<Frame> frames = Encode(message);
        auto decoded = Decode(frames);
        all_ok &= decoded.ok();
        benchmark::DoNotOptimize(decoded);
      },
      [&] {
        std::memcpy(destination.data(), weights.view().data(), bytes);
        benchmark::ClobberMemory();
      });
  if (!all_ok) state.SkipWithError("decode failed");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  ReportRatio(state, "codec_vs_memcpy", t.baseline_seconds / t.subject_seconds, 0.5,
              Goal::kAtLeast);
}
BENCHMARK(BM_CodecVsMemcpy)->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.5);

// Compressed blobs (issue 31). Subject: EncodeCompressed() of a 1M-float model, or
// DecodeCompressedInto() of its blob into a buffer of the model's size (every check included).
// Baseline: memcpy of the model's 4 MB into a buffer of that size. The ratio is the median of the
// interleaved pairs' memcpy time over the codec's time: 1.0 means the codec runs at memcpy speed
// over the uncompressed bytes. Target (issue 31): >= 0.25 for int8, both ways; the other codecs
// are measured against the same yardstick without a target of their own (shown as >= 0).
enum class CodecDirection { kEncode, kDecode };

// The settings each codec is measured with: the defaults (int8 blocks of 128), and top-k keeping
// 1% of the coordinates with int8 values, the setting issue 31 aims at.
CompressionSettings BenchSettings(CompressionCodec codec) {
  CompressionSettings settings;
  settings.codec = codec;
  settings.topk_fraction = 0.01;
  settings.topk_values = CompressionCodec::kInt8;
  return settings;
}

// 1M weights of a trained-looking model: Gaussian, with a few larger ones.
std::vector<float> OneMillionWeights() {
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> weights(1'000'000);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = normal(rng) * (i % 97 == 0 ? 10 : 1);
  return weights;
}

void BM_CompressionVsMemcpy(benchmark::State& state) {
  const auto codec = static_cast<CompressionCodec>(state.range(0));
  const auto direction = static_cast<CodecDirection>(state.range(1));
  const CompressionSettings settings = BenchSettings(codec);
  const std::vector<float> weights = OneMillionWeights();
  const size_t bytes = weights.size() * sizeof(float);
  const std::vector<uint8_t> blob = *EncodeCompressed(weights, settings);
  std::vector<float> decoded(weights.size());
  std::vector<float> destination(weights.size());
  bool all_ok = true;
  auto subject = [&] {
    if (direction == CodecDirection::kEncode) {
      auto encoded = EncodeCompressed(weights, settings);
      all_ok &= encoded.ok();
      benchmark::DoNotOptimize(encoded);
    } else {
      all_ok &= DecodeCompressedInto(blob, decoded).ok();
      benchmark::ClobberMemory();
    }
  };
  PairTiming t = TimeAlternating(state, subject, [&] {
    std::memcpy(destination.data(), weights.data(), bytes);
    benchmark::ClobberMemory();
  });
  if (!all_ok) state.SkipWithError("a codec call failed");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["blob_bytes"] = static_cast<double>(blob.size());
  const std::string name = std::string(CompressionCodecName(codec)) +
                           (direction == CodecDirection::kEncode ? "_encode" : "_decode") +
                           "_vs_memcpy";
  ReportRatio(state, name, MedianRatio(t), codec == CompressionCodec::kInt8 ? 0.25 : 0.0,
              Goal::kAtLeast);
}
BENCHMARK(BM_CompressionVsMemcpy)
    ->ArgNames({"codec", "decode"})
    ->ArgsProduct(
        {{static_cast<int>(CompressionCodec::kNone), static_cast<int>(CompressionCodec::kFp16),
          static_cast<int>(CompressionCodec::kInt8), static_cast<int>(CompressionCodec::kTopK)},
         {static_cast<int>(CodecDirection::kEncode), static_cast<int>(CodecDirection::kDecode)}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.3);

}  // namespace
}  // namespace meshlearn::bench
