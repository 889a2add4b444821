#pragma once
// Compressed float blobs: the codecs a model or an update can travel in (issue 31), and the public
// estimate that top-k's error feedback runs on. Pure float math over spans: no torch, no msgpack,
// no sockets, so that the node, the simulator and the tests share one implementation.
//
// The byte layout of every codec is specified in protocol/PROTOCOL.md, "Compressed blob encodings
// (version 3)". A version-3 Model carries its weights (and update) in fp16 or int8 blobs
// (protocol/codec.h, Model.encoding); a top-k Model carries a chain of top-k updates of the owner's
// public estimate (Model.chain, node/logic/public_estimates.h).
//
// Rules:
// 1. A blob is self-describing: a small header names the codec, its parameters and the element
//    count, so a decoder needs nothing but the count it expects.
//    Rationale: the receiver checks the count against its own model's layout, the same way it
//    checks an uncompressed blob's size, and needs no side channel for the codec's parameters.
// 2. Decoding never trusts the bytes: every length, count, parameter, scale and index is checked
//    before use; a bad blob gives a non-OK Status (never a crash), and an accepted blob decodes to
//    finite values only.
// 3. Decoding is a pure function of the bytes: one multiplication per int8 value, exact
//    conversions for fp16 and float32, no sums, so every requester of a blob, on any machine,
//    reconstructs the same bits. (Encoding is lossy: re-encoding decoded values may give other
//    bytes.)
//    Rationale: the public estimate (below) only works if the owner and every requester agree on
//    x̂ to the bit.
// 4. Memory-bandwidth loops: the dense codecs run in one streaming pass over the values, with no
//    allocation per element.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/named_value.h"
#include "base/status.h"

