#include "protocol/field_reader.h"

#include <cmath>
#include <limits>

#include "protocol/blob_frames.h"
#include "protocol/wire_text.h"

namespace meshlearn::codec_internal {

// ---------------------------------------------------------------------------------------------
// Fields: one msgpack field at a time, named on error.

std::string Fields::What() const {
  std::string what = parent_ ? parent_->Name(label_) : std::string(label_);
  if (index_ >= 0) what += "[" + std::to_string(index_) + "]";
  return what;
}

Result<Fields> Fields::Of(Fields fields, uint32_t min_size) {
  const msgpack::object& object = fields.object_;
  if (object.type != msgpack::type::ARRAY) {
    return Status::Malformed(fields.What() + " must be a msgpack array");
  }
  if (object.via.array.size < min_size) {
    return Status::Malformed(fields.What() + " has " + std::to_string(object.via.array.size) +
                             " fields, expected at least " + std::to_string(min_size));
  }
  return fields;
}

Status Fields::Uint(uint32_t i, const char* field, uint64_t max, uint64_t* out) const {
  const msgpack::object& o = at(i);
  if (o.type != msgpack::type::POSITIVE_INTEGER) {
    return Status::Malformed(Name(field) + " must be a non-negative integer");
  }
  if (o.via.u64 > max) {
    return Status::Malformed(Name(field) + " = " + std::to_string(o.via.u64) +
                             " exceeds its maximum " + std::to_string(max));
  }
  *out = o.via.u64;
  return Status::Ok();
}

Status Fields::Count(uint32_t i, const char* field, uint64_t max, uint64_t* out) const {
  MESHLEARN_RETURN_IF_ERROR(Uint(i, field, UINT64_MAX, out));
  if (*out > max) {
    return Status::TooMany(Name(field) + " = " + std::to_string(*out) + " is above its limit " +
                           std::to_string(max));
  }
  return Status::Ok();
}

Status Fields::Int(uint32_t i, const char* field, int64_t* out) const {
  const msgpack::object& o = at(i);
  if (o.type == msgpack::type::NEGATIVE_INTEGER) {
    *out = o.via.i64;
    return Status::Ok();
  }
  if (o.type == msgpack::type::POSITIVE_INTEGER &&
      o.via.u64 <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    *out = static_cast<int64_t>(o.via.u64);
    return Status::Ok();
  }
  return Status::Malformed(Name(field) + " must be a signed 64-bit integer");
}

Status Fields::Bool(uint32_t i, const char* field, bool* out) const {
  const msgpack::object& o = at(i);
  if (o.type != msgpack::type::BOOLEAN) return Status::Malformed(Name(field) + " must be a bool");
  *out = o.via.boolean;
  return Status::Ok();
}

Status Fields::Double(uint32_t i, const char* field, double* out) const {
  // Any msgpack number is accepted (other encoders may shorten integral floats); this encoder
  // always writes float64.
  const msgpack::object& o = at(i);
  switch (o.type) {
    case msgpack::type::FLOAT64:
    case msgpack::type::FLOAT32:
      if (!std::isfinite(o.via.f64)) return Status::NonFinite(Name(field) + " is NaN or Inf");
      *out = o.via.f64;
      return Status::Ok();
    case msgpack::type::POSITIVE_INTEGER:
      *out = static_cast<double>(o.via.u64);
      return Status::Ok();
    case msgpack::type::NEGATIVE_INTEGER:
      *out = static_cast<double>(o.via.i64);
      return Status::Ok();
    default:
      return Status::Malformed(Name(field) + " must be a number");
  }
}

Status Fields::RawString(uint32_t i, const char* field, uint32_t max_bytes,
                         std::string* out) const {
  const msgpack::object& o = at(i);
  if (o.type != msgpack::type::STR) return Status::Malformed(Name(field) + " must be a string");
  if (o.via.str.size > max_bytes) {
    return Status::TooLarge(Name(field) + " is " + std::to_string(o.via.str.size) +
                            " bytes, the limit is " + std::to_string(max_bytes));
  }
  out->assign(o.via.str.ptr, o.via.str.size);
  return Status::Ok();
}

Status Fields::String(uint32_t i, const char* field, uint32_t max_bytes, std::string* out) const {
  MESHLEARN_RETURN_IF_ERROR(RawString(i, field, max_bytes, out));
  if (!IsValidUtf8(*out)) return Status::Malformed(Name(field) + " is not valid UTF-8");
  return Status::Ok();
}

Status Fields::NodeId(uint32_t i, const char* field, std::string* out) const {
  MESHLEARN_RETURN_IF_ERROR(RawString(i, field, UINT32_MAX, out));  // frames cap strings
  if (!IsNodeId(*out)) {
    return Status::InvalidArgument(Name(field) + " (" + std::to_string(out->size()) +
                                   " bytes) is not a node id: " + kNodeIdRule);
  }
  return Status::Ok();
}

Status Fields::List(uint32_t i, const char* field, uint32_t max_count,
                    const msgpack::object** items, uint32_t* count) const {
  const msgpack::object& o = at(i);
  if (o.type != msgpack::type::ARRAY) return Status::Malformed(Name(field) + " must be an array");
  if (o.via.array.size > max_count) {
    return Status::TooMany(Name(field) + " has " + std::to_string(o.via.array.size) +
                           " entries, the limit is " + std::to_string(max_count));
  }
  *items = o.via.array.ptr;
  *count = o.via.array.size;
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// FieldReader: the kinds of field.

void FieldReader::Count(const char* name, uint32_t& out, uint32_t Limits::*limit) {
  uint32_t i;
  uint64_t value;
  if (Take(&i) && Check(fields_.Count(i, name, context_.limits.*limit, &value))) {
    out = static_cast<uint32_t>(value);
  }
}

void FieldReader::Int(const char* name, int64_t& out) {
  uint32_t i;
  if (Take(&i)) Check(fields_.Int(i, name, &out));
}

void FieldReader::Bool(const char* name, bool& out) {
  uint32_t i;
  if (Take(&i)) Check(fields_.Bool(i, name, &out));
}

void FieldReader::Float64(const char* name, double& out) {
  uint32_t i;
  if (Take(&i)) Check(fields_.Double(i, name, &out));
}

void FieldReader::String(const char* name, std::string& out) {
  uint32_t i;
  if (Take(&i)) Check(fields_.String(i, name, context_.limits.max_string_bytes, &out));
}

void FieldReader::AnyString(const char* name, std::string& out) {
  uint32_t i;
  if (Take(&i)) Check(fields_.RawString(i, name, context_.limits.max_string_bytes, &out));
}

void FieldReader::NodeId(const char* name, std::string& out) {
  uint32_t i;
  if (Take(&i)) Check(fields_.NodeId(i, name, &out));
}

void FieldReader::NodeIds(const char* name, std::optional<std::vector<std::string>>& out,
                          uint32_t Limits::*limit) {
  uint32_t i;
  const msgpack::object* items;
  uint32_t count;
  if (!Take(&i) || !Check(fields_.List(i, name, context_.limits.*limit, &items, &count))) return;
  // The entries are named "<struct>.<name>[k]".
  const std::string what = fields_.What();
  auto ids = Fields::Of(fields_.at(i), what.c_str(), 0);
  if (!Check(ids.status())) return;
  out.emplace(count);
  for (uint32_t k = 0; k < count; ++k) {
    const std::string entry = std::string(name) + "[" + std::to_string(k) + "]";
    if (!Check(ids->NodeId(k, entry.c_str(), &(*out)[k]))) return;
  }
}

void FieldReader::Codecs(const char* name, std::vector<CompressionCodec>& out) {
  uint32_t i;
  const msgpack::object* items;
  uint32_t count;
  if (!Take(&i) || !Check(fields_.List(i, name, kMaxAcceptedCodecs, &items, &count))) return;
  // The entries are named "<struct>.<name>.<k>".
  const std::string list = fields_.Name(name);
  auto codecs = Fields::Of(fields_.at(i), list.c_str(), 0);
  if (!Check(codecs.status())) return;
  out.resize(count);
  for (uint32_t k = 0; k < count; ++k) {
    uint64_t codec;
    if (!Check(codecs->Uint(k, std::to_string(k).c_str(), UINT8_MAX, &codec))) return;
    out[k] = static_cast<CompressionCodec>(codec);  // unknown codecs are kept
  }
}

void FieldReader::Layout(const char* name, ParamLayout& out) {
  uint32_t i;
  if (!Take(&i) || !ReadList(i, name, context_.limits.max_tensors, out.tensors)) return;
  if (!Check(out.Validate())) return;
  if (context_.expected_layout != nullptr) Check(out.Matches(*context_.expected_layout));
}

void FieldReader::Dims(const char* name, std::vector<int64_t>& out) {
  uint32_t i;
  const msgpack::object* dims;
  uint32_t rank;
  if (!Take(&i) || !Check(fields_.List(i, name, context_.limits.max_tensor_rank, &dims, &rank))) {
    return;
  }
  for (uint32_t d = 0; d < rank; ++d) {
    if (dims[d].type != msgpack::type::POSITIVE_INTEGER || dims[d].via.u64 > kMaxLayoutValue) {
      Check(Status::Malformed(fields_.Name(name) + "[" + std::to_string(d) +
                              "] must be an integer in [0, 2^40]"));
      return;
    }
    out.push_back(static_cast<int64_t>(dims[d].via.u64));
  }
}

void FieldReader::Encoding(const char* name, CompressionSettings& out, BlobContents contents) {
  uint32_t i;
  uint64_t number;
  if (!Take(&i) || !Check(fields_.Uint(i, name, UINT8_MAX, &number))) return;
  const auto codec = static_cast<CompressionCodec>(number);
  if (codec != CompressionCodec::kNone && !Carries(contents, codec)) {
    Check(Status::Malformed(fields_.Name(name) + NotACodecOf(contents, number)));
    return;
  }
  out.codec = codec;
  encoding_ = &out;
  encoding_name_ = name;
  codec_ = codec;
}

void FieldReader::Chain(const char* name, std::optional<EstimateChain>& out) {
  if (!status_.ok()) return;
  const uint32_t i = next_field_++;
  if (codec_ != CompressionCodec::kTopK) return;
  if (i >= fields_.size()) {
    Check(Status::Malformed(
        fields_.Name(encoding_name_) + " = " + std::to_string(static_cast<int>(codec_)) + " (" +
        CompressionCodecName(codec_) + ") needs field " + std::to_string(i) + ", the " + name));
    return;
  }
  // Read with the first blob, which its frame replaces.
  chain_ = &out;
  chain_index_ = i;
  chain_name_ = name;
}

void FieldReader::Blob(const char* name, FloatArray& out, uint64_t count) {
  if (!status_.ok()) return;
  if (!blobs_checked_) {
    blobs_checked_ = true;
    if (!Check(CheckBlobCount())) return;
  }
  if (next_blob_ >= context_.blobs.size()) {
    Check(Status::Malformed(fields_.What() + " has " + std::to_string(context_.blobs.size()) +
                            " blob frames, its description needs more"));
    return;
  }
  const Frame& frame = context_.blobs[next_blob_++];
  if (chain_ != nullptr && next_blob_ == 1) {
    Check(ReadChain(frame, count));
    return;
  }
  // Top-k sends the weights as a chain and every other blob as int8.
  const CompressionCodec codec =
      codec_ == CompressionCodec::kTopK ? CompressionCodec::kInt8 : codec_;
  uint32_t block_size = 0;
  auto values = codec == CompressionCodec::kNone
                    ? ReadFloat32Blob(frame, count, fields_.Name(name))
                    : ReadCompressedBlob(frame, codec, count, fields_.Name(name), &block_size);
  if (!Check(values.status())) return;
  out = std::move(*values);
  if (codec == CompressionCodec::kInt8) encoding_->block_size = block_size;
}

void FieldReader::Blob(const char* name, std::optional<FloatArray>& out, uint64_t count) {
  if (!status_.ok()) return;
  if (!blobs_checked_) {
    blobs_checked_ = true;
    if (!Check(CheckBlobCount())) return;
  }
  if (!IsPresent(&out)) return;
  Blob(name, out.emplace(), count);
}

bool FieldReader::IsPresent(const void* values) const {
  for (uint32_t k = 0; k < flag_count_; ++k) {
    if (flags_[k].values == values) return flags_[k].present;
  }
  return false;
}

Status FieldReader::CheckBlobCount() const {
  if (flag_count_ == 0) return Status::Ok();
  uint32_t needed = context_.required_blobs;
  for (uint32_t k = 0; k < flag_count_; ++k) needed += flags_[k].present ? 1 : 0;
  if (context_.blobs.size() == needed) return Status::Ok();
  return Status::Malformed(fields_.What() + " has " + std::to_string(context_.blobs.size()) +
                           " blob frames, its " + flags_[0].name + " flag needs " +
                           std::to_string(needed));
}

Status FieldReader::ReadChain(const Frame& frame, uint64_t count) {
  auto fields = Fields::Element(fields_.at(chain_index_), chain_name_, -1,
                                RequiredFields<EstimateChain>(), &fields_);
  if (!fields.ok()) return fields.status();
  EstimateChain chain;
  FieldReader header(*fields, ReadContext{context_.limits});
  EstimateChain::Describe(header, chain);
  MESHLEARN_RETURN_IF_ERROR(header.status());
  if (chain.from_round > chain.to_round) {
    return Status::Malformed(fields->What() + ": from_round " + std::to_string(chain.from_round) +
                             " is after to_round " + std::to_string(chain.to_round));
  }
  MESHLEARN_RETURN_IF_ERROR(
      ReadChainFrame(frame.bytes(), header.IsPresent(&chain.base), count, fields->What(), &chain));
  *chain_ = std::move(chain);
  return Status::Ok();
}

}  // namespace meshlearn::codec_internal
