#include "protocol/compression.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "base/crc32.h"
#include "base/float_array.h"
#include "base/little_endian.h"

namespace meshlearn {

// The helpers live in their own named namespace: the library may be built as unity batches, where
// another .cc's anonymous-namespace names share this translation unit.
namespace compression_internal {
namespace {

constexpr NamedValue<CompressionCodec> kCodecNames[] = {
    {"none", CompressionCodec::kNone},
    {"fp16", CompressionCodec::kFp16},
    {"int8", CompressionCodec::kInt8},
    {"topk", CompressionCodec::kTopK},
};

// Header sizes (PROTOCOL.md, "Compressed blob encodings (version 3)").
constexpr size_t kDenseHeaderBytes = 8;  // codec, value codec, block size u16, count u32
constexpr size_t kTopKHeaderBytes = 12;  // the same, then k u32

constexpr uint32_t kFloatSign = 0x80000000u;
constexpr uint32_t kFloatMagnitude = 0x7fffffffu;
constexpr uint32_t kFloatExponent = 0x7f800000u;      // all set: NaN or Inf
constexpr uint32_t kFp16MaxBits = 0x477fe000u;        // 65504.0f, the largest finite binary16
constexpr uint32_t kFp16MinNormalBits = 0x38800000u;  // 2^-14, the smallest normal binary16
constexpr uint32_t kHalfExponent = 0x7c00u;           // all set: NaN or Inf
constexpr size_t kMaxVarintBytes = 5;                 // a uint32 in LEB128

// Adding and subtracting 1.5 * 2^23 rounds a float below 2^22 in magnitude to the nearest integer,
// ties to even, in two vectorisable instructions (no libm call, no SSE4.1 needed).
constexpr float kRoundToIntegerMagic = 12582912.0f;

// Below this max |x|, a block's scale max|x|/127 is subnormal and 127/max|x| loses precision:
// such blocks take the exact (double) path.
constexpr float kInt8FastPathMin = 127.0f * std::numeric_limits<float>::min();

uint32_t BitsOf(float value) { return std::bit_cast<uint32_t>(value); }
float FloatOf(uint32_t bits) { return std::bit_cast<float>(bits); }

// binary16 bits of a finite float, round to nearest even, magnitudes above 65504 saturated.
// Branch-free so that the loops over it vectorise (after F. Giesen's float_to_half_fast3_rtne).
inline uint16_t HalfOf(float value) {
  const uint32_t bits = BitsOf(value);
  const uint32_t sign = bits & kFloatSign;
  const uint32_t magnitude = std::min(bits ^ sign, kFp16MaxBits);
  // Subnormal results: adding 0.5 makes the FPU round the value to a multiple of 2^-24.
  const uint32_t subnormal = BitsOf(FloatOf(magnitude) + 0.5f) - BitsOf(0.5f);
  // Normal results: rebias the exponent, and round the 13 dropped mantissa bits to even.
  const uint32_t normal =
      (magnitude + (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + ((magnitude >> 13) & 1u)) >>
      13;
  // A mask, not a branch or a ?: (which GCC 12 keeps as control flow and does not vectorise).
  const uint32_t is_subnormal = 0u - static_cast<uint32_t>(magnitude < kFp16MinNormalBits);
  const uint32_t half = (subnormal & is_subnormal) | (normal & ~is_subnormal);
  return static_cast<uint16_t>(half | (sign >> 16));
}

// The float value of finite binary16 bits `half` (exact). Shifting the exponent and mantissa into
// place and multiplying by 2^112 rebiases normals and subnormals alike.
inline float FloatOfHalf(uint16_t half) {
  const float magnitude = FloatOf((static_cast<uint32_t>(half) & 0x7fffu) << 13) * 0x1p112f;
  return FloatOf(BitsOf(magnitude) | ((static_cast<uint32_t>(half) & 0x8000u) << 16));
}

// Writes the binary16 bits of `count` values at `out` (2 bytes each). Returns whether a value was
// NaN or Inf (those bytes are then meaningless).
__attribute__((target_clones("avx2", "default"))) bool HalvesOf(const float* values, size_t count,
                                                                uint8_t* out) {
  uint32_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    bad |= static_cast<uint32_t>((BitsOf(values[i]) & kFloatExponent) == kFloatExponent);
    StoreLittleEndian<uint16_t>(out + 2 * i, HalfOf(values[i]));
  }
  return bad != 0;
}

// Reads `count` binary16 values at `in` into `out`. Returns whether one was NaN or Inf.
__attribute__((target_clones("avx2", "default"))) bool FloatsOfHalves(const uint8_t* in,
                                                                      size_t count, float* out) {
  uint32_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    const uint16_t half = LoadLittleEndian<uint16_t>(in + 2 * i);
    bad |= static_cast<uint32_t>((half & kHalfExponent) == kHalfExponent);
    out[i] = FloatOfHalf(half);
  }
  return bad != 0;
}

// The scale of an int8 block whose largest magnitude is the finite `max_abs`: max_abs / 127, one
// ulp less when 127 * scale would overflow (the decoder refuses such scales), and the smallest
// positive float when the quotient underflows to zero.
float Int8ScaleOf(float max_abs) {
  float scale = max_abs / 127.0f;
  if (!std::isfinite(scale * 127.0f)) scale = std::nextafter(scale, 0.0f);
  if (scale == 0.0f && max_abs > 0.0f) scale = std::numeric_limits<float>::denorm_min();
  return scale;
}

// Whether `scale` is one an int8 decoder accepts: finite, not negative, and small enough that
// 127 * scale is finite (so every decoded value is).
bool IsValidInt8Scale(float scale) { return scale >= 0.0f && std::isfinite(scale * 127.0f); }

// Quantises `count` values in blocks of `block`: scale i (float32 LE, 4 bytes) at scales + 4 i,
// the int8 values at `out`. Returns whether a value was NaN or Inf (the output is then partial).
__attribute__((target_clones("avx2", "default"))) bool QuantizeInt8(const float* values,
                                                                    size_t count, size_t block,
                                                                    uint8_t* scales, int8_t* out) {
  for (size_t start = 0, b = 0; start < count; start += block, ++b) {
    const size_t length = std::min(block, count - start);
    const float* x = values + start;
    int8_t* q = out + start;
    uint32_t max_bits = 0;  // magnitudes of finite floats order like their bits
    for (size_t i = 0; i < length; ++i)
      max_bits = std::max(max_bits, BitsOf(x[i]) & kFloatMagnitude);
    if (max_bits >= kFloatExponent) return true;
    const float max_abs = FloatOf(max_bits);
    const float scale = Int8ScaleOf(max_abs);
    if (max_abs >= kInt8FastPathMin) {
      const float inverse = 127.0f / max_abs;
      for (size_t i = 0; i < length; ++i) {
        float r = (x[i] * inverse + kRoundToIntegerMagic) - kRoundToIntegerMagic;
        r = std::clamp(r, -127.0f, 127.0f);
        q[i] = static_cast<int8_t>(static_cast<int32_t>(r));
      }
    } else {
      for (size_t i = 0; i < length; ++i) {
        const double r = scale > 0.0f ? std::nearbyint(static_cast<double>(x[i]) / scale) : 0.0;
        q[i] = static_cast<int8_t>(std::clamp(r, -127.0, 127.0));
      }
    }
    StoreLittleEndian<uint32_t>(scales + 4 * b, BitsOf(scale));
  }
  return false;
}

// Dequantises `count` int8 values at `in` in blocks of `block` with the scales at `scales` into
// `out`. kNonFinite for a scale IsValidInt8Scale refuses, kMalformed for the value -128 (the
// encoder's range is symmetric, -127..127).
__attribute__((target_clones("avx2", "default"))) Status DequantizeInt8(const uint8_t* scales,
                                                                        const int8_t* in,
                                                                        size_t count, size_t block,
                                                                        float* out) {
  uint32_t minimum_seen = 0;
  for (size_t start = 0, b = 0; start < count; start += block, ++b) {
    const size_t length = std::min(block, count - start);
    const float scale = LoadLittleEndian<float>(scales + 4 * b);
    if (!IsValidInt8Scale(scale)) {
      return Status::NonFinite("int8 block #" + std::to_string(b) + " has scale " +
                               std::to_string(scale) +
                               " (a scale must be finite, >= 0 and at most FLT_MAX / 127)");
    }
    const int8_t* q = in + start;
    float* x = out + start;
    for (size_t i = 0; i < length; ++i) {
      minimum_seen |= static_cast<uint32_t>(q[i] == -128);
      x[i] = static_cast<float>(q[i]) * scale;
    }
  }
  if (minimum_seen != 0) return Status::Malformed("an int8 value is -128 (allowed: -127..127)");
  return Status::Ok();
}

size_t Int8Blocks(size_t count, size_t block) { return (count + block - 1) / block; }

// Bytes of `count` values stored blockwise in int8: the scales, then the values.
size_t Int8Bytes(size_t count, size_t block) { return 4 * Int8Blocks(count, block) + count; }

// Bytes of `count` values stored as `codec` (kFp16 or kInt8).
size_t ValueBytes(CompressionCodec codec, size_t count, size_t block) {
  return codec == CompressionCodec::kFp16 ? 2 * count : Int8Bytes(count, block);
}

// Writes `count` values at `out` as `codec` (kFp16 or kInt8; ValueBytes long). Returns whether a
// value was NaN or Inf.
bool EncodeValues(CompressionCodec codec, const float* values, size_t count, size_t block,
                  uint8_t* out) {
  if (codec == CompressionCodec::kFp16) return HalvesOf(values, count, out);
  return QuantizeInt8(values, count, block, out,
                      reinterpret_cast<int8_t*>(out + 4 * Int8Blocks(count, block)));
}

// Reads `count` values stored as `codec` at `in` (ValueBytes long) into `out`.
Status DecodeValues(CompressionCodec codec, const uint8_t* in, size_t count, size_t block,
                    float* out) {
  if (codec == CompressionCodec::kFp16) {
    if (FloatsOfHalves(in, count, out)) return Status::NonFinite("an fp16 value is NaN or Inf");
    return Status::Ok();
  }
  return DequantizeInt8(in, reinterpret_cast<const int8_t*>(in + 4 * Int8Blocks(count, block)),
                        count, block, out);
}

void PutHeader(uint8_t* at, CompressionCodec codec, CompressionCodec values, uint32_t block,
               uint32_t count) {
  at[0] = static_cast<uint8_t>(codec);
  at[1] = static_cast<uint8_t>(values);
  StoreLittleEndian<uint16_t>(at + 2, static_cast<uint16_t>(block));
  StoreLittleEndian<uint32_t>(at + 4, count);
}

// Appends `value` in unsigned LEB128 (7 bits per byte, lowest first, high bit = more follow) at
// `out`; returns the bytes written.
size_t PutVarint(uint32_t value, uint8_t* out) {
  size_t n = 0;
  while (value >= 0x80u) {
    out[n++] = static_cast<uint8_t>(value | 0x80u);
    value >>= 7;
  }
  out[n++] = static_cast<uint8_t>(value);
  return n;
}

// Reads one canonical LEB128 uint32 at `*at`, before `end`, and advances `*at`. kMalformed when
// it is unterminated, longer than 5 bytes, above 2^32 - 1 or overlong (a final zero byte after
// others).
Result<uint32_t> GetVarint(const uint8_t** at, const uint8_t* end) {
  uint64_t value = 0;
  for (size_t n = 0; n < kMaxVarintBytes; ++n) {
    if (*at == end) return Status::Malformed("an index varint runs past the end of the blob");
    const uint8_t byte = *(*at)++;
    value |= static_cast<uint64_t>(byte & 0x7fu) << (7 * n);
    if ((byte & 0x80u) == 0) {
      if (byte == 0 && n > 0) return Status::Malformed("an index varint is overlong");
      if (value > std::numeric_limits<uint32_t>::max()) {
        return Status::Malformed("an index varint is above 2^32 - 1");
      }
      return static_cast<uint32_t>(value);
    }
  }
  return Status::Malformed("an index varint is longer than 5 bytes");
}

uint32_t MagnitudeOf(float value) { return BitsOf(value) & kFloatMagnitude; }

// The k-th largest magnitude of the finite `values` (1 <= k <= n), as float bits (magnitudes of
// finite floats order like their bits), and how many of the k largest equal it.
// Rationale: nth_element over all n magnitudes costs about 4 ms for 1M values. A strided sample
// first gives a floor that the k-th largest is very likely above, so that nth_element runs on
// the few candidates at or above it; when the floor was too high, all n are the candidates. The
// answer is exact and deterministic either way.
std::pair<uint32_t, size_t> KthLargestMagnitude(std::span<const float> values, size_t k) {
  constexpr size_t kSampleSize = 4096;
  const size_t n = values.size();
  std::vector<uint32_t> candidates;
  uint32_t floor = 0;
  if (n / kSampleSize > 1) {
    const size_t stride = n / kSampleSize;
    for (size_t i = 0; i < n; i += stride) candidates.push_back(MagnitudeOf(values[i]));
    // Twice the sample's expected share of the k largest, plus a margin for small k.
    const size_t sample_kept = std::min(candidates.size(), 2 * k / stride + 32);
    auto at = candidates.end() - static_cast<ptrdiff_t>(sample_kept);
    std::nth_element(candidates.begin(), at, candidates.end());
    floor = *at;
    candidates.clear();
    for (float value : values) {
      if (MagnitudeOf(value) >= floor) candidates.push_back(MagnitudeOf(value));
    }
  }
  if (candidates.size() < k) {
    candidates.resize(n);
    for (size_t i = 0; i < n; ++i) candidates[i] = MagnitudeOf(values[i]);
  }
  auto kth = candidates.end() - static_cast<ptrdiff_t>(k);
  std::nth_element(candidates.begin(), kth, candidates.end());
  return {*kth, static_cast<size_t>(std::count(kth, candidates.end(), *kth))};
}

// The indices of the k largest magnitudes of `values`, increasing; among equal magnitudes at the
// threshold, the lowest indices. kNonFinite when a value is NaN or Inf.
Result<std::vector<uint32_t>> TopKIndices(std::span<const float> values, size_t k) {
  MESHLEARN_RETURN_IF_ERROR(CheckFinite(values));
  std::vector<uint32_t> indices;
  indices.reserve(k);
  if (k == 0) return indices;
  auto [threshold, ties_left] = KthLargestMagnitude(values, k);
  for (size_t i = 0; i < values.size() && indices.size() < k; ++i) {
    const uint32_t magnitude = MagnitudeOf(values[i]);
    if (magnitude > threshold) {
      indices.push_back(static_cast<uint32_t>(i));
    } else if (magnitude == threshold && ties_left > 0) {
      indices.push_back(static_cast<uint32_t>(i));
      --ties_left;
    }
  }
  return indices;
}

Result<std::vector<uint8_t>> EncodeTopK(std::span<const float> values,
                                        const CompressionSettings& settings) {
  const size_t n = values.size();
  const size_t k = TopKCount(n, settings.topk_fraction);
  auto indices = TopKIndices(values, k);
  if (!indices.ok()) return indices.status();
  std::vector<float> kept(k);
  for (size_t j = 0; j < k; ++j) kept[j] = values[(*indices)[j]];
  const CompressionCodec value_codec = settings.topk_values;
  const uint32_t block = value_codec == CompressionCodec::kInt8 ? settings.block_size : 0;
  const size_t value_bytes = ValueBytes(value_codec, k, block);
  std::vector<uint8_t> blob(kTopKHeaderBytes + value_bytes + kMaxVarintBytes * k);
  PutHeader(blob.data(), CompressionCodec::kTopK, value_codec, block, static_cast<uint32_t>(n));
  StoreLittleEndian<uint32_t>(blob.data() + 8, static_cast<uint32_t>(k));
  EncodeValues(value_codec, kept.data(), k, block, blob.data() + kTopKHeaderBytes);
  size_t at = kTopKHeaderBytes + value_bytes;
  uint32_t previous = 0;
  for (uint32_t index : *indices) {
    at += PutVarint(index - previous, blob.data() + at);  // the first index as is, then gaps
    previous = index;
  }
  blob.resize(at);
  return blob;
}

// Decodes a top-k blob (header already read: `value_codec`, `block`, n = out.size()).
Status DecodeTopK(std::span<const uint8_t> blob, CompressionCodec value_codec, size_t block,
                  std::span<float> out) {
  if (blob.size() < kTopKHeaderBytes) {
    return Status::Malformed("a topk blob of " + std::to_string(blob.size()) +
                             " bytes is shorter than its 12-byte header");
  }
  const size_t n = out.size();
  const size_t k = LoadLittleEndian<uint32_t>(blob.data() + 8);
  if (k > n) {
    return Status::Malformed("topk keeps " + std::to_string(k) + " of " + std::to_string(n) +
                             " values");
  }
  const size_t value_bytes = ValueBytes(value_codec, k, block);
  if (blob.size() - kTopKHeaderBytes < value_bytes) {
    return Status::Malformed("a topk blob of " + std::to_string(blob.size()) +
                             " bytes cannot hold its " + std::to_string(k) + " values");
  }
  // The kept values go to the front of `out` first (k <= n), then move to their indices from the
  // last to the first: index j >= j, so a value is never overwritten before it moved.
  MESHLEARN_RETURN_IF_ERROR(
      DecodeValues(value_codec, blob.data() + kTopKHeaderBytes, k, block, out.data()));
  // Read and check every index before moving anything.
  std::vector<uint32_t> indices(k);
  const uint8_t* at = blob.data() + kTopKHeaderBytes + value_bytes;
  const uint8_t* end = blob.data() + blob.size();
  uint64_t index = 0;
  for (size_t j = 0; j < k; ++j) {
    auto gap = GetVarint(&at, end);
    if (!gap.ok()) return gap.status().WithContext("topk index #" + std::to_string(j));
    if (j > 0 && *gap == 0) {
      return Status::Malformed("topk index #" + std::to_string(j) +
                               " repeats the one before (indices must increase strictly)");
    }
    index += *gap;
    if (index >= n) {
      return Status::Malformed("topk index #" + std::to_string(j) + " is " + std::to_string(index) +
                               ", past the " + std::to_string(n) + " values");
    }
    indices[j] = static_cast<uint32_t>(index);
  }
  if (at != end) {
    return Status::Malformed("a topk blob has " + std::to_string(end - at) +
                             " bytes after its last index");
  }
  for (size_t j = k; j-- > 0;) {
    const float value = out[j];
    std::fill(out.begin() + static_cast<ptrdiff_t>(j > 0 ? indices[j - 1] + 1 : 0),
              out.begin() + static_cast<ptrdiff_t>(indices[j]), 0.0f);
    out[indices[j]] = value;
  }
  std::fill(out.begin() + static_cast<ptrdiff_t>(k > 0 ? indices[k - 1] + 1 : 0), out.end(), 0.0f);
  return Status::Ok();
}

Result<std::vector<uint8_t>> EncodeBlob(std::span<const float> values,
                                        const CompressionSettings& settings) {
  MESHLEARN_RETURN_IF_ERROR(ValidateCompression(settings));
  if (values.size() > std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument(std::to_string(values.size()) +
                                   " values are more than a compressed blob holds (2^32 - 1)");
  }
  const auto n = static_cast<uint32_t>(values.size());
  std::vector<uint8_t> blob;
  switch (settings.codec) {
    case CompressionCodec::kNone:
      MESHLEARN_RETURN_IF_ERROR(CheckFinite(values));
      blob.resize(kDenseHeaderBytes + 4 * values.size());
      PutHeader(blob.data(), settings.codec, CompressionCodec::kNone, 0, n);
      if (n > 0) std::memcpy(blob.data() + kDenseHeaderBytes, values.data(), 4 * values.size());
      return blob;
    case CompressionCodec::kFp16:
    case CompressionCodec::kInt8: {
      const uint32_t block = settings.codec == CompressionCodec::kInt8 ? settings.block_size : 0;
      blob.resize(kDenseHeaderBytes + ValueBytes(settings.codec, n, block));
      PutHeader(blob.data(), settings.codec, CompressionCodec::kNone, block, n);
      if (EncodeValues(settings.codec, values.data(), n, block, blob.data() + kDenseHeaderBytes)) {
        return CheckFinite(values);
      }
      return blob;
    }
    case CompressionCodec::kTopK:
      return EncodeTopK(values, settings);
  }
  return Status::Internal("unreachable codec");
}

Result<CompressedHeader> ReadHeader(std::span<const uint8_t> blob) {
  if (blob.size() < kDenseHeaderBytes) {
    return Status::Malformed("a compressed blob of " + std::to_string(blob.size()) +
                             " bytes is shorter than its 8-byte header");
  }
  const uint8_t codec_id = blob[0];
  if (codec_id > static_cast<uint8_t>(CompressionCodec::kTopK)) {
    return Status::Malformed("unknown compression codec id " + std::to_string(codec_id));
  }
  CompressedHeader header;
  header.codec = static_cast<CompressionCodec>(codec_id);
  header.values = static_cast<CompressionCodec>(blob[1]);
  header.block_size = LoadLittleEndian<uint16_t>(blob.data() + 2);
  header.count = LoadLittleEndian<uint32_t>(blob.data() + 4);
  return header;
}

Status DecodeBlobInto(std::span<const uint8_t> blob, std::span<float> out) {
  auto header = ReadHeader(blob);
  if (!header.ok()) return header.status();
  const auto codec = header->codec;
  const auto value_id = static_cast<uint8_t>(header->values);
  const uint32_t block = header->block_size;
  const uint32_t count = header->count;
  if (count != out.size()) {
    return Status::LayoutMismatch(std::string("a ") + CompressionCodecName(codec) + " blob of " +
                                  std::to_string(count) + " values where " +
                                  std::to_string(out.size()) + " are expected");
  }
  // The codec that stores the values: top-k's own field, else the codec itself.
  const bool is_topk = codec == CompressionCodec::kTopK;
  if (is_topk ? (value_id != static_cast<uint8_t>(CompressionCodec::kFp16) &&
                 value_id != static_cast<uint8_t>(CompressionCodec::kInt8))
              : value_id != 0) {
    return Status::Malformed(std::string("a ") + CompressionCodecName(codec) +
                             " blob has value codec byte " + std::to_string(value_id) +
                             (is_topk ? " (allowed: 1 fp16, 2 int8)" : " (must be 0)"));
  }
  const auto value_codec = is_topk ? static_cast<CompressionCodec>(value_id) : codec;
  const bool uses_blocks = value_codec == CompressionCodec::kInt8;
  if (uses_blocks ? (block < kMinInt8BlockSize || block > kMaxInt8BlockSize) : block != 0) {
    return Status::Malformed(std::string("a ") + CompressionCodecName(codec) +
                             " blob has block size " + std::to_string(block) +
                             (uses_blocks ? " (allowed: 64..256)" : " (must be 0)"));
  }
  if (is_topk) return DecodeTopK(blob, value_codec, block, out);

  const size_t payload = blob.size() - kDenseHeaderBytes;
  const size_t expected_payload =
      codec == CompressionCodec::kNone ? 4 * out.size() : ValueBytes(codec, out.size(), block);
  if (payload != expected_payload) {
    return Status::Malformed(std::string("a ") + CompressionCodecName(codec) + " blob of " +
                             std::to_string(count) + " values has " + std::to_string(payload) +
                             " payload bytes, not " + std::to_string(expected_payload));
  }
  const uint8_t* in = blob.data() + kDenseHeaderBytes;
  if (codec == CompressionCodec::kNone) {
    if (payload > 0) std::memcpy(out.data(), in, payload);
    return CheckFinite(out);
  }
  return DecodeValues(codec, in, out.size(), block, out.data());
}

}  // namespace
}  // namespace compression_internal