namespace meshlearn {

// The codecs. The numbers are the codec id of a blob's header and are frozen (PROTOCOL.md).
enum class CompressionCodec : uint8_t {
  kNone = 0,  // float32 as is: 4 bytes per value
  kFp16 = 1,  // IEEE-754 binary16, round to nearest even, saturated at +-65504: 2 bytes per value
  kInt8 = 2,  // blockwise symmetric int8: a float32 scale per block, round to nearest
  kTopK = 3,  // the largest magnitudes only: values in fp16 or int8, indices delta-coded
};

// The config names of the codecs ("none", "fp16", "int8", "topk"), in codec-number order.
NameTable<CompressionCodec> CompressionCodecNames();

// The codec's config name ("none", "fp16", "int8", "topk"), or "unknown" for another number.
const char* CompressionCodecName(CompressionCodec codec);

// The codec named `name` (as CompressionCodecName writes it); kInvalidArgument naming the allowed
// names otherwise.
Result<CompressionCodec> CompressionCodecNamed(std::string_view name);

// Smallest and largest int8 block size, and the default (PROTOCOL.md).
inline constexpr uint32_t kMinInt8BlockSize = 64;
inline constexpr uint32_t kMaxInt8BlockSize = 256;
inline constexpr uint32_t kDefaultInt8BlockSize = 128;

// How to compress. Only the fields of the chosen codec matter.
struct CompressionSettings {
  CompressionCodec codec = CompressionCodec::kNone;
  // int8, and top-k with int8 values: values per scale, kMinInt8BlockSize..kMaxInt8BlockSize.
  uint32_t block_size = kDefaultInt8BlockSize;
  // top-k: the fraction of the coordinates kept, in (0, 1]. k = round(fraction * n), at least 1
  // when n > 0.
  double topk_fraction = 0.01;
  // top-k: how the kept values are stored, kFp16 or kInt8.
  CompressionCodec topk_values = CompressionCodec::kInt8;
  bool operator==(const CompressionSettings&) const = default;
};

// OK when `settings` can be used to encode; kInvalidArgument naming the bad field otherwise.
Status ValidateCompression(const CompressionSettings& settings);

// The number of coordinates top-k with `fraction` keeps out of `count`: round(fraction * count),
// at least 1 when count > 0, at most count.
size_t TopKCount(size_t count, double fraction);

// Encodes `values` as one blob of `settings.codec`. Fails with kInvalidArgument for bad settings
// or more than 2^32 - 1 values, and kNonFinite when a value is NaN or Inf. fp16 (top-k's fp16
// values too) saturates magnitudes above 65504 to 65504. Top-k keeps the k largest magnitudes;
// among equal magnitudes at the threshold, the lowest indices.
Result<std::vector<uint8_t>> EncodeCompressed(std::span<const float> values,
                                              const CompressionSettings& settings);

// Decodes `blob` into `out`, whose size is the element count the caller expects; every element
// of `out` is written (top-k: zero where no index was sent). On any error `out` may hold partial
// values. Errors: kLayoutMismatch when the blob's count differs from out.size(); kMalformed for a
// bad header, a length that disagrees with it, a bad block size or k, or bad indices (past the
// count, not strictly increasing, or overlong / unterminated varints); kNonFinite for a NaN or
// Inf scale or fp16 value, or a scale so large that a value would overflow.
Status DecodeCompressedInto(std::span<const uint8_t> blob, std::span<float> out);

// Decodes `blob`, which must hold `expected_count` elements, into a new vector (errors as
// DecodeCompressedInto).
Result<std::vector<float>> DecodeCompressed(std::span<const uint8_t> blob, size_t expected_count);

// What a blob's header says (PROTOCOL.md): its codec, the codec of top-k's values (kNone for the
// dense codecs), its block size (0 when its values are not int8) and its element count.
struct CompressedHeader {
  CompressionCodec codec = CompressionCodec::kNone;
  CompressionCodec values = CompressionCodec::kNone;
  uint32_t block_size = 0;
  uint32_t count = 0;
};

// Reads the header of `blob` without checking anything after it (DecodeCompressedInto checks the
// whole blob). Errors: kMalformed when the blob is shorter than the 8-byte header or its codec id
// is unknown.
// Rationale: a receiver checks the codec a message announced and the count before it allocates
// the values a blob decodes to.
Result<CompressedHeader> ReadCompressedHeader(std::span<const uint8_t> blob);

// The checksum of an estimate (EstimateChain::checksum): the CRC-32 (base/crc32.h) of its values'
// little-endian float32 bytes. The same on every machine.
uint32_t EstimateChecksum(std::span<const float> values);

// A model's public estimate x̂ (CHOCO-gossip, Koloskova et al. 2019): the model as every requester
// reconstructs it from the compressed updates the owner sent since a shared start. The owner
// sends Q(x − x̂) and adds exactly what it sent to x̂, so the part that compression dropped stays
// in x − x̂ and is sent later (error feedback): nothing is lost, only delayed.
//
// The owner calls EncodeUpdate with its model each time it publishes; a requester holding the
// same x̂ calls Apply with each update blob in order and ends with the owner's x̂, bit for bit.
// Memory: two float vectors of the model's size (x̂ and a scratch buffer).
class PublicEstimate {
 public:
  // An estimate starting at `start` (e.g. the shared initial model, which every node knows).
  explicit PublicEstimate(std::vector<float> start);

  // The current estimate x̂.
  std::span<const float> values() const { return estimate_; }

  // Encodes Q(model − x̂) with `settings` and applies that blob to x̂ as Apply() does; returns the
  // blob. Errors: kLayoutMismatch when model.size() differs from x̂'s, and EncodeCompressed's and
  // Apply()'s; on error x̂ is unchanged.
  Result<std::vector<uint8_t>> EncodeUpdate(std::span<const float> model,
                                            const CompressionSettings& settings);

  // Adds the values `update` decodes to (DecodeCompressedInto, expecting x̂'s size) to x̂.
  // Errors: DecodeCompressedInto's, and kNonFinite when a sum overflows; on error x̂ is unchanged.
  Status Apply(std::span<const uint8_t> update);

 private:
  std::vector<float> estimate_;
  std::vector<float> scratch_;  // the difference to encode, then the next estimate
};

}  // namespace meshlearn
