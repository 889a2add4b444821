#pragma once
// Reading a described struct (protocol/messages.h, "One description per struct") from a parsed
// msgpack array and its blob frames: FieldReader runs the description, checking each field's
// msgpack type and range and each blob frame against what describes it, and stops at the first
// refusal with the protocol's error (PROTOCOL.md, "Which code wins": the fields in their order,
// then the blobs). Internal to the codec: it exposes msgpack.

#include <msgpack.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/param_layout.h"
#include "base/status.h"
#include "protocol/field_count.h"
#include "protocol/frame.h"
#include "protocol/limits.h"
#include "protocol/messages.h"

namespace meshlearn::codec_internal {

// A msgpack array viewed as the fields of one struct, with the struct's name for errors. Each
// reader checks the msgpack type and range of one field and names it on error.
class Fields {
 public:
  // Views `object` as an array of at least `min_size` fields of struct `what`. Later protocol
  // versions may append fields; extra trailing fields are ignored.
  static Result<Fields> Of(const msgpack::object& object, const char* what, uint32_t min_size) {
    return Of(Fields(object, what, -1, nullptr), min_size);
  }
  // The same for field `field` of `parent`, and with `index` >= 0 for element `index` of that
  // field, a list.
  // Rationale: the names are built only for an error; a model reply holds a score per peer.
  static Result<Fields> Element(const msgpack::object& object, const char* field, int64_t index,
                                uint32_t min_size, const Fields* parent) {
    return Of(Fields(object, field, index, parent), min_size);
  }

  // The struct's name in messages, e.g. "Model" or "Model.score_row[3]".
  std::string What() const;
  // The name of its field `field`, e.g. "Model.round".
  std::string Name(const char* field) const { return What() + "." + field; }

  uint32_t size() const { return object_.via.array.size; }
  const msgpack::object& at(uint32_t i) const { return object_.via.array.ptr[i]; }

  // Field `i` as an integer in [0, max] (malformed otherwise).
  Status Uint(uint32_t i, const char* field, uint64_t max, uint64_t* out) const;
  // A count field (rows, columns, samples): above `max` it is too_many, not malformed.
  Status Count(uint32_t i, const char* field, uint64_t max, uint64_t* out) const;
  // A signed 64-bit integer.
  Status Int(uint32_t i, const char* field, int64_t* out) const;
  // A bool.
  Status Bool(uint32_t i, const char* field, bool* out) const;
  // Any finite msgpack number (non_finite for NaN or Inf).
  Status Double(uint32_t i, const char* field, double* out) const;
  // A string field of at most `max_bytes`, as bytes: not checked for UTF-8.
  Status RawString(uint32_t i, const char* field, uint32_t max_bytes, std::string* out) const;
  // A UTF-8 string field of at most `max_bytes`.
  Status String(uint32_t i, const char* field, uint32_t max_bytes, std::string* out) const;
  // A string field holding a node id (kNodeIdRule). The id is not quoted in the error: it may be
  // anything a peer sent.
  Status NodeId(uint32_t i, const char* field, std::string* out) const;
  // Views field `i` as an array of at most `max_count` elements.
  Status List(uint32_t i, const char* field, uint32_t max_count, const msgpack::object** items,
              uint32_t* count) const;

 private:
  Fields(const msgpack::object& object, const char* label, int64_t index, const Fields* parent)
      : object_(object), label_(label), index_(index), parent_(parent) {}
  static Result<Fields> Of(Fields fields, uint32_t min_size);

  const msgpack::object& object_;
  const char* label_;     // the struct, or the list (or the parent's list field) it is in
  int64_t index_;         // its place in that list; -1 when it is not in one
  const Fields* parent_;  // the struct whose field the list is, or none
};

// What a FieldReader checks against beyond the bytes.
struct ReadContext {
  const Limits& limits;
  const ParamLayout* expected_layout = nullptr;  // a Layout must equal it, when set
  std::span<const Frame> blobs = {};             // the message's blob frames (frames 2..)
  uint32_t required_blobs = 0;                   // its Blob slots that are not optional
};

// Runs a description over `fields`, reading each field into the struct. The first refusal
// sticks: later calls do nothing, and status() returns it. The calls are those of
// protocol/messages.h.
class FieldReader {
 public:
  FieldReader(const Fields& fields, const ReadContext& context)
      : fields_(fields), context_(context) {}

  // The first refusal, or Ok.
  const Status& status() const { return status_; }

