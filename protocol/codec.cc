#include "protocol/codec.h"

#include <msgpack.hpp>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "protocol/field_count.h"
#include "protocol/field_reader.h"
#include "protocol/field_writer.h"
#include "protocol/version.h"
#include "protocol/wire_text.h"

// The codec's public functions: frames in and out, the envelope's checks, and the choice of the
// message struct by type number. Each struct is written and read by its description
// (protocol/messages.h) through protocol/field_writer.h and protocol/field_reader.h.

namespace meshlearn {
namespace codec_internal {
namespace {

Frame ToFrame(msgpack::sbuffer&& buffer) {
  // sbuffer owns a malloc'd block; release() hands it over without copying. The block is cut to
  // the frame's size. Rationale: a body of a few dozen bytes sits in sbuffer's first 256 (or a
  // doubled block) for as long as it travels or waits; a simulation holds millions of them.
  size_t size = buffer.size();
  char* data = buffer.release();
  if (char* fitted = static_cast<char*>(std::realloc(data, std::max<size_t>(size, 1)))) {
    data = fitted;
  }
  std::shared_ptr<const void> owner(data, [](const void* p) { std::free(const_cast<void*>(p)); });
  return Frame::View(data, size, std::move(owner));
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

// The highest type number of a Body alternative; the numbers below it are all taken.
constexpr uint16_t kHighestKnownType = []<size_t... I>(std::index_sequence<I...>) {
  return std::max({static_cast<uint16_t>(std::variant_alternative_t<I, Body>::kType)...});
}
(std::make_index_sequence<std::variant_size_v<Body>>());
static_assert(kHighestKnownType == static_cast<uint16_t>(MessageType::kGoodbye));

// The result of `f.template operator()<M>()` with M the Body alternative whose kType is `type`;
// nullopt when there is none.
template <class F, size_t I = 0>
auto WithBodyType(MessageType type, F&& f)
    -> std::optional<decltype(f.template operator()<Ping>())> {
  if constexpr (I == std::variant_size_v<Body>) {
    return std::nullopt;
  } else {
    using M = std::variant_alternative_t<I, Body>;
    if (M::kType == type) return f.template operator()<M>();
    return WithBodyType<F, I + 1>(type, std::forward<F>(f));
  }
}

// The number of blob frames a message of `type` carries.
BlobCount BlobCountOfType(MessageType type) {
  return WithBodyType(type, []<class M>() { return BlobCountOf<M>(); }).value_or(BlobCount{});
}

// Reads body `object` of a message of `type` with blob frames `blobs`.
Result<Body> ReadBody(MessageType type, const msgpack::object& object, std::span<const Frame> blobs,
                      const DecodeOptions& options) {
  auto read = [&]<class M>() -> Result<Body> {
    M m;
    const ReadContext context{options.limits, options.expected_layout, blobs, BlobCountOf<M>().min};
    MESHLEARN_RETURN_IF_ERROR(ReadStruct(object, MessageTypeName(M::kType), context, m));
    return Body(std::move(m));
  };
  auto body = WithBodyType(type, read);
  if (!body) return Status::UnknownType("message type " + std::to_string(static_cast<int>(type)));
  return std::move(*body);
}

// Reads the fields of a well-formed envelope (an array of at least 7 fields of the right msgpack
// types) without judging their values.
Result<Envelope> ParseEnvelope(const Frame& frame, const Limits& limits) {
  FrameZone zone;
  auto handle = ParseFrame(frame, limits, "envelope");
  if (!handle.ok()) return handle.status();
  Envelope e;
  MESHLEARN_RETURN_IF_ERROR(ReadStruct(*handle, "envelope", ReadContext{limits}, e));
  return e;
}

// Writes `m` by its description: its blob frames, then its body frame before them.
template <class M>
void WriteBody(const M& m, std::vector<Frame>* frames) {
  BlobEncoder blobs;
  DescribeFields(blobs, m);
  std::vector<Frame> blob_frames;
  const CompressionCodec sent = blobs.Finish(&blob_frames);
  msgpack::sbuffer buffer(256);
  FieldWriter(buffer, sent).Write(m);
  frames->reserve(1 + blob_frames.size());
  frames->push_back(ToFrame(std::move(buffer)));
  for (Frame& blob : blob_frames) frames->push_back(std::move(blob));
}

}  // namespace
}  // namespace codec_internal

using namespace codec_internal;

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
  std::visit([&](const auto& m) { WriteBody(m, &encoded.frames); }, body);
  return encoded;
}

std::vector<Frame> Encode(const Envelope& e, const EncodedBody& body) {
  std::vector<Frame> frames;
  frames.reserve(1 + body.frames.size());
  msgpack::sbuffer envelope_buffer(64);
  if (e.type == body.type) {
    FieldWriter(envelope_buffer).Write(e);
  } else {
    Envelope typed = e;
    typed.type = body.type;
    FieldWriter(envelope_buffer).Write(typed);
  }
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
  BlobCount blobs = BlobCountOfType(envelope->type);
  if (frames.size() < 2 + blobs.min || frames.size() > 2 + blobs.max) {
    std::string expected = std::to_string(2 + blobs.min);
    if (blobs.max > blobs.min) expected += " to " + std::to_string(2 + blobs.max);
    return Status::Malformed(std::string(MessageTypeName(envelope->type)) + " has " +
                             std::to_string(frames.size()) + " frames, expected " + expected);
  }
  FrameZone zone;
  auto handle = ParseFrame(frames[1], limits, MessageTypeName(envelope->type));
  if (!handle.ok()) return handle.status();
  auto body = ReadBody(envelope->type, *handle, frames.subspan(2), options);
  if (!body.ok()) return body.status();
  return Message{std::move(*envelope), std::move(*body)};
}

}  // namespace meshlearn
