#pragma once
// The bytes of blob frames (PROTOCOL.md, "Frames", "Compressed models", "Top-k update chains"):
// which codecs a blob may travel in, how a float32 or compressed blob is checked as it is read,
// and the length-prefixed chain frame of a top-k Model. Internal to the codec (field_writer.h and
// field_reader.h run them for the Blob and Chain fields of a description); msgpack-free.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/float_array.h"
#include "base/status.h"
#include "protocol/compression.h"
#include "protocol/frame.h"
#include "protocol/messages.h"

namespace meshlearn::codec_internal {

// The codecs other than none that blobs of `contents` may travel in: ModelCodecs() or
// EmbeddingCodecs() (protocol/codec.h).
std::span<const CompressionCodec> CodecsOf(BlobContents contents);

// True when `codec` is one of CodecsOf(contents). None is not: it is the field left unwritten.
bool Carries(BlobContents contents, CompressionCodec codec);

// Why an Encoding field's number `number` is refused for `contents`, after the field's name:
// " = 7 is not a codec of models (allowed: 0 none, 1 fp16, 2 int8, 3 topk)".
std::string NotACodecOf(BlobContents contents, uint64_t number);

// Reads blob frame `frame` as exactly `expected_floats` finite float32 values (layout_mismatch
// naming `what` for another size, non_finite for a NaN or Inf).
Result<FloatArray> ReadFloat32Blob(const Frame& frame, uint64_t expected_floats,
                                   const std::string& what);

// Reads blob frame `frame`, announced as `codec` (fp16 or int8), as exactly `expected_floats`
// values, and the blob's block size into `block_size`. Checks, in this order: the header
// (malformed), its codec against `codec` (malformed), its count against the layout
// (layout_mismatch), at least one byte per value (malformed), then the whole blob
// (DecodeCompressedInto).
Result<FloatArray> ReadCompressedBlob(const Frame& frame, CompressionCodec codec,
                                      uint64_t expected_floats, const std::string& what,
                                      uint32_t* block_size);

// The chain frame of a top-k Model: the base as a codec-none blob when there is one, then the
// updates, each after its length as a little-endian uint32; nullopt when the base cannot be
// encoded (a NaN or Inf).
std::optional<std::vector<uint8_t>> ChainFrameOf(const EstimateChain& chain);

// Reads the chain frame `frame` into `chain`, whose rounds (field 7) are read: the base, a
// codec-none blob of `expected_floats` finite values, first when `has_base`, then top-k blobs of
// `expected_floats` values, their contents checked when applied (PublicEstimate::Apply). `what`
// names the chain ("Model.chain"). Checks (PROTOCOL.md, "Top-k update chains"): each item's
// length, its header's codec and count, the base's values, a base when `has_base`, and at most
// to_round - from_round updates.
Status ReadChainFrame(std::span<const uint8_t> frame, bool has_base, uint64_t expected_floats,
                      const std::string& what, EstimateChain* chain);

}  // namespace meshlearn::codec_internal