  template <class T>
  void Uint(const char* name, T& out, uint64_t max) {
    uint32_t i;
    uint64_t value;
    if (Take(&i) && Check(fields_.Uint(i, name, max, &value))) out = static_cast<T>(value);
  }
  void Count(const char* name, uint32_t& out, uint32_t Limits::*limit);
  void Int(const char* name, int64_t& out);
  void Bool(const char* name, bool& out);
  void Float64(const char* name, double& out);
  void String(const char* name, std::string& out);
  void AnyString(const char* name, std::string& out);
  void NodeId(const char* name, std::string& out);
  void NodeIds(const char* name, std::optional<std::vector<std::string>>& out,
               uint32_t Limits::*limit);
  void Codecs(const char* name, std::vector<CompressionCodec>& out);
  template <class S>
  void Struct(const char* name, S& out) {
    uint32_t i;
    if (Take(&i)) Check(ReadNested(fields_.at(i), name, -1, out));
  }
  template <class S>
  void Struct(const char* name, std::optional<S>& out) {
    uint32_t i;
    S s;
    if (Take(&i) && Check(ReadNested(fields_.at(i), name, -1, s))) out = std::move(s);
  }
  template <class S>
  void List(const char* name, std::vector<S>& out, uint32_t Limits::*limit) {
    uint32_t i;
    if (Take(&i)) ReadList(i, name, context_.limits.*limit, out);
  }
  void Layout(const char* name, ParamLayout& out);
  void Dims(const char* name, std::vector<int64_t>& out);
  void Optional() {}
  template <class T>
  void Present(const char* name, const std::optional<T>& values) {
    bool present = false;
    uint32_t i;
    if (Take(&i)) Check(fields_.Bool(i, name, &present));
    if (flag_count_ == kMaxFlags) {
      Check(Status::Internal(fields_.What() + " describes more Present fields than " +
                             std::to_string(kMaxFlags)));
      return;
    }
    flags_[flag_count_++] = {&values, present, name};
  }
  void Encoding(const char* name, CompressionSettings& out, BlobContents contents);
  void Chain(const char* name, std::optional<EstimateChain>& out);
  void Blob(const char* name, FloatArray& out, uint64_t count);
  void Blob(const char* name, std::optional<FloatArray>& out, uint64_t count);

  // True when the Present field of `values` was read as true.
  bool IsPresent(const void* values) const;

 private:
  // A Present field: the values it names, and whether they travel.
  struct Flag {
    const void* values = nullptr;
    bool present = false;
    const char* name = "";
  };
  static constexpr uint32_t kMaxFlags = 2;

  // Claims the next field: its index in `i`. False after a refusal, and for an optional field
  // the array does not hold.
  bool Take(uint32_t* i) {
    if (!status_.ok()) return false;
    *i = next_field_++;
    return *i < fields_.size();
  }
  // Keeps `status` when it is the first refusal; true when it is Ok.
  bool Check(Status status) {
    if (status.ok()) return true;
    status_ = std::move(status);
    return false;
  }
  // Reads `object`, field `name` of this struct (element `index` of it when >= 0), as an S.
  template <class S>
  Status ReadNested(const msgpack::object& object, const char* name, int64_t index, S& out) const {
    auto nested = Fields::Element(object, name, index, RequiredFields<S>(), &fields_);
    if (!nested.ok()) return nested.status();
    FieldReader reader(*nested, ReadContext{context_.limits, context_.expected_layout});
    DescribeFields(reader, out);
    return reader.status();
  }
  // Reads field `i`, `name`, as an array of at most `max_count` S; false on a refusal.
  template <class S>
  bool ReadList(uint32_t i, const char* name, uint32_t max_count, std::vector<S>& out) {
    const msgpack::object* items;
    uint32_t count;
    if (!Check(fields_.List(i, name, max_count, &items, &count))) return false;
    out.clear();
    out.reserve(count);
    for (uint32_t k = 0; k < count; ++k) {
      if (!Check(ReadNested(items[k], name, k, out.emplace_back()))) return false;
    }
    return true;
  }
  // Checks, at the first Blob slot, that the blob frames are the ones the Present flags need.
  Status CheckBlobCount() const;
  // Reads the top-k chain (its field, then `frame`) of `count` values into the Chain field.
  Status ReadChain(const Frame& frame, uint64_t count);

  const Fields& fields_;
  ReadContext context_;
  Status status_;
  uint32_t next_field_ = 0;
  uint32_t next_blob_ = 0;
  bool blobs_checked_ = false;
  Flag flags_[kMaxFlags];
  uint32_t flag_count_ = 0;
  // The Encoding field: the settings it fills and the codec the blobs travel in.
  CompressionSettings* encoding_ = nullptr;
  const char* encoding_name_ = "";
  CompressionCodec codec_ = CompressionCodec::kNone;
  // The Chain field when the blobs travel in top-k: its index and what it fills.
  std::optional<EstimateChain>* chain_ = nullptr;
  uint32_t chain_index_ = 0;
  const char* chain_name_ = "";
};

// Reads `object` as a struct S named `what` (a message type's name, or "envelope"): an array of
// at least its required fields, each then read by S's description under `context`.
template <class S>
Status ReadStruct(const msgpack::object& object, const char* what, const ReadContext& context,
                  S& out) {
  auto fields = Fields::Of(object, what, RequiredFields<S>());
  if (!fields.ok()) return fields.status();
  FieldReader reader(*fields, context);
  DescribeFields(reader, out);
  return reader.status();
}

}  // namespace meshlearn::codec_internal
