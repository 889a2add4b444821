#include "protocol/field_writer.h"

#include <cstring>
#include <utility>

#include "protocol/blob_frames.h"

namespace meshlearn::codec_internal {

// ---------------------------------------------------------------------------------------------
// BlobEncoder

void BlobEncoder::Add(const FloatArray& values) {
  if (slot_count_ < slots_.size()) slots_[slot_count_++] = &values;
}

bool BlobEncoder::Compress(std::vector<Frame>* frames) const {
  CompressionSettings settings = *encoding_;
  size_t first = 0;
  if (settings.codec == CompressionCodec::kTopK) {
    if (chain_ == nullptr) return false;
    auto chain = ChainFrameOf(*chain_);
    if (!chain) return false;
    frames->emplace_back(std::move(*chain));
    first = 1;
    settings.codec = CompressionCodec::kInt8;
  }
  for (size_t i = first; i < slot_count_; ++i) {
    auto blob = EncodeCompressed(slots_[i]->view(), settings);
    if (!blob.ok()) return false;
    frames->emplace_back(std::move(*blob));
  }
  return true;
}

CompressionCodec BlobEncoder::Finish(std::vector<Frame>* frames) const {
  const size_t before = frames->size();
  if (encoding_ != nullptr && Carries(contents_, encoding_->codec)) {
    if (Compress(frames)) return encoding_->codec;
    frames->resize(before);
  }
  for (size_t i = 0; i < slot_count_; ++i) frames->push_back(BlobOf(*slots_[i]));
  return CompressionCodec::kNone;
}

// ---------------------------------------------------------------------------------------------
// FieldWriter

void FieldWriter::Float64(const char* /*name*/, double value) {
  if (!Take()) return;
  // msgpack float64: 0xcb and 8 big-endian bytes. Rationale: msgpack-c's pack_double writes
  // integral values as integers, which would make a float field's wire type depend on its
  // value; PROTOCOL.md promises float64.
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  char bytes[9];
  bytes[0] = static_cast<char>(0xcb);
  for (int i = 0; i < 8; ++i) bytes[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
  buffer_.write(bytes, sizeof(bytes));
}

void FieldWriter::NodeIds(const char* /*name*/, const std::optional<std::vector<std::string>>& ids,
                          uint32_t Limits::* /*limit*/) {
  if (!Take()) return;
  packer_.pack_array(ids ? static_cast<uint32_t>(ids->size()) : 0);
  if (ids) {
    for (const std::string& id : *ids) packer_.pack(id);
  }
}

void FieldWriter::Codecs(const char* /*name*/, const std::vector<CompressionCodec>& codecs) {
  if (!Take()) return;
  packer_.pack_array(static_cast<uint32_t>(codecs.size()));
  for (CompressionCodec codec : codecs) packer_.pack_uint8(static_cast<uint8_t>(codec));
}

void FieldWriter::Dims(const char* /*name*/, const std::vector<int64_t>& dims) {
  if (!Take()) return;
  packer_.pack_array(static_cast<uint32_t>(dims.size()));
  for (int64_t d : dims) packer_.pack_int64(d);
}

void FieldWriter::Encoding(const char* /*name*/, const CompressionSettings& /*encoding*/,
                           BlobContents /*contents*/) {
  if (Take()) packer_.pack_uint8(static_cast<uint8_t>(sent_));
}

void FieldWriter::Chain(const char* name, const std::optional<EstimateChain>& chain) {
  Struct(name, chain);
}

}  // namespace meshlearn::codec_internal
