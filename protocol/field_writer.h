#pragma once
// Writing a described struct (protocol/messages.h, "One description per struct"): BlobEncoder
// runs the description for its blob frames (compressed in the struct's encoding when it can be,
// float32 otherwise), then FieldWriter runs it again for the msgpack array, whose optional
// fields depend on how the blobs went. Internal to the codec: it exposes msgpack.

#include <msgpack.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/float_array.h"
#include "protocol/field_count.h"
#include "protocol/frame.h"
#include "protocol/messages.h"

namespace meshlearn::codec_internal {

// Collects a description's blob slots and encodes them.
class BlobEncoder : public NoFields {
 public:
  void Encoding(const char* /*name*/, const CompressionSettings& encoding, BlobContents contents) {
    encoding_ = &encoding;
    contents_ = contents;
  }
  void Chain(const char* /*name*/, const std::optional<EstimateChain>& chain) {
    chain_ = chain ? &*chain : nullptr;
  }
  void Blob(const char* /*name*/, const FloatArray& values, uint64_t /*count*/) { Add(values); }
  void Blob(const char* /*name*/, const std::optional<FloatArray>& values, uint64_t /*count*/) {
    if (values) Add(*values);
  }

  // Appends the blob frames to `frames` and returns the codec they travel in: the Encoding
  // field's codec when it is one its contents may travel in and every blob can be encoded in it
  // (with top-k, the chain replaces the first blob and the others travel as int8); otherwise
  // none, and every blob is a view of its float32 values (a NaN or Inf, which the receiver
  // refuses anyway, travels raw).
  CompressionCodec Finish(std::vector<Frame>* frames) const;

 private:
  void Add(const FloatArray& values);
  // Appends the compressed blobs; false, with some appended, when one cannot be encoded.
  bool Compress(std::vector<Frame>* frames) const;

  const CompressionSettings* encoding_ = nullptr;
  BlobContents contents_ = BlobContents::kModel;
  const EstimateChain* chain_ = nullptr;
  // A message has at most max_frames - 2 = 2 blob frames (protocol/limits.h).
  std::array<const FloatArray*, 2> slots_ = {};
  size_t slot_count_ = 0;
};

// Writes a description's fields as one msgpack array: the required ones, then the optional ones
// up to the last that is set (FieldCounter). Blob slots are BlobEncoder's.
class FieldWriter : public NoFields {
 public:
  // A writer appending to `buffer`; `sent` is the codec the blobs travel in (BlobEncoder::Finish).
  FieldWriter(msgpack::sbuffer& buffer, CompressionCodec sent = CompressionCodec::kNone)
      : buffer_(buffer), packer_(buffer), sent_(sent) {}

  // Writes `s` by its description: the array header, then its fields.
  template <class S>
  void Write(const S& s) {
    FieldCounter counter(sent_);
    DescribeFields(counter, s);
    packer_.pack_array(counter.written());
    fields_left_ = counter.written();
    DescribeFields(*this, s);
  }

  template <class T>
  void Uint(const char* /*name*/, T value, uint64_t /*max*/) {
    if (Take()) packer_.pack_uint64(static_cast<uint64_t>(value));
  }
  void Count(const char* /*name*/, uint32_t value, uint32_t Limits::* /*limit*/) {
    if (Take()) packer_.pack_uint64(value);
  }
  void Int(const char* /*name*/, int64_t value) {
    if (Take()) packer_.pack_int64(value);
  }
  void Bool(const char* /*name*/, bool value) {
    if (Take()) packer_.pack(value);
  }
  void Float64(const char* name, double value);
  void String(const char* /*name*/, const std::string& value) {
    if (Take()) packer_.pack(value);
  }
  void AnyString(const char* name, const std::string& value) { String(name, value); }
  void NodeId(const char* name, const std::string& value) { String(name, value); }
  void NodeIds(const char* name, const std::optional<std::vector<std::string>>& ids,
               uint32_t Limits::*limit);
  void Codecs(const char* name, const std::vector<CompressionCodec>& codecs);
  template <class S>
  void Struct(const char* /*name*/, const S& s) {
    if (Take()) FieldWriter(buffer_).Write(s);
  }
  template <class S>
  void Struct(const char* /*name*/, const std::optional<S>& s) {
    if (Take()) FieldWriter(buffer_).Write(s ? *s : S{});
  }
  template <class S>
  void List(const char* /*name*/, const std::vector<S>& list, uint32_t Limits::* /*limit*/) {
    if (!Take()) return;
    packer_.pack_array(static_cast<uint32_t>(list.size()));
    for (const S& s : list) FieldWriter(buffer_).Write(s);
  }
  void Layout(const char* name, const ParamLayout& layout) {
    List(name, layout.tensors, &Limits::max_tensors);
  }
  void Dims(const char* name, const std::vector<int64_t>& dims);
  template <class T>
  void Present(const char* name, const std::optional<T>& values) {
    Bool(name, values.has_value());
  }
  void Encoding(const char* name, const CompressionSettings& encoding, BlobContents contents);
  void Chain(const char* name, const std::optional<EstimateChain>& chain);

 private:
  // Claims the next field; false when the array ends before it (an optional field not written).
  bool Take() {
    if (fields_left_ == 0) return false;
    --fields_left_;
    return true;
  }

  msgpack::sbuffer& buffer_;
  msgpack::packer<msgpack::sbuffer> packer_;
  CompressionCodec sent_;
  uint32_t fields_left_ = 0;
};

}  // namespace meshlearn::codec_internal
