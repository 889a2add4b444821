#pragma once
// The counting visitors over the struct descriptions of protocol/messages.h ("One description per
// struct"): how many fields a struct has on the wire (all, the required ones, and the ones an
// encoder writes) and how many blob frames a message carries. Internal to the codec; torch- and
// msgpack-free.

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "protocol/compression.h"
#include "protocol/messages.h"

namespace meshlearn::codec_internal {

// Runs the description of `s` with `fields`: S::Describe, or DescribeTensor for a TensorSpec
// (which base/ declares, so it cannot carry the description itself).
template <class Fields, class S>
void DescribeFields(Fields& fields, S& s) {
  if constexpr (std::is_same_v<std::remove_const_t<S>, TensorSpec>) {
    DescribeTensor(fields, s);
  } else {
    std::remove_const_t<S>::Describe(fields, s);
  }
}

// A visitor that ignores every kind of field; a visitor derives from it and declares only the
// kinds its job needs (a declared name hides every overload of that name here).
struct NoFields {
  template <class... A>
  void Uint(A&&...) {}
  template <class... A>
  void Count(A&&...) {}
  template <class... A>
  void Int(A&&...) {}
  template <class... A>
  void Bool(A&&...) {}
  template <class... A>
  void Float64(A&&...) {}
  template <class... A>
  void String(A&&...) {}
  template <class... A>
  void AnyString(A&&...) {}
  template <class... A>
  void NodeId(A&&...) {}
  template <class... A>
  void NodeIds(A&&...) {}
  template <class... A>
  void Codecs(A&&...) {}
  template <class... A>
  void Struct(A&&...) {}
  template <class... A>
  void List(A&&...) {}
  template <class... A>
  void Layout(A&&...) {}
  template <class... A>
  void Dims(A&&...) {}
  void Optional() {}
  template <class... A>
  void Present(A&&...) {}
  template <class... A>
  void Encoding(A&&...) {}
  template <class... A>
  void Chain(A&&...) {}
  template <class... A>
  void Blob(A&&...) {}
};

// Counts a struct's fields: the required ones (before Optional()), and the ones an encoder writes,
// up to the last optional field that is set (PROTOCOL.md, "Optional trailing fields").
class FieldCounter : public NoFields {
 public:
  // `sent`: the codec the struct's blobs travel in (BlobEncoder::Finish); an Encoding field is
  // set when it is not none, and a Chain field when it is top-k.
  explicit FieldCounter(CompressionCodec sent = CompressionCodec::kNone) : sent_(sent) {}

  // The fields before Optional().
  uint32_t required() const { return required_; }
  // The fields an encoder writes: the required ones, then the optional ones up to the last set.
  uint32_t written() const { return written_; }

  template <class... A>
  void Uint(A&&...) {
    Field(true);
  }
  template <class... A>
  void Count(A&&...) {
    Field(true);
  }
  template <class... A>
  void Int(A&&...) {
    Field(true);
  }
  void Bool(const char* /*name*/, bool value) { Field(value); }
  template <class... A>
  void Float64(A&&...) {
    Field(true);
  }
  template <class... A>
  void String(A&&...) {
    Field(true);
  }
  template <class... A>
  void AnyString(A&&...) {
    Field(true);
  }
  template <class... A>
  void NodeId(A&&...) {
    Field(true);
  }
  template <class Ids, class Limit>
  void NodeIds(const char* /*name*/, const Ids& ids, Limit /*limit*/) {
    Field(ids.has_value());
  }
  template <class List>
  void Codecs(const char* /*name*/, const List& codecs) {
    Field(!codecs.empty());
  }
  template <class S>
  void Struct(const char* /*name*/, const S& /*s*/) {
    Field(true);
  }
  template <class S>
  void Struct(const char* /*name*/, const std::optional<S>& s) {
    Field(s.has_value());
  }
  template <class... A>
  void List(A&&...) {
    Field(true);
  }
  template <class... A>
  void Layout(A&&...) {
    Field(true);
  }
  template <class... A>
  void Dims(A&&...) {
    Field(true);
  }
  void Optional() { optional_ = true; }
  template <class T>
  void Present(const char* /*name*/, const std::optional<T>& values) {
    Field(values.has_value());
  }
  template <class... A>
  void Encoding(A&&...) {
    Field(sent_ != CompressionCodec::kNone);
  }
  template <class... A>
  void Chain(A&&...) {
    Field(sent_ == CompressionCodec::kTopK);
  }

 private:
  void Field(bool set) {
    ++fields_;
    if (!optional_) required_ = fields_;
    if (!optional_ || set) written_ = fields_;
  }

  CompressionCodec sent_;
  bool optional_ = false;
  uint32_t fields_ = 0;
  uint32_t required_ = 0;
  uint32_t written_ = 0;
};

// The number of blob frames a message carries: at least `min` (its Blob slots), at most `max`
// (with the optional ones).
struct BlobCount {
  uint32_t min = 0;
  uint32_t max = 0;
};

// Counts the Blob slots of a description.
class BlobSlots : public NoFields {
 public:
  // What the description's slots add up to.
  BlobCount count() const { return count_; }

  template <class Count>
  void Blob(const char* /*name*/, const FloatArray& /*values*/, Count /*count*/) {
    ++count_.min;
    ++count_.max;
  }
  template <class Count>
  void Blob(const char* /*name*/, const std::optional<FloatArray>& /*values*/, Count /*count*/) {
    ++count_.max;
  }

 private:
  BlobCount count_;
};

// The number of fields an S must have on the wire: those before its Optional(), if any.
template <class S>
uint32_t RequiredFields() {
  static const uint32_t required = [] {
    const S s{};
    FieldCounter counter;
    DescribeFields(counter, s);
    return counter.required();
  }();
  return required;
}

// The blob frames a message of type M carries.
template <class M>
BlobCount BlobCountOf() {
  static const BlobCount count = [] {
    const M m{};
    BlobSlots slots;
    DescribeFields(slots, m);
    return slots.count();
  }();
  return count;
}

}  // namespace meshlearn::codec_internal