NameTable<CompressionCodec> CompressionCodecNames() { return compression_internal::kCodecNames; }

const char* CompressionCodecName(CompressionCodec codec) {
  for (const auto& [name, value] : compression_internal::kCodecNames) {
    if (value == codec) return name.data();
  }
  return "unknown";
}

Result<CompressionCodec> CompressionCodecNamed(std::string_view name) {
  if (auto codec = ValueNamed(CompressionCodecNames(), name)) return *codec;
  return Status::InvalidArgument("unknown compression codec '" + std::string(name) +
                                 "' (allowed: none, fp16, int8, topk)");
}

Status ValidateCompression(const CompressionSettings& settings) {
  const bool uses_blocks = settings.codec == CompressionCodec::kInt8 ||
                           (settings.codec == CompressionCodec::kTopK &&
                            settings.topk_values == CompressionCodec::kInt8);
  if (CompressionCodecName(settings.codec) == std::string_view("unknown")) {
    return Status::InvalidArgument("unknown compression codec #" +
                                   std::to_string(static_cast<int>(settings.codec)));
  }
  if (settings.codec == CompressionCodec::kTopK) {
    if (!(settings.topk_fraction > 0.0 && settings.topk_fraction <= 1.0)) {
      return Status::InvalidArgument("topk fraction " + std::to_string(settings.topk_fraction) +
                                     " is outside (0, 1]");
    }
    if (settings.topk_values != CompressionCodec::kFp16 &&
        settings.topk_values != CompressionCodec::kInt8) {
      return Status::InvalidArgument(std::string("topk values as '") +
                                     CompressionCodecName(settings.topk_values) +
                                     "' (allowed: fp16, int8)");
    }
  }
  if (uses_blocks &&
      (settings.block_size < kMinInt8BlockSize || settings.block_size > kMaxInt8BlockSize)) {
    return Status::InvalidArgument("int8 block size " + std::to_string(settings.block_size) +
                                   " is outside 64..256");
  }
  return Status::Ok();
}

