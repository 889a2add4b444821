// The compressed blob codecs (protocol/compression.h): the error each codec promises, top-k's
// choice and error feedback, PROTOCOL.md's worked examples byte for byte, and hostile blobs.
#include "protocol/compression.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/protocol/sample_messages.h"

namespace meshlearn {
namespace {

CompressionSettings Int8(uint32_t block = kDefaultInt8BlockSize) {
  CompressionSettings s;
  s.codec = CompressionCodec::kInt8;
  s.block_size = block;
  return s;
}

CompressionSettings Fp16() {
  CompressionSettings s;
  s.codec = CompressionCodec::kFp16;
  return s;
}

CompressionSettings TopK(double fraction, CompressionCodec values, uint32_t block = 64) {
  CompressionSettings s;
  s.codec = CompressionCodec::kTopK;
  s.topk_fraction = fraction;
  s.topk_values = values;
  s.block_size = block;
  return s;
}

std::vector<uint8_t> MustEncode(std::span<const float> values, const CompressionSettings& s) {
  auto blob = EncodeCompressed(values, s);
  EXPECT_TRUE(blob.ok()) << blob.status().ToString();
  return blob.ok() ? *blob : std::vector<uint8_t>{};
}

std::vector<float> MustDecode(std::span<const uint8_t> blob, size_t count) {
  auto values = DecodeCompressed(blob, count);
  EXPECT_TRUE(values.ok()) << values.status().ToString();
  return values.ok() ? *values : std::vector<float>(count, std::nanf(""));
}

std::vector<uint8_t> Bytes(std::initializer_list<int> bytes) {
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

// Values of every kind an int8 block meets: Gaussian noise, exact zeros, a block of zeros, tiny
// (1e-30) and huge (1e30) magnitudes, subnormals, and a length that leaves a partial last block.
std::vector<float> MixedValues(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    switch (i / 300 % 6) {
      case 0:
        values[i] = normal(rng);
        break;
      case 1:
        values[i] = (i % 3 == 0) ? 0.0f : normal(rng);
        break;
      case 2:
        values[i] = normal(rng) * 1e-30f;
        break;
      case 3:
        values[i] = normal(rng) * 1e30f;
        break;
      case 4:
        values[i] = 0.0f;
        break;
      case 5:
        values[i] = normal(rng) * 4 * std::numeric_limits<float>::denorm_min();
        break;
    }
  }
  values[7] = std::numeric_limits<float>::max();  // the largest finite magnitude, in block 0
  values[8] = -std::numeric_limits<float>::max();
  return values;
}

class Int8RoundTrip : public ::testing::TestWithParam<uint32_t> {};

// Issue 31: int8's error is within half a quantization step, scale = max|x| / 127 of the block.
TEST_P(Int8RoundTrip, EveryValueIsWithinHalfAStepOfItsBlock) {
  const uint32_t block = GetParam();
  const std::vector<float> values = MixedValues(3 * 1800 + 37, block);
  const std::vector<uint8_t> blob = MustEncode(values, Int8(block));
  const size_t blocks = (values.size() + block - 1) / block;
  EXPECT_EQ(blob.size(), 8 + 4 * blocks + values.size()) << "about 1 byte per value";
  const std::vector<float> decoded = MustDecode(blob, values.size());
  ASSERT_EQ(decoded.size(), values.size());
  for (size_t start = 0; start < values.size(); start += block) {
    const size_t end = std::min<size_t>(start + block, values.size());
    double max_abs = 0;
    for (size_t i = start; i < end; ++i) max_abs = std::max(max_abs, std::fabs(double{values[i]}));
    const double step = max_abs / 127;
    // Float rounding (x * 127 / max, q * scale) adds at most a few 1e-5 of a step; a subnormal
    // scale is rounded to the nearest subnormal.
    const double allowed = step * (0.5 + 1e-4) + std::numeric_limits<float>::denorm_min();
    for (size_t i = start; i < end; ++i) {
      ASSERT_TRUE(std::isfinite(decoded[i])) << "value #" << i;
      ASSERT_LE(std::fabs(double{decoded[i]} - values[i]), allowed)
          << "value #" << i << " = " << values[i] << " decoded as " << decoded[i];
      if (values[i] == 0.0f) {
        ASSERT_EQ(decoded[i], 0.0f) << "a zero stays zero, #" << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BlockSizes, Int8RoundTrip, ::testing::Values(64u, 128u, 200u, 256u));

TEST(Fp16RoundTrip, ValuesKeepElevenSignificantBitsAndLargeOnesSaturate) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> exponent(-14.0f, 15.0f);
  std::vector<float> values;
  for (int i = 0; i < 4000; ++i) {
    float v = std::exp2(exponent(rng)) * (i % 2 ? 1.0f : -1.0f);
    values.push_back(v);
  }
  const std::vector<float> exact = {0.0f, 1.0f, -2.5f, 65504.0f, 0x1p-24f, -0x1p-14f};
  values.insert(values.end(), exact.begin(), exact.end());
  values.push_back(1e6f);   // above 65504: saturates
  values.push_back(-7e4f);  // below -65504: saturates
  values.push_back(3e-8f);  // subnormal binary16: to the nearest multiple of 2^-24
  const std::vector<uint8_t> blob = MustEncode(values, Fp16());
  EXPECT_EQ(blob.size(), 8 + 2 * values.size());
  const std::vector<float> decoded = MustDecode(blob, values.size());
  const size_t n = values.size();
  for (size_t i = 0; i < 4000; ++i) {
    ASSERT_LE(std::fabs(decoded[i] - values[i]), std::fabs(values[i]) * 0x1p-11f)
        << values[i] << " decoded as " << decoded[i];
  }
  for (size_t i = 0; i < exact.size(); ++i) EXPECT_EQ(decoded[4000 + i], exact[i]);
  EXPECT_EQ(decoded[n - 3], 65504.0f);
  EXPECT_EQ(decoded[n - 2], -65504.0f);
  EXPECT_EQ(decoded[n - 1], 0x1p-24f * std::nearbyint(3e-8f / 0x1p-24f));
}

TEST(NoneRoundTrip, ValuesComeBackBitForBit) {
  const std::vector<float> values = MixedValues(1000, 5);
  CompressionSettings none;
  const std::vector<uint8_t> blob = MustEncode(values, none);
  EXPECT_EQ(blob.size(), 8 + 4 * values.size());
  EXPECT_EQ(MustDecode(blob, values.size()), values);
}

TEST(TopKCount, RoundsTheFractionAndKeepsAtLeastOne) {
  EXPECT_EQ(TopKCount(0, 0.5), 0u);
  EXPECT_EQ(TopKCount(1000, 0.01), 10u);
  EXPECT_EQ(TopKCount(1000, 0.0104), 10u);
  EXPECT_EQ(TopKCount(1000, 0.0106), 11u);
  EXPECT_EQ(TopKCount(10, 0.001), 1u);
  EXPECT_EQ(TopKCount(10, 1.0), 10u);
}

class TopKChoice : public ::testing::TestWithParam<CompressionCodec> {};

// Top-k sends the k largest magnitudes (by |x|, not by signed value) and nothing else.
TEST_P(TopKChoice, KeepsExactlyTheLargestMagnitudes) {
  const size_t n = 5000;
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) {
    values[i] = static_cast<float>(i + 1) * 0.01f * (i % 2 ? -1.0f : 1.0f);
  }
  std::shuffle(values.begin(), values.end(), std::mt19937(11));
  const std::vector<uint8_t> blob = MustEncode(values, TopK(0.03, GetParam()));
  const std::vector<float> decoded = MustDecode(blob, n);
  const size_t k = TopKCount(n, 0.03);
  // The k-th largest magnitude is (n - k + 1) * 0.01: every larger one is sent, nothing else.
  const float threshold = static_cast<float>(n - k + 1) * 0.01f;
  size_t sent = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::fabs(values[i]) >= threshold) {
      ++sent;
      ASSERT_NE(decoded[i], 0.0f) << "value #" << i << " = " << values[i] << " was not sent";
      ASSERT_NEAR(decoded[i], values[i], std::fabs(values[i]) * 0.01f);
    } else {
      ASSERT_EQ(decoded[i], 0.0f) << "value #" << i << " = " << values[i] << " was sent";
    }
  }
  EXPECT_EQ(sent, k);
  EXPECT_LT(blob.size(), n * 4 * 0.03 * 1.01) << "about k value bytes plus 1-2 index bytes each";
}

INSTANTIATE_TEST_SUITE_P(Values, TopKChoice,
                         ::testing::Values(CompressionCodec::kFp16, CompressionCodec::kInt8),
                         [](const auto& info) { return CompressionCodecName(info.param); });

TEST(TopKChoice, AmongEqualMagnitudesTheLowestIndicesWin) {
  const std::vector<float> values = {1, -2, 2, 0, -2, 2, 0.5f, 3};
  const std::vector<float> decoded =
      MustDecode(MustEncode(values, TopK(3.0 / 8, CompressionCodec::kFp16)), values.size());
  EXPECT_EQ(decoded, (std::vector<float>{0, -2, 2, 0, 0, 0, 0, 3}));
}

// Large inputs take the sampled path of the selection: the same choice as sorting by magnitude
// (ties to the lowest index), with heavy ties, and when the sample misleads it (the values it
// sees are all large ones).
TEST(TopKChoice, LargeInputsKeepWhatSortingByMagnitudeKeeps) {
  const size_t n = 60000;
  std::mt19937 rng(29);
  std::vector<float> tied(n);  // 16 magnitudes, both signs: thousands of ties
  for (float& v : tied) v = static_cast<float>(1 + rng() % 16) * (rng() % 2 ? 0.5f : -0.5f);
  std::vector<float> misleading(n);  // large exactly where the strided sample looks (every 14th)
  for (size_t i = 0; i < n; ++i) {
    misleading[i] = static_cast<float>(i % 1000 + 1) * (i % 14 == 0 ? 16.0f : 1.0f) / 64;
  }
  for (const std::vector<float>* values : {&tied, &misleading}) {
    std::vector<size_t> by_magnitude(n);
    std::iota(by_magnitude.begin(), by_magnitude.end(), 0);
    std::stable_sort(by_magnitude.begin(), by_magnitude.end(), [&](size_t a, size_t b) {
      return std::fabs((*values)[a]) > std::fabs((*values)[b]);
    });
    for (double fraction : {0.0001, 0.01, 0.3, 0.5, 1.0}) {
      const size_t k = TopKCount(n, fraction);
      std::vector<float> expected(n, 0.0f);
      for (size_t j = 0; j < k; ++j) expected[by_magnitude[j]] = (*values)[by_magnitude[j]];
      const std::vector<float> decoded =
          MustDecode(MustEncode(*values, TopK(fraction, CompressionCodec::kFp16)), n);
      ASSERT_EQ(decoded, expected) << "fraction " << fraction;
    }
  }
}

// Issue 31, "Done when": top-k with error feedback loses nothing over time. The owner's model
// moves every step; what it sent (the decoded updates) plus what it still holds back (x − x̂)
// equals the sum of the moves, and every requester that applies the updates holds the owner's
// estimate bit for bit. When the model stops moving, the estimate catches up with it.
TEST(PublicEstimate, TopKWithErrorFeedbackLosesNothingOverTime) {
  const size_t n = 2000;
  std::mt19937 rng(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> start(n);
  for (float& v : start) v = normal(rng);
  std::vector<float> model = start;
  PublicEstimate owner(start);
  PublicEstimate requester(start);
  std::vector<double> sent(n, 0.0);
  std::vector<double> moved(n, 0.0);
  const CompressionSettings topk = TopK(0.05, CompressionCodec::kInt8);
  for (int step = 0; step < 300; ++step) {
    for (size_t i = 0; i < n; ++i) {
      const float move = 0.01f * normal(rng);
      moved[i] += double{model[i] + move} - model[i];
      model[i] += move;
    }
    auto update = owner.EncodeUpdate(model, topk);
    ASSERT_TRUE(update.ok()) << update.status().ToString();
    EXPECT_LT(update->size(), n * 4 / 10) << "step " << step;
    ASSERT_TRUE(requester.Apply(*update).ok());
    const std::vector<float> decoded = MustDecode(*update, n);
    for (size_t i = 0; i < n; ++i) sent[i] += decoded[i];
    ASSERT_EQ(0, std::memcmp(owner.values().data(), requester.values().data(), n * 4))
        << "the requester's estimate differs from the owner's after step " << step;
  }
  double largest_remainder = 0;
  for (size_t i = 0; i < n; ++i) {
    const double remainder = double{model[i]} - owner.values()[i];
    largest_remainder = std::max(largest_remainder, std::fabs(remainder));
    ASSERT_NEAR(sent[i] + remainder, moved[i], 1e-4) << "coordinate " << i;
  }
  EXPECT_GT(largest_remainder, 0.01) << "top-k at 5% holds part of the moves back";
  for (int step = 0; step < 200; ++step) ASSERT_TRUE(owner.EncodeUpdate(model, topk).ok());
  for (size_t i = 0; i < n; ++i) {
    ASSERT_NEAR(owner.values()[i], model[i], 1e-5) << "coordinate " << i << " never caught up";
  }
}

TEST(PublicEstimate, ABadUpdateLeavesTheEstimateUnchanged) {
  const std::vector<float> start = {1, 2, 3, 4};
  PublicEstimate estimate(start);
  EXPECT_EQ(estimate.EncodeUpdate(std::vector<float>{1, 2, 3}, Fp16()).status().code(),
            ErrorCode::kLayoutMismatch);
  EXPECT_EQ(estimate.EncodeUpdate(std::vector<float>{1, 2, NAN, 4}, Fp16()).status().code(),
            ErrorCode::kNonFinite);
  // An update that decodes but overflows the estimate (3e38 + 3e38).
  PublicEstimate huge(std::vector<float>{3e38f, 0, 0, 0});
  CompressionSettings none;
  auto overflow = EncodeCompressed(std::vector<float>{3e38f, 1, 1, 1}, none);
  ASSERT_TRUE(overflow.ok());
  EXPECT_EQ(huge.Apply(*overflow).code(), ErrorCode::kNonFinite);
  EXPECT_EQ(huge.values()[0], 3e38f);
  EXPECT_EQ(huge.values()[1], 0.0f);
  std::vector<uint8_t> truncated = MustEncode(std::vector<float>{5, 5, 5, 5}, Int8(64));
  truncated.pop_back();
  EXPECT_FALSE(estimate.Apply(truncated).ok());
  EXPECT_EQ(std::vector<float>(estimate.values().begin(), estimate.values().end()), start);
}

// PROTOCOL.md, "Compressed blob encodings (version 3)": the worked examples, byte for byte.
TEST(ProtocolExamples, EncodeToTheDocumentedBytes) {
  EXPECT_EQ(MustEncode(std::vector<float>{1.0f, -2.5f, 65504.0f}, Fp16()),
            Bytes({0x01, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,  //
                   0x00, 0x3c, 0x00, 0xc1, 0xff, 0x7b}));
  EXPECT_EQ(MustEncode(std::vector<float>{127.0f, -63.5f, 0.25f}, Int8(64)),
            Bytes({0x02, 0x00, 0x40, 0x00, 0x03, 0x00, 0x00, 0x00,  //
                   0x00, 0x00, 0x80, 0x3f,                          //
                   0x7f, 0xc0, 0x00}));
  EXPECT_EQ(MustEncode(std::vector<float>{0.1f, -3.0f, 0, 0, 0.5f, 0, 0, 2.0f},
                       TopK(0.25, CompressionCodec::kFp16)),
            Bytes({0x03, 0x01, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  //
                   0x00, 0xc2, 0x00, 0x40,                                                  //
                   0x01, 0x06}));
  std::vector<float> sparse(300, 0.0f);
  sparse[5] = 127.0f;
  sparse[290] = -64.0f;
  sparse[100] = 0.5f;
  EXPECT_EQ(MustEncode(sparse, TopK(0.007, CompressionCodec::kInt8, 64)),
            Bytes({0x03, 0x02, 0x40, 0x00, 0x2c, 0x01, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  //
                   0x00, 0x00, 0x80, 0x3f, 0x7f, 0xc0,                                      //
                   0x05, 0x9d, 0x02}));
}

TEST(EncodeCompressed, RefusesBadSettingsAndNonFiniteValues) {
  const std::vector<float> values = {1, 2, 3};
  EXPECT_EQ(EncodeCompressed(values, Int8(63)).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(EncodeCompressed(values, Int8(257)).status().code(), ErrorCode::kInvalidArgument);
  for (double fraction : {0.0, -0.1, 1.5, std::nan("")}) {
    EXPECT_EQ(EncodeCompressed(values, TopK(fraction, CompressionCodec::kInt8)).status().code(),
              ErrorCode::kInvalidArgument)
        << fraction;
  }
  EXPECT_EQ(EncodeCompressed(values, TopK(0.5, CompressionCodec::kNone)).status().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(EncodeCompressed(values, TopK(0.5, CompressionCodec::kFp16, 0)).status().code(),
            ErrorCode::kOk)
      << "fp16 values need no block size";
  CompressionSettings unknown;
  unknown.codec = static_cast<CompressionCodec>(9);
  EXPECT_EQ(EncodeCompressed(values, unknown).status().code(), ErrorCode::kInvalidArgument);
  for (const CompressionSettings& s :
       {CompressionSettings{}, Fp16(), Int8(), TopK(0.5, CompressionCodec::kFp16),
        TopK(0.5, CompressionCodec::kInt8)}) {
    for (float bad : {NAN, INFINITY, -INFINITY}) {
      std::vector<float> with_bad(300, 1.0f);
      with_bad[150] = bad;
      EXPECT_EQ(EncodeCompressed(with_bad, s).status().code(), ErrorCode::kNonFinite)
          << CompressionCodecName(s.codec) << " of " << bad;
    }
  }
}

TEST(CompressionCodecNames, RoundTripAndRefuseOthers) {
  for (CompressionCodec c : {CompressionCodec::kNone, CompressionCodec::kFp16,
                             CompressionCodec::kInt8, CompressionCodec::kTopK}) {
    auto named = CompressionCodecNamed(CompressionCodecName(c));
    ASSERT_TRUE(named.ok());
    EXPECT_EQ(*named, c);
  }
  EXPECT_EQ(CompressionCodecNamed("int4").status().code(), ErrorCode::kInvalidArgument);
}

TEST(DecodeCompressed, EveryTruncationAndAnyExtraByteIsRefused) {
  for (const auto& [name, blob, count] : testing::CompressedSamples()) {
    ASSERT_TRUE(DecodeCompressed(blob, count).ok()) << name;
    for (size_t length = 0; length < blob.size(); ++length) {
      auto decoded = DecodeCompressed(std::span(blob).first(length), count);
      ASSERT_FALSE(decoded.ok()) << name << " cut to " << length << " bytes";
      EXPECT_FALSE(decoded.status().message().empty());
    }
    std::vector<uint8_t> longer = blob;
    longer.push_back(0);
    EXPECT_EQ(DecodeCompressed(longer, count).status().code(), ErrorCode::kMalformed) << name;
    EXPECT_EQ(DecodeCompressed(blob, count + 1).status().code(), ErrorCode::kLayoutMismatch)
        << name;
  }
}

struct Corruption {
  const char* what;
  std::vector<uint8_t> blob;
  size_t count;
  ErrorCode code;
};

// The documented examples (ProtocolExamples), each broken in one field.
std::vector<Corruption> Corruptions() {
  const std::vector<uint8_t> fp16 = Bytes({1, 0, 0, 0, 2, 0, 0, 0, 0x00, 0x3c, 0x00, 0xc1});
  const std::vector<uint8_t> int8 =
      Bytes({2, 0, 64, 0, 3, 0, 0, 0, 0x00, 0x00, 0x80, 0x3f, 0x7f, 0xc0, 0x00});
  const std::vector<uint8_t> topk_header =
      Bytes({3, 1, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 0, 0xc2, 0, 0x40});
  auto with = [](std::vector<uint8_t> blob, size_t at, std::initializer_list<int> bytes) {
    size_t i = at;
    for (int b : bytes) blob[i++] = static_cast<uint8_t>(b);
    return blob;
  };
  auto topk = [&](std::initializer_list<int> indices) {
    std::vector<uint8_t> blob = topk_header;
    blob.insert(blob.end(), indices.begin(), indices.end());
    return blob;
  };
  return {
      {"unknown codec", with(fp16, 0, {4}), 2, ErrorCode::kMalformed},
      {"value codec byte on fp16", with(fp16, 1, {1}), 2, ErrorCode::kMalformed},
      {"block size on fp16", with(fp16, 2, {64}), 2, ErrorCode::kMalformed},
      {"fp16 Inf", with(fp16, 10, {0x00, 0x7c}), 2, ErrorCode::kNonFinite},
      {"fp16 NaN", with(fp16, 10, {0x01, 0xfe}), 2, ErrorCode::kNonFinite},
      {"int8 block 63", with(int8, 2, {63}), 3, ErrorCode::kMalformed},
      {"int8 block 257", with(int8, 2, {0x01, 0x01}), 3, ErrorCode::kMalformed},
      {"int8 block 0", with(int8, 2, {0}), 3, ErrorCode::kMalformed},
      {"int8 NaN scale", with(int8, 8, {0x00, 0x00, 0xc0, 0x7f}), 3, ErrorCode::kNonFinite},
      {"int8 Inf scale", with(int8, 8, {0x00, 0x00, 0x80, 0x7f}), 3, ErrorCode::kNonFinite},
      {"int8 negative scale", with(int8, 8, {0x00, 0x00, 0x80, 0xbf}), 3, ErrorCode::kNonFinite},
      {"int8 scale overflowing at 127", with(int8, 8, {0xff, 0xff, 0x7f, 0x7f}), 3,
       ErrorCode::kNonFinite},
      {"int8 value -128", with(int8, 14, {0x80}), 3, ErrorCode::kMalformed},
      {"topk value codec 0", with(topk({1, 6}), 1, {0}), 8, ErrorCode::kMalformed},
      {"topk value codec 3", with(topk({1, 6}), 1, {3}), 8, ErrorCode::kMalformed},
      {"topk k above n", with(topk({1, 6}), 8, {9}), 8, ErrorCode::kMalformed},
      {"topk index past n", topk({1, 7}), 8, ErrorCode::kMalformed},
      {"topk repeated index", topk({1, 0}), 8, ErrorCode::kMalformed},
      {"topk overlong varint", topk({1, 0x86, 0x00}), 8, ErrorCode::kMalformed},
      {"topk unterminated varint", topk({1, 0x86}), 8, ErrorCode::kMalformed},
      {"topk six-byte varint", topk({1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), 8,
       ErrorCode::kMalformed},
      {"topk varint above 2^32", topk({1, 0xff, 0xff, 0xff, 0xff, 0x1f}), 8, ErrorCode::kMalformed},
      {"topk index wrapping 2^32", topk({0xff, 0xff, 0xff, 0xff, 0x0f, 0x02}), 8,
       ErrorCode::kMalformed},
      {"topk bytes after the indices", topk({1, 6, 0}), 8, ErrorCode::kMalformed},
      {"topk one index short", topk({1}), 8, ErrorCode::kMalformed},
  };
}

TEST(DecodeCompressed, RefusesEachBrokenFieldWithItsCode) {
  // The unbroken blobs decode.
  ASSERT_EQ(MustDecode(Bytes({3, 1, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 0, 0xc2, 0, 0x40, 1, 6}), 8),
            (std::vector<float>{0, -3, 0, 0, 0, 0, 0, 2}));
  for (const Corruption& c : Corruptions()) {
    auto decoded = DecodeCompressed(c.blob, c.count);
    ASSERT_FALSE(decoded.ok()) << c.what;
    EXPECT_EQ(decoded.status().code(), c.code) << c.what << ": " << decoded.status().ToString();
  }
}

// Random damage never crashes the decoder (ASan runs this in CI) and never yields a value that is
// not finite: a damaged blob is refused or decodes to `count` finite values.
TEST(DecodeCompressed, RandomDamageIsRefusedOrDecodesToFiniteValues) {
  std::mt19937 rng(23);
  size_t refused = 0;
  size_t trials = 0;
  for (const auto& [name, blob, count] : testing::CompressedSamples()) {
    for (int trial = 0; trial < 2000; ++trial, ++trials) {
      std::vector<uint8_t> damaged = blob;
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int f = 0; f < flips; ++f) {
        const size_t at = (trial % 2 == 0) ? rng() % std::min<size_t>(damaged.size(), 16)
                                           : rng() % damaged.size();
        damaged[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
      }
      if (trial % 7 == 0) damaged.resize(rng() % damaged.size());
      std::vector<float> out(count, 0.0f);
      const Status status = DecodeCompressedInto(damaged, out);
      if (!status.ok()) {
        ++refused;
        ASSERT_FALSE(status.message().empty());
        continue;
      }
      for (float v : out) ASSERT_TRUE(std::isfinite(v));
    }
  }
  EXPECT_GT(refused, trials / 10) << "damage to the header and lengths is caught";
}

}  // namespace
}  // namespace meshlearn
