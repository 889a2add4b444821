#include "protocol/codec.h"

#include <msgpack.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <string>

#include "protocol/version.h"
#include "protocol/wire_text.h"

namespace meshlearn {
namespace {

using Packer = msgpack::packer<msgpack::sbuffer>;

// The most entries GetModel.accepts may hold (too_many above; PROTOCOL.md, "Compressed models").
constexpr uint32_t kMaxAcceptedCodecs = 16;

Frame ToFrame(msgpack::sbuffer&& buffer) {
  // sbuffer owns a malloc'd block; release() hands it over without copying.
  size_t size = buffer.size();
  char* data = buffer.release();
  std::shared_ptr<const void> owner(data, [](const void* p) { std::free(const_cast<void*>(p)); });
  return Frame::View(data, size, std::move(owner));
}

// ---------------------------------------------------------------------------------------------
// Packing. Every struct is a msgpack array with its fields in declaration order (PROTOCOL.md).

// Writes `value` as a msgpack float64 (0xcb + 8 big-endian bytes). Rationale: msgpack-c's
// pack_double writes integral values as integers, which would make a float field's wire type
// depend on its value; PROTOCOL.md promises float64.
void PackFloat64(msgpack::sbuffer& buffer, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  char bytes[9];
  bytes[0] = static_cast<char>(0xcb);
  for (int i = 0; i < 8; ++i) bytes[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
  buffer.write(bytes, sizeof(bytes));
}

void PackLayout(Packer& pk, const ParamLayout& layout) {
  pk.pack_array(static_cast<uint32_t>(layout.tensors.size()));
  for (const TensorSpec& t : layout.tensors) {
    pk.pack_array(3);
    pk.pack(t.name);
    pk.pack_array(static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) pk.pack_int64(d);
    pk.pack_uint64(t.offset);
  }
}

void PackPeerInfo(Packer& pk, const PeerInfo& p) {
  pk.pack_array(3);
  pk.pack(p.id);
  pk.pack(p.endpoint);
  pk.pack(p.public_key);
}

void PackHello(Packer& pk, const Hello& m) {
  pk.pack_array(5);
  pk.pack(m.listen_endpoint);
  pk.pack(m.architecture_id);
  pk.pack(m.metric);
  pk.pack(m.public_key);
  pk.pack_uint64(m.nonce);
}

// True when `codec` may carry a Model's blobs (Model.encoding): one of ModelCodecs(). None is the
// field left unwritten.
bool IsModelCodec(CompressionCodec codec) {
  for (CompressionCodec known : ModelCodecs()) {
    if (codec == known) return true;
  }
  return false;
}

// Appends `blob` to a chain frame's bytes: its length as a little-endian uint32, then the blob.
void AppendChainItem(std::span<const uint8_t> blob, std::vector<uint8_t>* out) {
  const auto length = static_cast<uint32_t>(blob.size());
  for (int shift = 0; shift < 32; shift += 8) out->push_back(static_cast<uint8_t>(length >> shift));
  out->insert(out->end(), blob.begin(), blob.end());
}

// The chain frame of a top-k Model (PROTOCOL.md "Top-k update chains"): the base as a codec-none
// blob when there is one, then the updates; empty when the base cannot be encoded (not finite).
std::optional<std::vector<uint8_t>> ChainFrame(const EstimateChain& chain) {
  std::vector<uint8_t> bytes;
  if (chain.base) {
    auto base = EncodeCompressed(chain.base->view(), CompressionSettings{});
    if (!base.ok()) return std::nullopt;
    AppendChainItem(*base, &bytes);
  }
  for (const std::vector<uint8_t>& update : chain.updates) AppendChainItem(update, &bytes);
  return bytes;
}

// Encodes `m`'s weights (and update) with m.encoding into `out`; false when the encoding is none,
// not a model codec, or cannot encode the values (a NaN or Inf). Top-k sends its chain for the
// weights and the update as int8.
bool CompressModelBlobs(const Model& m, std::vector<Frame>* out) {
  if (!IsModelCodec(m.encoding.codec)) return false;
  const FloatArray* dense = &m.weights;
  CompressionSettings dense_settings = m.encoding;
  if (m.encoding.codec == CompressionCodec::kTopK) {
    if (!m.chain) return false;
    auto chain = ChainFrame(*m.chain);
    if (!chain) return false;
    out->emplace_back(std::move(*chain));
    dense = nullptr;
    dense_settings.codec = CompressionCodec::kInt8;
  }
  for (const FloatArray* floats : {dense, m.update ? &*m.update : nullptr}) {
    if (floats == nullptr) continue;
    auto blob = EncodeCompressed(floats->view(), dense_settings);
    if (!blob.ok()) return false;
    out->emplace_back(std::move(*blob));
  }
  return true;
}

// True when `codec` may carry projected embeddings (EmbedReply.encoding, WitnessRows.encoding):
// one of EmbeddingCodecs(). None is the field left unwritten.
bool IsEmbeddingCodec(CompressionCodec codec) {
  const auto codecs = EmbeddingCodecs();
  return std::find(codecs.begin(), codecs.end(), codec) != codecs.end();
}

// The blob frame of `embeddings` travelling as `encoding`, and whether it holds a compressed blob:
// the codec's blob when it is an embedding codec that can encode the values, else the raw float32
// blob (a NaN or Inf, which the receiver refuses anyway, travels raw).
std::pair<Frame, bool> EmbeddingBlob(const FloatArray& embeddings,
                                     const CompressionSettings& encoding) {
  if (IsEmbeddingCodec(encoding.codec)) {
    auto blob = EncodeCompressed(embeddings.view(), encoding);
    if (blob.ok()) return {Frame(std::move(*blob)), true};
  }
  return {BlobOf(embeddings), false};
}

// Writes the codec list `codecs` (an `accepts` field) as an array of uint8.
void PackCodecs(Packer& pk, std::span<const CompressionCodec> codecs) {
  pk.pack_array(static_cast<uint32_t>(codecs.size()));
  for (CompressionCodec codec : codecs) pk.pack_uint8(static_cast<uint8_t>(codec));
}

struct BodyPacker {
  msgpack::sbuffer& buffer;
  Packer& pk;
  std::vector<Frame>& blobs;

  void operator()(const Hello& m) { PackHello(pk, m); }
  void operator()(const HelloAck& m) { PackHello(pk, m); }
  void operator()(const PeerList& m) {
    pk.pack_array(1);
    pk.pack_array(static_cast<uint32_t>(m.peers.size()));
    for (const PeerInfo& p : m.peers) PackPeerInfo(pk, p);
  }
  void operator()(const GetModel& m) {
    // Rationale: the optional trailing field is written only when set, so a message without it
    // keeps its version-1 bytes and fixtures (PROTOCOL.md, "Optional trailing fields").
    // Field 3 (accepts) needs field 2 written before it.
    // Field 4 (estimate) needs fields 2 and 3 written before it.
    const bool has_estimate = m.estimate.has_value();
    const bool has_accepts = !m.accepts.empty() || has_estimate;
    pk.pack_array(has_estimate ? 5 : has_accepts ? 4 : m.with_update ? 3 : 2);
    pk.pack_int64(m.min_round);
    pk.pack(m.wait);
    if (m.with_update || has_accepts) pk.pack(m.with_update);
    if (has_accepts) {
      pk.pack_array(static_cast<uint32_t>(m.accepts.size()));
      for (CompressionCodec codec : m.accepts) pk.pack_uint8(static_cast<uint8_t>(codec));
    }
    if (has_estimate) {
      pk.pack_array(2);
      pk.pack_int64(m.estimate->start_round);
      pk.pack_int64(m.estimate->round);
    }
  }
  void operator()(const Model& m) {
    // The blobs first: a Model whose floats its encoding cannot hold is sent raw (codec none).
    std::vector<Frame> model_blobs;
    const bool compressed = CompressModelBlobs(m, &model_blobs);
    if (!compressed) {
      model_blobs.clear();
      model_blobs.push_back(BlobOf(m.weights));
      if (m.update) model_blobs.push_back(BlobOf(*m.update));
    }
    const bool chained = compressed && m.encoding.codec == CompressionCodec::kTopK;
    pk.pack_array(chained ? 8 : compressed ? 7 : m.update ? 6 : 5);
    pk.pack_int64(m.round);
    pk.pack_uint64(m.train_size);
    pk.pack(m.early_stopped);
    PackLayout(pk, m.layout);
    pk.pack_array(static_cast<uint32_t>(m.score_row.size()));
    for (const PeerScore& s : m.score_row) {
      pk.pack_array(2);
      pk.pack(s.peer);
      PackFloat64(buffer, s.score);
    }
    if (m.update || compressed) pk.pack(m.update.has_value());
    if (compressed) pk.pack_uint8(static_cast<uint8_t>(m.encoding.codec));
    if (chained) {
      pk.pack_array(5);
      pk.pack_int64(m.chain->start_round);
      pk.pack_int64(m.chain->from_round);
      pk.pack_int64(m.chain->to_round);
      pk.pack_uint32(m.chain->checksum);
      pk.pack(m.chain->base.has_value());
    }
    for (Frame& blob : model_blobs) blobs.push_back(std::move(blob));
  }
  void operator()(const EmbedRequest& m) {
    // Field 3 (accepts) is written only when set: without it the bytes are version 2's.
    pk.pack_array(m.accepts.empty() ? 3 : 4);
    pk.pack_uint64(m.projection_seed);
    pk.pack_uint32(m.max_samples);
    PackLayout(pk, m.layout);
    if (!m.accepts.empty()) PackCodecs(pk, m.accepts);
    blobs.push_back(BlobOf(m.weights));
  }
  void operator()(const EmbedReply& m) {
    auto [blob, compressed] = EmbeddingBlob(m.embeddings, m.encoding);
    pk.pack_array(compressed ? 3 : 2);
    pk.pack_uint32(m.rows);
    pk.pack_uint32(m.cols);
    if (compressed) pk.pack_uint8(static_cast<uint8_t>(m.encoding.codec));
    blobs.push_back(std::move(blob));
  }
  void operator()(const EmdDecision& m) {
    pk.pack_array(m.accepts ? 4 : 3);
    pk.pack(m.accepted);
    PackFloat64(buffer, m.emd);
    PackFloat64(buffer, m.reference);
    if (m.accepts) pk.pack(*m.accepts);
  }
  void operator()(const WitnessEmbedRequest& m) {
    pk.pack_array(5);
    pk.pack_uint64(m.projection_seed);
    pk.pack_uint32(m.max_samples);
    pk.pack_uint64(m.session);
    PackPeerInfo(pk, m.witness);
    PackLayout(pk, m.layout);
    blobs.push_back(BlobOf(m.weights));
  }
  void operator()(const WitnessRows& m) {
    auto [blob, compressed] = EmbeddingBlob(m.embeddings, m.encoding);
    pk.pack_array(compressed ? 7 : 6);
    pk.pack_uint64(m.session);
    pk.pack(m.requester);
    pk.pack(m.responder);
    pk.pack_uint8(static_cast<uint8_t>(m.side));
    pk.pack_uint32(m.rows);
    pk.pack_uint32(m.cols);
    if (compressed) pk.pack_uint8(static_cast<uint8_t>(m.encoding.codec));
    blobs.push_back(std::move(blob));
  }
  void operator()(const WitnessResult& m) {
    pk.pack_array(2);
    pk.pack_uint64(m.session);
    PackFloat64(buffer, m.emd);
  }
  void operator()(const GetSignature&) { pk.pack_array(0); }
  void operator()(const Signature& m) {
    pk.pack_array(2);
    pk.pack_uint32(m.rows);
    pk.pack_uint32(m.cols);
    blobs.push_back(BlobOf(m.centroids));
  }
  void operator()(const Goodbye& m) {
    pk.pack_array(1);
    pk.pack(m.reason);
  }
  void operator()(const Ping& m) {
    pk.pack_array(1);
    pk.pack_uint64(m.nonce);
  }
  void operator()(const Pong& m) { (*this)(static_cast<const Ping&>(m)); }
  void operator()(const Error& m) {
    pk.pack_array(2);
    pk.pack_uint16(static_cast<uint16_t>(m.code));
    pk.pack(m.text);
  }
};

// ---------------------------------------------------------------------------------------------
// Unpacking. Each reader checks the msgpack type and range of one field and names it on error.

class Fields {
 public:
  // Views `object` as an array of at least `min_size` fields of struct `what`. Later protocol
  // versions may append fields; extra trailing fields are ignored.
  static Result<Fields> Of(const msgpack::object& object, const char* what, uint32_t min_size) {
    return Of(Fields(object, what, -1, nullptr), min_size);
  }
  // The same for field `field` of `parent` (or, without a parent, the struct named `field`), and
  // with `index` >= 0 for element `index` of that field, a list.
  // Rationale: the names are built only for an error; a model reply holds a score per peer.
  static Result<Fields> Element(const msgpack::object& object, const char* field, int64_t index,
                                uint32_t min_size, const Fields* parent = nullptr) {
    return Of(Fields(object, field, index, parent), min_size);
  }

  // The struct's name in messages, e.g. "Model" or "Model.score_row[3]".
  std::string What() const {
    std::string what = parent_ ? parent_->Name(label_) : std::string(label_);
    if (index_ >= 0) what += "[" + std::to_string(index_) + "]";
    return what;
  }

  uint32_t size() const { return object_.via.array.size; }
  const msgpack::object& at(uint32_t i) const { return object_.via.array.ptr[i]; }

  Status Uint(uint32_t i, const char* field, uint64_t max, uint64_t* out) const {
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

  // A count field (rows, columns, samples): above `max` it is too_many, not malformed.
  Status Count(uint32_t i, const char* field, uint64_t max, uint64_t* out) const {
    MESHLEARN_RETURN_IF_ERROR(Uint(i, field, UINT64_MAX, out));
    if (*out > max) {
      return Status::TooMany(Name(field) + " = " + std::to_string(*out) + " is above its limit " +
                             std::to_string(max));
    }
    return Status::Ok();
  }

  Status Int(uint32_t i, const char* field, int64_t* out) const {
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

  Status Bool(uint32_t i, const char* field, bool* out) const {
    const msgpack::object& o = at(i);
    if (o.type != msgpack::type::BOOLEAN) return Status::Malformed(Name(field) + " must be a bool");
    *out = o.via.boolean;
    return Status::Ok();
  }

  Status Double(uint32_t i, const char* field, double* out) const {
    // Any msgpack number is accepted (other encoders may shorten integral floats); this
    // encoder always writes float64.
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

  // A string field of at most `max_bytes`, as bytes: not checked for UTF-8.
  Status RawString(uint32_t i, const char* field, uint32_t max_bytes, std::string* out) const {
    const msgpack::object& o = at(i);
    if (o.type != msgpack::type::STR) return Status::Malformed(Name(field) + " must be a string");
    if (o.via.str.size > max_bytes) {
      return Status::TooLarge(Name(field) + " is " + std::to_string(o.via.str.size) +
                              " bytes, the limit is " + std::to_string(max_bytes));
    }
    out->assign(o.via.str.ptr, o.via.str.size);
    return Status::Ok();
  }

  // A UTF-8 string field of at most `max_bytes`.
  Status String(uint32_t i, const char* field, uint32_t max_bytes, std::string* out) const {
    MESHLEARN_RETURN_IF_ERROR(RawString(i, field, max_bytes, out));
    if (!IsValidUtf8(*out)) return Status::Malformed(Name(field) + " is not valid UTF-8");
    return Status::Ok();
  }

  // A string field holding a node id (kNodeIdRule). The id is not quoted in the error: it may be
  // anything a peer sent.
  Status NodeId(uint32_t i, const char* field, std::string* out) const {
    MESHLEARN_RETURN_IF_ERROR(RawString(i, field, UINT32_MAX, out));  // frames cap strings
    if (!IsNodeId(*out)) {
      return Status::InvalidArgument(Name(field) + " (" + std::to_string(out->size()) +
                                     " bytes) is not a node id: " + kNodeIdRule);
    }
    return Status::Ok();
  }

  // Views field `i` as an array of at most `max_count` elements.
  Status List(uint32_t i, const char* field, uint32_t max_count, const msgpack::object** items,
              uint32_t* count) const {
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

  std::string Name(const char* field) const { return What() + "." + field; }

 private:
  Fields(const msgpack::object& object, const char* label, int64_t index, const Fields* parent)
      : object_(object), label_(label), index_(index), parent_(parent) {}
  static Result<Fields> Of(Fields fields, uint32_t min_size) {
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
  const msgpack::object& object_;
  const char* label_;     // the struct, or the list (or the parent's list field) it is in
  int64_t index_;         // its place in that list; -1 when it is not in one
  const Fields* parent_;  // the struct whose field the list is, or none
};

#define ASSIGN_FIELDS(var, object, what, n)              \
  auto var##_result = Fields::Of((object), (what), (n)); \
  if (!var##_result.ok()) return var##_result.status();  \
  const Fields& var = *var##_result
// The same for element `index` of list `list` (a field of `parent`, or a full name).
#define ASSIGN_ELEMENT(var, object, list, index, n, parent)                      \
  auto var##_result = Fields::Element((object), (list), (index), (n), (parent)); \
  if (!var##_result.ok()) return var##_result.status();                          \
  const Fields& var = *var##_result

Status UnpackLayout(const Fields& parent, uint32_t index, const Limits& limits, ParamLayout* out) {
  const msgpack::object* items;
  uint32_t count;
  MESHLEARN_RETURN_IF_ERROR(parent.List(index, "layout", limits.max_tensors, &items, &count));
  out->tensors.clear();
  out->tensors.reserve(count);
  for (uint32_t t = 0; t < count; ++t) {
    ASSIGN_ELEMENT(f, items[t], "layout", t, 3, &parent);
    TensorSpec spec;
    MESHLEARN_RETURN_IF_ERROR(f.String(0, "name", limits.max_string_bytes, &spec.name));
    const msgpack::object* dims;
    uint32_t rank;
    MESHLEARN_RETURN_IF_ERROR(f.List(1, "shape", limits.max_tensor_rank, &dims, &rank));
    for (uint32_t d = 0; d < rank; ++d) {
      if (dims[d].type != msgpack::type::POSITIVE_INTEGER || dims[d].via.u64 > (1ull << 40)) {
        return Status::Malformed(f.Name("shape") + "[" + std::to_string(d) +
                                 "] must be an integer in [0, 2^40]");
      }
      spec.shape.push_back(static_cast<int64_t>(dims[d].via.u64));
    }
    MESHLEARN_RETURN_IF_ERROR(f.Uint(2, "offset", 1ull << 40, &spec.offset));
    out->tensors.push_back(std::move(spec));
  }
  return out->Validate();
}

// Reads blob frame `frame` as exactly `expected_floats` finite float32 values.
Result<FloatArray> UnpackWeights(const Frame& frame, uint64_t expected_floats, const char* what) {
  // Rationale: expected_floats * sizeof(float) wraps around for a layout of 2^62 or more floats,
  // which would let an empty blob pass; divide the frame size instead.
  if (frame.size() % sizeof(float) != 0 || frame.size() / sizeof(float) != expected_floats) {
    return Status::LayoutMismatch(std::string(what) + " blob is " + std::to_string(frame.size()) +
                                  " bytes, its layout needs " + std::to_string(expected_floats) +
                                  " float32 values");
  }
  auto array = FloatArrayOf(frame);
  if (!array.ok()) return array.status();
  MESHLEARN_RETURN_IF_ERROR(CheckFinite(array->view()).WithContext(what));
  return array;
}

// Reads blob frame `frame` of a Model whose encoding is `codec` (fp16 or int8) as exactly
// `expected_floats` values, and the blob's block size into `block_size`. Checks, in this order:
// the header (malformed), its codec against `codec` (malformed), its count against the layout
// (layout_mismatch), then the whole blob (DecodeCompressedInto).
Result<FloatArray> UnpackCompressed(const Frame& frame, CompressionCodec codec,
                                    uint64_t expected_floats, const char* what,
                                    uint32_t* block_size) {
  auto header = ReadCompressedHeader(frame.bytes());
  if (!header.ok()) return header.status().WithContext(what);
  if (header->codec != codec) {
    return Status::Malformed(std::string(what) + " blob is a " +
                             CompressionCodecName(header->codec) +
                             " blob, the encoding field says " + CompressionCodecName(codec));
  }
  if (header->count != expected_floats) {
    return Status::LayoutMismatch(std::string(what) + " blob holds " +
                                  std::to_string(header->count) + " values, its layout needs " +
                                  std::to_string(expected_floats));
  }
  // Rationale: fp16 and int8 store every value in at least one byte; a shorter blob is refused
  // before its values are allocated.
  if (frame.size() < expected_floats) {
    return Status::Malformed(std::string(what) + " blob of " + std::to_string(frame.size()) +
                             " bytes is too short for " + std::to_string(expected_floats) +
                             " values");
  }
  std::vector<float> values(expected_floats);
  MESHLEARN_RETURN_IF_ERROR(DecodeCompressedInto(frame.bytes(), values).WithContext(what));
  *block_size = header->block_size;
  return FloatArray::Own(std::move(values));
}

// Reads a Model's blob `frame` as `expected_floats` values travelling as `encoding` (the codec
// of field 6; none for raw float32), and the block size of a compressed one into `block_size`.
Result<FloatArray> UnpackModelBlob(const Frame& frame, CompressionCodec encoding,
                                   uint64_t expected_floats, const char* what,
                                   uint32_t* block_size) {
  if (encoding == CompressionCodec::kNone) return UnpackWeights(frame, expected_floats, what);
  return UnpackCompressed(frame, encoding, expected_floats, what, block_size);
}

// Reads a top-k Model's chain: field `index` of `f`, [start_round, from_round, to_round,
// checksum, has_base], and the chain frame `frame` of length-prefixed blobs (PROTOCOL.md "Top-k
// update chains"): the base, a codec-none blob of `expected_floats` finite values, when has_base,
// then top-k blobs of `expected_floats` values. The updates' contents are checked when applied
// (PublicEstimate::Apply); here their framing, headers and counts.
Result<EstimateChain> UnpackChain(const Fields& f, uint32_t index, const Frame& frame,
                                  uint64_t expected_floats) {
  ASSIGN_ELEMENT(c, f.at(index), "chain", -1, 5, &f);
  EstimateChain chain;
  bool has_base = false;
  uint64_t checksum = 0;
  MESHLEARN_RETURN_IF_ERROR(c.Int(0, "start_round", &chain.start_round));
  MESHLEARN_RETURN_IF_ERROR(c.Int(1, "from_round", &chain.from_round));
  MESHLEARN_RETURN_IF_ERROR(c.Int(2, "to_round", &chain.to_round));
  MESHLEARN_RETURN_IF_ERROR(c.Uint(3, "checksum", UINT32_MAX, &checksum));
  MESHLEARN_RETURN_IF_ERROR(c.Bool(4, "has_base", &has_base));
  chain.checksum = static_cast<uint32_t>(checksum);
  if (chain.from_round > chain.to_round) {
    return Status::Malformed("Model.chain: from_round " + std::to_string(chain.from_round) +
                             " is after to_round " + std::to_string(chain.to_round));
  }
  std::span<const uint8_t> rest = frame.bytes();
  for (size_t item = 0; !rest.empty(); ++item) {
    const std::string what = "Model.chain item " + std::to_string(item);
    if (rest.size() < 4) return Status::Malformed(what + ": fewer than 4 bytes for its length");
    const uint32_t length = static_cast<uint32_t>(rest[0]) | (static_cast<uint32_t>(rest[1]) << 8) |
                            (static_cast<uint32_t>(rest[2]) << 16) |
                            (static_cast<uint32_t>(rest[3]) << 24);
    rest = rest.subspan(4);
    if (length > rest.size()) {
      return Status::Malformed(what + ": length " + std::to_string(length) + " but " +
                               std::to_string(rest.size()) + " bytes are left");
    }
    const std::span<const uint8_t> blob = rest.first(length);
    rest = rest.subspan(length);
    auto header = ReadCompressedHeader(blob);
    if (!header.ok()) return header.status().WithContext(what);
    const bool is_base = has_base && item == 0;
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
      chain.base = FloatArray::Own(std::move(*base));
    } else {
      chain.updates.emplace_back(blob.begin(), blob.end());
    }
  }
  if (has_base && !chain.base) return Status::Malformed("Model.chain: has_base without a base");
  const uint64_t rounds = static_cast<uint64_t>(chain.to_round - chain.from_round);
  if (chain.updates.size() > rounds) {
    return Status::Malformed("Model.chain: " + std::to_string(chain.updates.size()) +
                             " updates for rounds " + std::to_string(chain.from_round) + " to " +
                             std::to_string(chain.to_round));
  }
  return chain;
}

Status CheckLayout(const ParamLayout& layout, const DecodeOptions& options) {
  if (options.expected_layout == nullptr) return Status::Ok();
  return layout.Matches(*options.expected_layout);
}

// Unpacks the PeerInfo `o`: field `field` of `parent`, element `index` of it when it is a list
// (index >= 0).
Status UnpackPeerInfo(const msgpack::object& o, const Fields& parent, const char* field,
                      int64_t index, const Limits& limits, PeerInfo* out) {
  ASSIGN_ELEMENT(p, o, field, index, 3, &parent);
  MESHLEARN_RETURN_IF_ERROR(p.NodeId(0, "id", &out->id));
  MESHLEARN_RETURN_IF_ERROR(p.String(1, "endpoint", limits.max_string_bytes, &out->endpoint));
  return p.String(2, "public_key", limits.max_string_bytes, &out->public_key);
}

// Reads the layout in field `index`, checks it against the expected one, and reads `blob` as the
// weights it describes.
Status UnpackModelWeights(const Fields& f, uint32_t index, const Frame& blob,
                          const DecodeOptions& options, const char* what, ParamLayout* layout,
                          FloatArray* weights) {
  MESHLEARN_RETURN_IF_ERROR(UnpackLayout(f, index, options.limits, layout));
  MESHLEARN_RETURN_IF_ERROR(CheckLayout(*layout, options));
  auto unpacked = UnpackWeights(blob, layout->total_floats(), what);
  if (!unpacked.ok()) return unpacked.status();
  *weights = std::move(*unpacked);
  return Status::Ok();
}

// Reads the optional codec list in field `i` of `f` (accepts; absent: empty): at most
// kMaxAcceptedCodecs uint8 codec numbers, unknown ones kept.
Status UnpackCodecs(const Fields& f, uint32_t i, const char* field,
                    std::vector<CompressionCodec>* out) {
  if (f.size() <= i) return Status::Ok();
  const msgpack::object* items;
  uint32_t count;
  MESHLEARN_RETURN_IF_ERROR(f.List(i, field, kMaxAcceptedCodecs, &items, &count));
  const std::string list = f.Name(field);
  ASSIGN_FIELDS(codecs, f.at(i), list.c_str(), 0);
  out->resize(count);
  for (uint32_t k = 0; k < count; ++k) {
    uint64_t codec;
    MESHLEARN_RETURN_IF_ERROR(codecs.Uint(k, std::to_string(k).c_str(), UINT8_MAX, &codec));
    (*out)[k] = static_cast<CompressionCodec>(codec);
  }
  return Status::Ok();
}

// Reads fields `first` (rows) and `first + 1` (cols) and the blob of projected embeddings. With
// `encoding`, field `first + 2` is the optional encoding (absent: none; not an embedding codec:
// malformed) and the blob travels in it; its block size is kept for int8.
Status UnpackEmbeddings(const Fields& f, uint32_t first, const Frame& blob, const Limits& limits,
                        const char* what, uint32_t* rows_out, uint32_t* cols_out, FloatArray* out,
                        CompressionSettings* encoding = nullptr) {
  uint64_t rows, cols;
  MESHLEARN_RETURN_IF_ERROR(f.Count(first, "rows", limits.max_embed_rows, &rows));
  MESHLEARN_RETURN_IF_ERROR(f.Count(first + 1, "cols", limits.max_embed_cols, &cols));
  CompressionCodec codec = CompressionCodec::kNone;
  if (encoding != nullptr && f.size() > first + 2) {
    uint64_t number;
    MESHLEARN_RETURN_IF_ERROR(f.Uint(first + 2, "encoding", UINT8_MAX, &number));
    codec = static_cast<CompressionCodec>(number);
    if (codec != CompressionCodec::kNone && !IsEmbeddingCodec(codec)) {
      return Status::Malformed(f.Name("encoding") + " = " + std::to_string(number) +
                               " is not a codec of embeddings (allowed: 0 none, 1 fp16, 2 int8)");
    }
  }
  uint32_t block_size = 0;
  auto embeddings = codec == CompressionCodec::kNone
                        ? UnpackWeights(blob, rows * cols, what)
                        : UnpackCompressed(blob, codec, rows * cols, what, &block_size);
  if (!embeddings.ok()) return embeddings.status();
  if (encoding != nullptr) {
    encoding->codec = codec;
    if (codec == CompressionCodec::kInt8) encoding->block_size = block_size;
  }
  *rows_out = static_cast<uint32_t>(rows);
  *cols_out = static_cast<uint32_t>(cols);
  *out = std::move(*embeddings);
  return Status::Ok();
}

Result<Hello> UnpackHello(const msgpack::object& o, const Limits& limits, const char* what) {
  ASSIGN_FIELDS(f, o, what, 5);
  Hello m;
  uint32_t max = limits.max_string_bytes;
  MESHLEARN_RETURN_IF_ERROR(f.String(0, "listen_endpoint", max, &m.listen_endpoint));
  MESHLEARN_RETURN_IF_ERROR(f.String(1, "architecture_id", max, &m.architecture_id));
  MESHLEARN_RETURN_IF_ERROR(f.String(2, "metric", max, &m.metric));
  MESHLEARN_RETURN_IF_ERROR(f.String(3, "public_key", max, &m.public_key));
  MESHLEARN_RETURN_IF_ERROR(f.Uint(4, "nonce", UINT64_MAX, &m.nonce));
  return m;
}

// The number of blob frames each type carries: at least `min`, at most `max`.
struct BlobCount {
  uint32_t min = 0;
  uint32_t max = 0;
};
BlobCount BlobCountOf(MessageType type) {
  switch (type) {
    case MessageType::kModel:
      return {1, 2};  // weights, and the optional update
    case MessageType::kEmbedRequest:
    case MessageType::kEmbedReply:
    case MessageType::kWitnessEmbedRequest:
    case MessageType::kWitnessRows:
    case MessageType::kSignature:
      return {1, 1};
    default:
      return {0, 0};
  }
}

Result<Body> UnpackBody(MessageType type, const msgpack::object& o, std::span<const Frame> blobs,
                        const DecodeOptions& options) {
  const Limits& limits = options.limits;
  switch (type) {
    case MessageType::kHello: {
      auto hello = UnpackHello(o, limits, "Hello");
      if (!hello.ok()) return hello.status();
      return Body(std::move(*hello));
    }
    case MessageType::kHelloAck: {
      auto hello = UnpackHello(o, limits, "HelloAck");
      if (!hello.ok()) return hello.status();
      HelloAck ack;
      static_cast<Hello&>(ack) = std::move(*hello);
      return Body(std::move(ack));
    }
    case MessageType::kPeerList: {
      ASSIGN_FIELDS(f, o, "PeerList", 1);
      const msgpack::object* items;
      uint32_t count;
      MESHLEARN_RETURN_IF_ERROR(f.List(0, "peers", limits.max_peers, &items, &count));
      PeerList m;
      m.peers.reserve(count);
      for (uint32_t i = 0; i < count; ++i) {
        PeerInfo info;
        MESHLEARN_RETURN_IF_ERROR(UnpackPeerInfo(items[i], f, "peers", i, limits, &info));
        m.peers.push_back(std::move(info));
      }
      return Body(std::move(m));
    }
    case MessageType::kGetModel: {
      ASSIGN_FIELDS(f, o, "GetModel", 2);
      GetModel m;
      MESHLEARN_RETURN_IF_ERROR(f.Int(0, "min_round", &m.min_round));
      MESHLEARN_RETURN_IF_ERROR(f.Bool(1, "wait", &m.wait));
      if (f.size() > 2) MESHLEARN_RETURN_IF_ERROR(f.Bool(2, "with_update", &m.with_update));
      if (f.size() > 3) {
        const msgpack::object* items;
        uint32_t count;
        MESHLEARN_RETURN_IF_ERROR(f.List(3, "accepts", kMaxAcceptedCodecs, &items, &count));
        ASSIGN_FIELDS(codecs, f.at(3), "GetModel.accepts", 0);
        m.accepts.resize(count);
        for (uint32_t i = 0; i < count; ++i) {
          uint64_t codec;
          const std::string field = std::to_string(i);
          MESHLEARN_RETURN_IF_ERROR(codecs.Uint(i, field.c_str(), UINT8_MAX, &codec));
          m.accepts[i] = static_cast<CompressionCodec>(codec);  // unknown codecs are kept
        }
      }
      if (f.size() > 4) {
        ASSIGN_ELEMENT(held, f.at(4), "estimate", -1, 2, &f);
        HeldEstimate estimate;
        MESHLEARN_RETURN_IF_ERROR(held.Int(0, "start_round", &estimate.start_round));
        MESHLEARN_RETURN_IF_ERROR(held.Int(1, "round", &estimate.round));
        m.estimate = estimate;
      }
      return Body(std::move(m));
    }
    case MessageType::kModel: {
      ASSIGN_FIELDS(f, o, "Model", 5);
      Model m;
      MESHLEARN_RETURN_IF_ERROR(f.Int(0, "round", &m.round));
      MESHLEARN_RETURN_IF_ERROR(f.Uint(1, "train_size", UINT64_MAX, &m.train_size));
      MESHLEARN_RETURN_IF_ERROR(f.Bool(2, "early_stopped", &m.early_stopped));
      MESHLEARN_RETURN_IF_ERROR(UnpackLayout(f, 3, limits, &m.layout));
      MESHLEARN_RETURN_IF_ERROR(CheckLayout(m.layout, options));
      const msgpack::object* items;
      uint32_t count;
      MESHLEARN_RETURN_IF_ERROR(f.List(4, "score_row", limits.max_score_entries, &items, &count));
      for (uint32_t i = 0; i < count; ++i) {
        ASSIGN_ELEMENT(s, items[i], "score_row", i, 2, &f);
        PeerScore score;
        MESHLEARN_RETURN_IF_ERROR(s.NodeId(0, "peer", &score.peer));
        MESHLEARN_RETURN_IF_ERROR(s.Double(1, "score", &score.score));
        m.score_row.push_back(std::move(score));
      }
      bool has_update = false;
      if (f.size() > 5) MESHLEARN_RETURN_IF_ERROR(f.Bool(5, "update", &has_update));
      if (f.size() > 6) {
        uint64_t codec;
        MESHLEARN_RETURN_IF_ERROR(f.Uint(6, "encoding", UINT8_MAX, &codec));
        m.encoding.codec = static_cast<CompressionCodec>(codec);
        if (m.encoding.codec != CompressionCodec::kNone && !IsModelCodec(m.encoding.codec)) {
          return Status::Malformed(
              "Model.encoding = " + std::to_string(codec) +
              " is not a codec of models (allowed: 0 none, 1 fp16, 2 int8, 3 topk)");
        }
      }
      const bool chained = m.encoding.codec == CompressionCodec::kTopK;
      if (chained && f.size() < 8) {
        return Status::Malformed("Model.encoding = 3 (topk) needs field 7, the chain");
      }
      if (blobs.size() != (has_update ? 2u : 1u)) {
        return Status::Malformed("Model has " + std::to_string(blobs.size()) +
                                 " blob frames, its update flag needs " + (has_update ? "2" : "1"));
      }
      const uint64_t floats = m.layout.total_floats();
      uint32_t block_size = 0;
      if (chained) {
        auto chain = UnpackChain(f, 7, blobs[0], floats);
        if (!chain.ok()) return chain.status();
        m.chain = std::move(*chain);
      } else {
        auto weights =
            UnpackModelBlob(blobs[0], m.encoding.codec, floats, "Model.weights", &block_size);
        if (!weights.ok()) return weights.status();
        m.weights = std::move(*weights);
      }
      if (has_update) {
        const CompressionCodec update_codec = chained ? CompressionCodec::kInt8 : m.encoding.codec;
        auto update = UnpackModelBlob(blobs[1], update_codec, floats, "Model.update", &block_size);
        if (!update.ok()) return update.status();
        m.update = std::move(*update);
      }
      if (m.encoding.codec == CompressionCodec::kInt8 || (chained && has_update)) {
        m.encoding.block_size = block_size;
      }
      return Body(std::move(m));
    }
    case MessageType::kEmbedRequest: {
      ASSIGN_FIELDS(f, o, "EmbedRequest", 3);
      EmbedRequest m;
      uint64_t max_samples;
      MESHLEARN_RETURN_IF_ERROR(f.Uint(0, "projection_seed", UINT64_MAX, &m.projection_seed));
      MESHLEARN_RETURN_IF_ERROR(f.Count(1, "max_samples", limits.max_embed_rows, &max_samples));
      m.max_samples = static_cast<uint32_t>(max_samples);
      // The fields (layout, accepts) before the blob (PROTOCOL.md, "Which code wins").
      MESHLEARN_RETURN_IF_ERROR(UnpackLayout(f, 2, limits, &m.layout));
      MESHLEARN_RETURN_IF_ERROR(CheckLayout(m.layout, options));
      MESHLEARN_RETURN_IF_ERROR(UnpackCodecs(f, 3, "accepts", &m.accepts));
      auto weights = UnpackWeights(blobs[0], m.layout.total_floats(), "EmbedRequest.weights");
      if (!weights.ok()) return weights.status();
      m.weights = std::move(*weights);
      return Body(std::move(m));
    }
    case MessageType::kEmbedReply: {
      ASSIGN_FIELDS(f, o, "EmbedReply", 2);
      EmbedReply m;
      MESHLEARN_RETURN_IF_ERROR(UnpackEmbeddings(f, 0, blobs[0], limits, "EmbedReply.embeddings",
                                                 &m.rows, &m.cols, &m.embeddings, &m.encoding));
      return Body(std::move(m));
    }
    case MessageType::kEmdDecision: {
      ASSIGN_FIELDS(f, o, "EmdDecision", 3);
      EmdDecision m;
      MESHLEARN_RETURN_IF_ERROR(f.Bool(0, "accepted", &m.accepted));
      MESHLEARN_RETURN_IF_ERROR(f.Double(1, "emd", &m.emd));
      MESHLEARN_RETURN_IF_ERROR(f.Double(2, "reference", &m.reference));
      if (f.size() > 3) {
        const msgpack::object* items;
        uint32_t count;
        MESHLEARN_RETURN_IF_ERROR(f.List(3, "accepts", limits.max_peers, &items, &count));
        ASSIGN_FIELDS(ids, f.at(3), "EmdDecision", 0);
        m.accepts.emplace(count);
        for (uint32_t i = 0; i < count; ++i) {
          const std::string field = "accepts[" + std::to_string(i) + "]";
          MESHLEARN_RETURN_IF_ERROR(ids.NodeId(i, field.c_str(), &(*m.accepts)[i]));
        }
      }
      return Body(std::move(m));
    }
    case MessageType::kWitnessEmbedRequest: {
      ASSIGN_FIELDS(f, o, "WitnessEmbedRequest", 5);
      WitnessEmbedRequest m;
      uint64_t max_samples;
      MESHLEARN_RETURN_IF_ERROR(f.Uint(0, "projection_seed", UINT64_MAX, &m.projection_seed));
      MESHLEARN_RETURN_IF_ERROR(f.Count(1, "max_samples", limits.max_embed_rows, &max_samples));
      m.max_samples = static_cast<uint32_t>(max_samples);
      MESHLEARN_RETURN_IF_ERROR(f.Uint(2, "session", UINT64_MAX, &m.session));
      MESHLEARN_RETURN_IF_ERROR(UnpackPeerInfo(f.at(3), f, "witness", -1, limits, &m.witness));
      MESHLEARN_RETURN_IF_ERROR(UnpackModelWeights(
          f, 4, blobs[0], options, "WitnessEmbedRequest.weights", &m.layout, &m.weights));
      return Body(std::move(m));
    }
    case MessageType::kWitnessRows: {
      ASSIGN_FIELDS(f, o, "WitnessRows", 6);
      WitnessRows m;
      uint64_t side;
      MESHLEARN_RETURN_IF_ERROR(f.Uint(0, "session", UINT64_MAX, &m.session));
      MESHLEARN_RETURN_IF_ERROR(f.NodeId(1, "requester", &m.requester));
      MESHLEARN_RETURN_IF_ERROR(f.NodeId(2, "responder", &m.responder));
      MESHLEARN_RETURN_IF_ERROR(f.Uint(3, "side", 1, &side));
      m.side = static_cast<WitnessSide>(side);
      MESHLEARN_RETURN_IF_ERROR(UnpackEmbeddings(f, 4, blobs[0], limits, "WitnessRows.embeddings",
                                                 &m.rows, &m.cols, &m.embeddings, &m.encoding));
      return Body(std::move(m));
    }
    case MessageType::kWitnessResult: {
      ASSIGN_FIELDS(f, o, "WitnessResult", 2);
      WitnessResult m;
      MESHLEARN_RETURN_IF_ERROR(f.Uint(0, "session", UINT64_MAX, &m.session));
      MESHLEARN_RETURN_IF_ERROR(f.Double(1, "emd", &m.emd));
      return Body(m);
    }
    case MessageType::kGetSignature: {
      MESHLEARN_RETURN_IF_ERROR(Fields::Of(o, "GetSignature", 0).status());
      return Body(GetSignature{});
    }
    case MessageType::kSignature: {
      ASSIGN_FIELDS(f, o, "Signature", 2);
      Signature m;
      MESHLEARN_RETURN_IF_ERROR(UnpackEmbeddings(f, 0, blobs[0], limits, "Signature.centroids",
                                                 &m.rows, &m.cols, &m.centroids));
      return Body(std::move(m));
    }
    case MessageType::kGoodbye: {
      ASSIGN_FIELDS(f, o, "Goodbye", 1);
      Goodbye m;
      MESHLEARN_RETURN_IF_ERROR(f.String(0, "reason", limits.max_string_bytes, &m.reason));
      return Body(std::move(m));
    }
    case MessageType::kPing:
    case MessageType::kPong: {
      ASSIGN_FIELDS(f, o, MessageTypeName(type), 1);
      uint64_t nonce;
      MESHLEARN_RETURN_IF_ERROR(f.Uint(0, "nonce", UINT64_MAX, &nonce));
      if (type == MessageType::kPing) return Body(Ping{.nonce = nonce});
      Pong pong;
      pong.nonce = nonce;
      return Body(pong);
    }
    case MessageType::kError: {
      ASSIGN_FIELDS(f, o, "Error", 2);
      uint64_t code;
      Error m;
      MESHLEARN_RETURN_IF_ERROR(f.Uint(0, "code", UINT16_MAX, &code));
      m.code = static_cast<ErrorCode>(code);  // unknown codes are kept as numbers
      MESHLEARN_RETURN_IF_ERROR(f.String(1, "text", limits.max_string_bytes, &m.text));
      return Body(std::move(m));
    }
  }
  return Status::UnknownType("message type " + std::to_string(static_cast<int>(type)));
}

// The zone that parsed frames live in: one per thread, emptied when the frame has been read
// (FrameZone). Rationale: msgpack::unpack with an object_handle allocates a new zone, at least
// 8 KiB, for every frame; a node decodes two frames per message. Its chunks are 64 KiB, so that a
// full PeerList (thousands of objects) is parsed without allocating.
msgpack::zone& ThreadZone() {
  thread_local msgpack::zone zone(64 * 1024);
  return zone;
}

// Parsed strings point into the frame instead of being copied into the zone: every parsed
// object is read while its frame is alive (ParseFrame's contract), and the fields copy what they
// keep.
bool ReferenceStrings(msgpack::type::object_type type, std::size_t, void*) {
  return type == msgpack::type::STR;
}

// Empties the thread's zone when it goes: the objects parsed while it lived are gone then.
class FrameZone {
 public:
  FrameZone() = default;
  FrameZone(const FrameZone&) = delete;
  FrameZone& operator=(const FrameZone&) = delete;
  ~FrameZone() { ThreadZone().clear(); }
};

// Parses one msgpack object filling the whole frame, under msgpack's own allocation limits, into
// the thread's zone: the object lives until the caller's FrameZone goes, and its strings point
// into `frame`, which must outlive it.
Result<msgpack::object> ParseFrame(const Frame& frame, const Limits& limits, const char* what) {
  try {
    size_t offset = 0;
    msgpack::unpack_limit limit(limits.max_tensors + limits.max_peers, 0, limits.max_string_bytes,
                                0, 0, 8);
    msgpack::object handle =
        msgpack::unpack(ThreadZone(), reinterpret_cast<const char*>(frame.data()), frame.size(),
                        offset, ReferenceStrings, nullptr, limit);
    if (offset != frame.size()) {
      return Status::Malformed(std::string(what) + " frame has " +
                               std::to_string(frame.size() - offset) + " trailing bytes");
    }
    return handle;
  } catch (const msgpack::str_size_overflow&) {
    return Status::TooLarge(std::string(what) + " frame holds a string above max_string_bytes (" +
                            std::to_string(limits.max_string_bytes) + ")");
  } catch (const msgpack::array_size_overflow&) {
    return Status::TooMany(std::string(what) + " frame holds an array above " +
                           std::to_string(limits.max_tensors + limits.max_peers) + " elements");
  } catch (const msgpack::size_overflow&) {
    // Maps, bin and ext never occur in a meshlearn message (only arrays), and no message nests
    // deeper than msgpack's depth limit here: the bytes are not a meshlearn structure.
    return Status::Malformed(std::string(what) +
                             " frame holds a msgpack map, bin or ext, or nests too deep; the "
                             "protocol uses arrays only");
  } catch (const std::exception& e) {
    return Status::Malformed(std::string(what) + " frame is not valid msgpack: " + e.what());
  }
}

constexpr uint16_t kHighestKnownType = static_cast<uint16_t>(MessageType::kGoodbye);

// Reads the fields of a well-formed envelope (an array of at least 7 fields of the right msgpack
// types) without judging their values.
Result<Envelope> ParseEnvelope(const Frame& frame, const Limits& limits) {
  FrameZone zone;
  auto handle = ParseFrame(frame, limits, "envelope");
  if (!handle.ok()) return handle.status();
  ASSIGN_FIELDS(f, *handle, "envelope", 7);
  Envelope e;
  uint64_t magic, version, min_version, type;
  MESHLEARN_RETURN_IF_ERROR(f.Uint(0, "magic", UINT32_MAX, &magic));
  MESHLEARN_RETURN_IF_ERROR(f.Uint(1, "protocol_version", UINT16_MAX, &version));
  MESHLEARN_RETURN_IF_ERROR(f.Uint(2, "min_version", UINT16_MAX, &min_version));
  MESHLEARN_RETURN_IF_ERROR(f.Uint(3, "type", UINT16_MAX, &type));
  MESHLEARN_RETURN_IF_ERROR(f.RawString(4, "sender", limits.max_string_bytes, &e.sender));
  MESHLEARN_RETURN_IF_ERROR(f.Uint(5, "request_id", UINT64_MAX, &e.request_id));
  MESHLEARN_RETURN_IF_ERROR(f.Int(6, "round", &e.round));
  e.magic = static_cast<uint32_t>(magic);
  e.protocol_version = static_cast<uint16_t>(version);
  e.min_version = static_cast<uint16_t>(min_version);
  e.type = static_cast<MessageType>(type);
  return e;
}

}  // namespace

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

uint64_t TotalBytes(std::span<const Frame> frames) {
  uint64_t total = 0;
  for (const Frame& f : frames) total += f.size();
  return total;
}

std::vector<Frame> Encode(const Message& message) {
  return Encode(message.envelope, EncodeBody(message.body));
}

EncodedBody EncodeBody(const Body& body) {
  EncodedBody encoded;
  encoded.type = TypeOf(body);
  msgpack::sbuffer body_buffer(256);
  Packer packer(body_buffer);
  std::vector<Frame> blobs;
  std::visit(BodyPacker{body_buffer, packer, blobs}, body);
  encoded.frames.reserve(1 + blobs.size());
  encoded.frames.push_back(ToFrame(std::move(body_buffer)));
  for (Frame& blob : blobs) encoded.frames.push_back(std::move(blob));
  return encoded;
}

std::vector<Frame> Encode(const Envelope& e, const EncodedBody& body) {
  std::vector<Frame> frames;
  frames.reserve(1 + body.frames.size());
  msgpack::sbuffer envelope_buffer(64);
  Packer envelope(envelope_buffer);
  envelope.pack_array(7);
  envelope.pack_uint32(e.magic);
  envelope.pack_uint16(e.protocol_version);
  envelope.pack_uint16(e.min_version);
  envelope.pack_uint16(static_cast<uint16_t>(body.type));
  envelope.pack(e.sender);
  envelope.pack_uint64(e.request_id);
  envelope.pack_int64(e.round);
  frames.push_back(ToFrame(std::move(envelope_buffer)));
  frames.insert(frames.end(), body.frames.begin(), body.frames.end());
  return frames;
}

Result<Envelope> DecodeEnvelope(const Frame& frame, const Limits& limits) {
  auto parsed = ParseEnvelope(frame, limits);
  if (!parsed.ok()) return parsed.status();
  const Envelope& e = *parsed;
  if (e.magic != kProtocolMagic) {
    return Status::BadMagic("envelope magic is " + std::to_string(e.magic) + ", expected " +
                            std::to_string(kProtocolMagic) + " (\"MLRN\")");
  }
  if (e.min_version > e.protocol_version) {
    return Status::Malformed("envelope min_version " + std::to_string(e.min_version) +
                             " is above its protocol_version " +
                             std::to_string(e.protocol_version));
  }
  if (e.protocol_version < kMinProtocolVersion || e.min_version > kProtocolVersion) {
    return Status::UnsupportedVersion(
        "peer speaks protocol versions " + std::to_string(e.min_version) + ".." +
        std::to_string(e.protocol_version) + ", this node speaks " +
        std::to_string(kMinProtocolVersion) + ".." + std::to_string(kProtocolVersion));
  }
  uint16_t type = static_cast<uint16_t>(e.type);
  if (type == 0 || type > kHighestKnownType) {
    return Status::UnknownType("message type " + std::to_string(type) +
                               " is not known to this node (known: 1.." +
                               std::to_string(kHighestKnownType) + ")");
  }
  if (!IsNodeId(e.sender)) {
    return Status::InvalidArgument("envelope.sender (" + std::to_string(e.sender.size()) +
                                   " bytes) is not a node id: " + kNodeIdRule);
  }
  return parsed;
}

EnvelopeAddress AddressOf(const Frame& frame, const Limits& limits) {
  // A sender above max_string_bytes is refused (too_large) by DecodeEnvelope, yet frame 0 is a
  // well-formed envelope whose request id the Error must repeat: read it without that limit.
  Limits lenient = limits;
  lenient.max_string_bytes = static_cast<uint32_t>(std::min<size_t>(frame.size(), UINT32_MAX));
  auto parsed = ParseEnvelope(frame, lenient);
  if (!parsed.ok()) return {};
  return {IsNodeId(parsed->sender) ? parsed->sender : "", parsed->request_id};
}

Result<Message> Decode(std::span<const Frame> frames, const DecodeOptions& options) {
  const Limits& limits = options.limits;
  uint64_t total = TotalBytes(frames);
  if (total > limits.max_message_bytes) {
    return Status::TooLarge("message is " + std::to_string(total) + " bytes, the limit is " +
                            std::to_string(limits.max_message_bytes) + " (max_message_bytes)");
  }
  if (frames.size() > limits.max_frames) {
    return Status::TooMany("message has " + std::to_string(frames.size()) +
                           " frames, the limit is " + std::to_string(limits.max_frames));
  }
  if (frames.size() < 2) {
    return Status::Malformed("message has " + std::to_string(frames.size()) +
                             " frames, expected at least 2 (envelope, body)");
  }
  auto envelope = DecodeEnvelope(frames[0], limits);
  if (!envelope.ok()) return envelope.status();
  BlobCount blobs = BlobCountOf(envelope->type);
  if (frames.size() < 2 + blobs.min || frames.size() > 2 + blobs.max) {
    std::string expected = std::to_string(2 + blobs.min);
    if (blobs.max > blobs.min) expected += " to " + std::to_string(2 + blobs.max);
    return Status::Malformed(std::string(MessageTypeName(envelope->type)) + " has " +
                             std::to_string(frames.size()) + " frames, expected " + expected);
  }
  FrameZone zone;
  auto handle = ParseFrame(frames[1], limits, MessageTypeName(envelope->type));
  if (!handle.ok()) return handle.status();
  auto body = UnpackBody(envelope->type, *handle, frames.subspan(2), options);
  if (!body.ok()) return body.status();
  return Message{std::move(*envelope), std::move(*body)};
}

}  // namespace meshlearn