size_t TopKCount(size_t count, double fraction) {
  if (count == 0) return 0;
  const double kept = std::round(fraction * static_cast<double>(count));
  if (!(kept >= 1.0)) return 1;
  return kept >= static_cast<double>(count) ? count : static_cast<size_t>(kept);
}

Result<std::vector<uint8_t>> EncodeCompressed(std::span<const float> values,
                                              const CompressionSettings& settings) {
  return compression_internal::EncodeBlob(values, settings);
}

Status DecodeCompressedInto(std::span<const uint8_t> blob, std::span<float> out) {
  return compression_internal::DecodeBlobInto(blob, out);
}

Result<CompressedHeader> ReadCompressedHeader(std::span<const uint8_t> blob) {
  return compression_internal::ReadHeader(blob);
}

Result<std::vector<float>> DecodeCompressed(std::span<const uint8_t> blob, size_t expected_count) {
  std::vector<float> values(expected_count);
  MESHLEARN_RETURN_IF_ERROR(DecodeCompressedInto(blob, values));
  return values;
}

uint32_t EstimateChecksum(std::span<const float> values) {
  // The host's float32 bytes are little-endian (base/little_endian.h).
  return Crc32(std::string_view(reinterpret_cast<const char*>(values.data()),
                                values.size() * sizeof(float)));
}

