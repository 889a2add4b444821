#include "protocol/blob_frames.h"

#include <algorithm>
#include <utility>

#include "base/little_endian.h"
#include "protocol/codec.h"

namespace meshlearn {

std::span<const CompressionCodec> EmbeddingCodecs() {
  static constexpr CompressionCodec kEmbeddingCodecs[] = {CompressionCodec::kFp16,
                                                          CompressionCodec::kInt8};
  return kEmbeddingCodecs;
}

std::span<const CompressionCodec> ModelCodecs() {
  static constexpr CompressionCodec kModelCodecs[] = {
      CompressionCodec::kFp16, CompressionCodec::kInt8, CompressionCodec::kTopK};
  return kModelCodecs;
}

namespace codec_internal {

std::span<const CompressionCodec> CodecsOf(BlobContents contents) {
  return contents == BlobContents::kModel ? ModelCodecs() : EmbeddingCodecs();
}

bool Carries(BlobContents contents, CompressionCodec codec) {
  const auto codecs = CodecsOf(contents);
  return std::find(codecs.begin(), codecs.end(), codec) != codecs.end();
}

std::string NotACodecOf(BlobContents contents, uint64_t number) {
  std::string allowed = "0 none";
  for (CompressionCodec codec : CodecsOf(contents)) {
    allowed += ", " + std::to_string(static_cast<int>(codec)) + " " + CompressionCodecName(codec);
  }
  return " = " + std::to_string(number) + " is not a codec of " +
         (contents == BlobContents::kModel ? "models" : "embeddings") + " (allowed: " + allowed +
         ")";
}

Result<FloatArray> ReadFloat32Blob(const Frame& frame, uint64_t expected_floats,
                                   const std::string& what) {
  // Rationale: expected_floats * sizeof(float) wraps around for a layout of 2^62 or more floats,
  // which would let an empty blob pass; divide the frame size instead.
  if (frame.size() % sizeof(float) != 0 || frame.size() / sizeof(float) != expected_floats) {
    return Status::LayoutMismatch(what + " blob is " + std::to_string(frame.size()) +
                                  " bytes, its layout needs " + std::to_string(expected_floats) +
                                  " float32 values");
  }
  auto array = FloatArrayOf(frame);
  if (!array.ok()) return array.status();
  MESHLEARN_RETURN_IF_ERROR(CheckFinite(array->view()).WithContext(what));
  return array;
}

Result<FloatArray> ReadCompressedBlob(const Frame& frame, CompressionCodec codec,
                                      uint64_t expected_floats, const std::string& what,
                                      uint32_t* block_size) {
  auto header = ReadCompressedHeader(frame.bytes());
  if (!header.ok()) return header.status().WithContext(what);
  if (header->codec != codec) {
    return Status::Malformed(what + " blob is a " + CompressionCodecName(header->codec) +
                             " blob, the encoding field says " + CompressionCodecName(codec));
  }
  if (header->count != expected_floats) {
    return Status::LayoutMismatch(what + " blob holds " + std::to_string(header->count) +
                                  " values, its layout needs " + std::to_string(expected_floats));
  }
  // Rationale: fp16 and int8 store every value in at least one byte; a shorter blob is refused
  // before its values are allocated.
  if (frame.size() < expected_floats) {
    return Status::Malformed(what + " blob of " + std::to_string(frame.size()) +
                             " bytes is too short for " + std::to_string(expected_floats) +
                             " values");
  }
  std::vector<float> values(expected_floats);
  MESHLEARN_RETURN_IF_ERROR(DecodeCompressedInto(frame.bytes(), values).WithContext(what));
  *block_size = header->block_size;
  return FloatArray::Own(std::move(values));
}

namespace {

// Appends `blob` to a chain frame's bytes: its length as a little-endian uint32, then the blob.
void AppendChainItem(std::span<const uint8_t> blob, std::vector<uint8_t>* out) {
  AppendLittleEndian(*out, static_cast<uint32_t>(blob.size()));
  out->insert(out->end(), blob.begin(), blob.end());
}

// Reads `blob`, one item of a chain named `what`: the base when `is_base` (a codec-none blob,
// decoded into chain->base), else a top-k update (kept as bytes), of `expected_floats` values.
Status ReadChainItem(std::span<const uint8_t> blob, bool is_base, uint64_t expected_floats,
                     const std::string& what, EstimateChain* chain) {
  auto header = ReadCompressedHeader(blob);
  if (!header.ok()) return header.status().WithContext(what);
  const CompressionCodec want = is_base ? CompressionCodec::kNone : CompressionCodec::kTopK;
  if (header->codec != want) {
    return Status::Malformed(what + " is a " + CompressionCodecName(header->codec) +
                             " blob; allowed: " + CompressionCodecName(want));
  }
  if (header->count != expected_floats) {
    return Status::LayoutMismatch(what + " holds " + std::to_string(header->count) +
                                  " values, the layout needs " + std::to_string(expected_floats));
  }
  if (is_base) {
    auto base = DecodeCompressed(blob, expected_floats);
    if (!base.ok()) return base.status().WithContext(what);
    chain->base = FloatArray::Own(std::move(*base));
  } else {
    chain->updates.emplace_back(blob.begin(), blob.end());
  }
  return Status::Ok();
}

}  // namespace

std::optional<std::vector<uint8_t>> ChainFrameOf(const EstimateChain& chain) {
  std::vector<uint8_t> bytes;
  if (chain.base) {
    auto base = EncodeCompressed(chain.base->view(), CompressionSettings{});
    if (!base.ok()) return std::nullopt;
    AppendChainItem(*base, &bytes);
  }
  for (const std::vector<uint8_t>& update : chain.updates) AppendChainItem(update, &bytes);
  return bytes;
}

Status ReadChainFrame(std::span<const uint8_t> frame, bool has_base, uint64_t expected_floats,
                      const std::string& what, EstimateChain* chain) {
  std::span<const uint8_t> rest = frame;
  for (size_t item = 0; !rest.empty(); ++item) {
    const std::string item_what = what + " item " + std::to_string(item);
    if (rest.size() < 4) {
      return Status::Malformed(item_what + ": fewer than 4 bytes for its length");
    }
    const uint32_t length = LoadLittleEndian<uint32_t>(rest.data());
    rest = rest.subspan(4);
    if (length > rest.size()) {
      return Status::Malformed(item_what + ": length " + std::to_string(length) + " but " +
                               std::to_string(rest.size()) + " bytes are left");
    }
    MESHLEARN_RETURN_IF_ERROR(ReadChainItem(rest.first(length), has_base && item == 0,
                                            expected_floats, item_what, chain));
    rest = rest.subspan(length);
  }
  if (has_base && !chain->base) return Status::Malformed(what + ": has_base without a base");
  // from_round <= to_round (checked with field 7): the difference fits, computed without overflow.
  const uint64_t rounds =
      static_cast<uint64_t>(chain->to_round) - static_cast<uint64_t>(chain->from_round);
  if (chain->updates.size() > rounds) {
    return Status::Malformed(what + ": " + std::to_string(chain->updates.size()) +
                             " updates for rounds " + std::to_string(chain->from_round) + " to " +
                             std::to_string(chain->to_round));
  }
  return Status::Ok();
}

}  // namespace codec_internal
}  // namespace meshlearn