PublicEstimate::PublicEstimate(std::vector<float> start)
    : estimate_(std::move(start)), scratch_(estimate_.size()) {}

Result<std::vector<uint8_t>> PublicEstimate::EncodeUpdate(std::span<const float> model,
                                                          const CompressionSettings& settings) {
  if (model.size() != estimate_.size()) {
    return Status::LayoutMismatch("a model of " + std::to_string(model.size()) +
                                  " values for an estimate of " + std::to_string(estimate_.size()));
  }
  for (size_t i = 0; i < model.size(); ++i) scratch_[i] = model[i] - estimate_[i];
  auto update = EncodeCompressed(scratch_, settings);
  if (!update.ok()) return update.status().WithContext("the model minus its public estimate");
  // The owner applies the very bytes it sends, so that it and every requester agree on x̂.
  MESHLEARN_RETURN_IF_ERROR(Apply(*update));
  return update;
}

Status PublicEstimate::Apply(std::span<const uint8_t> update) {
  MESHLEARN_RETURN_IF_ERROR(DecodeCompressedInto(update, scratch_));
  for (size_t i = 0; i < scratch_.size(); ++i) scratch_[i] += estimate_[i];
  MESHLEARN_RETURN_IF_ERROR(CheckFinite(scratch_).WithContext("the estimate plus the update"));
  estimate_.swap(scratch_);
  return Status::Ok();
}

}  // namespace meshlearn
