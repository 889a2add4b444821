// libFuzzer target for the wire decoder: DecodeEnvelope() and Decode() of protocol/codec.h, and
// the compressed blob decoder of protocol/compression.h.
//
// Input: one multipart message as a length-prefixed frame sequence
// (tests/protocol/fuzz/fuzz_input.h). The seeds are the fixtures of every protocol version in
// tests/protocol/testdata/, converted at build time, and one single-frame seed per compressed
// sample blob (tests/protocol/sample_messages.h, CompressedSamples()).
//
// Contract. For every input the decoder must:
//  1. return: never crash, hang, leak, read out of bounds or hit undefined behaviour (the fuzz
//     build adds AddressSanitizer, UndefinedBehaviorSanitizer and libstdc++ assertions);
//  2. reject with a non-OK Status that has a known code and a non-empty message;
//  3. agree with itself: when Decode() accepts frames, DecodeEnvelope() accepts frame 0 and returns
//     the same envelope;
//  4. round-trip: an accepted message re-encodes (Encode) to frames that decode to an equal
//     message, and encoding that message again gives the same bytes (an int8 Model, EmbedReply
//     or WitnessRows: re-encoded it decodes, and as float32 it round-trips so);
//  5. keep blobs consistent with what describes them (PROTOCOL.md, "Message types"): a Model's,
//     EmbedRequest's or WitnessEmbedRequest's weights (and a Model's optional update) hold exactly
//     the floats its layout covers, counted without wrap-around, and an EmbedReply's or
//     WitnessRows' embeddings and a Signature's centroids exactly rows * cols;
//  6. honour an expected layout: with the message's own layout as expected_layout it decodes to
//     the same message, and with SampleLayout() (the fixtures' layout) it succeeds exactly when
//     the default decode succeeds and the message has no layout or that very layout;
//  7. be monotone in its limits: a message accepted under small limits, from frames at odd
//     addresses, is accepted under the default limits as the same message;
//  8. accept only valid text (PROTOCOL.md, "Encoding rules", "Node ids"): every string of an
//     accepted message is UTF-8 and every node id field follows the id rule;
//  9. address refusals: whenever DecodeEnvelope accepts frame 0, AddressOf names its sender and
//     request id;
// 10. decode compressed blobs safely: every frame, read as a compressed blob of the count its
//     header names (up to kMaxFuzzBlobCount), is refused with a usable Status or decodes to finite
//     values only; it decodes to the same bits from an odd address, is refused for any other
//     count, and a none or fp16 blob (whose decoding loses nothing) re-encodes to its own bytes.
// A violation of 2-7 or 10 prints what differed and aborts, which libFuzzer reports as a crash and
// saves as a reproducer: it is a decoder bug, never a harness problem.
//
// Running it by hand and how long the test suite runs it: README.md, "Tests". Without libFuzzer
// (g++ builds) replay_main.cc drives this same function over files, e.g. the seed corpus.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "protocol/codec.h"
#include "protocol/compression.h"
#include "protocol/wire_text.h"
#include "tests/protocol/fuzz/fuzz_input.h"
#include "tests/protocol/sample_messages.h"

namespace meshlearn::fuzz {
namespace {

[[noreturn]] void Violated(const std::string& what) {
  std::fprintf(stderr, "decode_fuzzer: contract violated: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

template <typename T>
void CheckRejection(const Result<T>& result, const char* call) {
  if (result.ok()) return;
  const Status& s = result.status();
  if (s.ok() || s.message().empty() || std::string(ErrorCodeName(s.code())) == "unknown") {
    Violated(std::string(call) + " rejected with an unusable status: code " +
             std::to_string(static_cast<int>(s.code())) + ", message '" + s.message() + "'");
  }
}

const ParamLayout* LayoutOf(const Body& body) {
  if (const auto* model = std::get_if<Model>(&body)) return &model->layout;
  if (const auto* request = std::get_if<EmbedRequest>(&body)) return &request->layout;
  if (const auto* witnessed = std::get_if<WitnessEmbedRequest>(&body)) return &witnessed->layout;
  return nullptr;
}

// Why `floats` values cannot be the blob `layout` describes, counting in exact arithmetic; empty
// when they can.
std::string LayoutBlobMismatch(const ParamLayout& layout, uint64_t floats) {
  uint64_t covered = 0;
  for (const TensorSpec& t : layout.tensors) {
    if (t.offset != covered) {
      return "tensor '" + t.name + "' starts at offset " + std::to_string(t.offset) +
             " but the tensors before it hold " + std::to_string(covered) + " floats";
    }
    bool empty = std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end();
    uint64_t numel = empty ? 0 : 1;
    for (int64_t d : t.shape) {
      if (d < 0) return "tensor '" + t.name + "' has a negative dimension";
      if (!empty && numel > UINT64_MAX / static_cast<uint64_t>(d)) {
        return "tensor '" + t.name + "' has 2^64 or more elements";
      }
      if (!empty) numel *= static_cast<uint64_t>(d);
    }
    if (numel > UINT64_MAX - covered) return "the layout covers 2^64 or more floats";
    covered += numel;
  }
  if (covered != floats) {
    return "the layout covers " + std::to_string(covered) + " floats but the blob holds " +
           std::to_string(floats);
  }
  return "";
}

// Why a rows x cols body field and a blob of `floats` values disagree, or "" when they do not.
std::string RowsBlobMismatch(uint32_t rows, uint32_t cols, size_t floats) {
  if (static_cast<uint64_t>(rows) * cols == floats) return "";
  return std::to_string(rows) + " x " + std::to_string(cols) + " but holds " +
         std::to_string(floats) + " floats";
}

void CheckBlobs(const Body& body) {
  std::string problem;
  if (const auto* model = std::get_if<Model>(&body)) {
    problem = LayoutBlobMismatch(model->layout, model->weights.size());
    if (problem.empty() && model->update) {
      problem = LayoutBlobMismatch(model->layout, model->update->size());
      if (!problem.empty()) problem = "update: " + problem;
    }
  } else if (const auto* request = std::get_if<EmbedRequest>(&body)) {
    problem = LayoutBlobMismatch(request->layout, request->weights.size());
  } else if (const auto* witnessed = std::get_if<WitnessEmbedRequest>(&body)) {
    problem = LayoutBlobMismatch(witnessed->layout, witnessed->weights.size());
  } else if (const auto* rows = std::get_if<WitnessRows>(&body)) {
    problem = RowsBlobMismatch(rows->rows, rows->cols, rows->embeddings.size());
  } else if (const auto* reply = std::get_if<EmbedReply>(&body)) {
    problem = RowsBlobMismatch(reply->rows, reply->cols, reply->embeddings.size());
  } else if (const auto* signature = std::get_if<Signature>(&body)) {
    problem = RowsBlobMismatch(signature->rows, signature->cols, signature->centroids.size());
  }
  if (!problem.empty()) {
    Violated("accepted " + std::string(MessageTypeName(TypeOf(body))) + ": " + problem);
  }
}

// Contract 8: the strings and node ids of an accepted message.
void CheckText(const Message& message) {
  std::vector<const std::string*> ids = {&message.envelope.sender};
  std::vector<const std::string*> texts;
  const Body& body = message.body;
  auto peer = [&](const PeerInfo& p) {
    ids.push_back(&p.id);
    texts.push_back(&p.endpoint);
    texts.push_back(&p.public_key);
  };
  if (const auto* hello = std::get_if<Hello>(&body)) {
    texts = {&hello->listen_endpoint, &hello->architecture_id, &hello->metric, &hello->public_key};
  } else if (const auto* ack = std::get_if<HelloAck>(&body)) {
    texts = {&ack->listen_endpoint, &ack->architecture_id, &ack->metric, &ack->public_key};
  } else if (const auto* list = std::get_if<PeerList>(&body)) {
    for (const PeerInfo& p : list->peers) peer(p);
  } else if (const auto* model = std::get_if<Model>(&body)) {
    for (const PeerScore& s : model->score_row) ids.push_back(&s.peer);
    for (const TensorSpec& t : model->layout.tensors) texts.push_back(&t.name);
  } else if (const auto* witnessed = std::get_if<WitnessEmbedRequest>(&body)) {
    peer(witnessed->witness);
  } else if (const auto* rows = std::get_if<WitnessRows>(&body)) {
    ids = {&message.envelope.sender, &rows->requester, &rows->responder};
  } else if (const auto* error = std::get_if<Error>(&body)) {
    texts.push_back(&error->text);
  } else if (const auto* goodbye = std::get_if<Goodbye>(&body)) {
    texts.push_back(&goodbye->reason);
  }
  for (const std::string* id : ids) {
    if (!IsNodeId(*id)) Violated("accepted a node id that breaks the id rule");
  }
  for (const std::string* text : texts) {
    if (!IsValidUtf8(*text)) Violated("accepted a string that is not UTF-8");
  }
}

// The encoding of a body whose blobs may travel compressed (Model, EmbedReply, WitnessRows), or
// nullptr.
CompressionSettings* EncodingOf(Body& body) {
  return std::visit(
      [](auto& m) -> CompressionSettings* {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Model> || std::is_same_v<T, EmbedReply> ||
                      std::is_same_v<T, WitnessRows>) {
          return &m.encoding;
        } else {
          return nullptr;
        }
      },
      body);
}

void CheckRoundTrip(const Message& message) {
  // An int8 Model, EmbedReply or WitnessRows (version 3) re-encodes to frames that decode, and
  // round-trips as float32.
  // Rationale: int8 is lossy (protocol/compression.h, rule 3): the scale of re-quantised values
  // may differ by an ulp, so only the decoded floats are checked exactly; contract 10 checks the
  // int8 blob itself.
  Message decoded = message;
  if (CompressionSettings* encoding = EncodingOf(decoded.body);
      encoding != nullptr && encoding->codec == CompressionCodec::kInt8) {
    auto int8 = Decode(Encode(message));
    if (!int8.ok()) {
      Violated(std::string("an accepted int8 ") + MessageTypeName(message.envelope.type) +
               " re-encodes to frames that do not decode: " + int8.status().ToString());
    }
    *encoding = {};
  }
  std::vector<Frame> encoded = Encode(decoded);
  auto again = Decode(encoded);
  if (!again.ok()) {
    Violated("an accepted message re-encodes to frames that do not decode: " +
             again.status().ToString());
  }
  if (!(*again == decoded)) Violated("an accepted message decodes differently after re-encoding");
  if (Encode(*again) != encoded) Violated("re-encoding a round-tripped message changes its bytes");
}

// Limits far below the defaults, so that most fixtures and their mutants run into one.
Limits SmallLimits() {
  Limits limits;
  limits.max_message_bytes = 512;
  limits.max_frames = 3;
  limits.max_string_bytes = 16;
  limits.max_tensors = 3;
  limits.max_tensor_rank = 2;
  limits.max_peers = 2;
  limits.max_score_entries = 2;
  limits.max_embed_rows = 4;
  limits.max_embed_cols = 4;
  return limits;
}

// Copies of `frames` that start at odd addresses and end where their heap block ends.
// Rationale: FloatArrayOf views aligned blobs and copies unaligned ones; both paths must
// decode alike.
std::vector<Frame> Misaligned(const std::vector<Frame>& frames) {
  std::vector<Frame> out;
  for (const Frame& frame : frames) {
    auto block = std::make_shared<std::vector<uint8_t>>(frame.size() + 1);
    std::copy(frame.bytes().begin(), frame.bytes().end(), block->begin() + 1);
    out.push_back(Frame::View(block->data() + 1, frame.size(), block));
  }
  return out;
}

// The largest element count a compressed blob is decoded at: a 12-byte top-k blob may name up to
// 2^32 - 1 values, which a node never expects (it decodes at its own model's size).
constexpr uint32_t kMaxFuzzBlobCount = 1u << 16;

// Contract 10: `frame` read as a compressed blob (PROTOCOL.md, "Compressed blob encodings").
void CheckCompressedBlob(const Frame& frame) {
  uint32_t count = 0;  // the header's element count, bytes 4-7
  if (frame.size() >= 8) std::memcpy(&count, frame.data() + 4, sizeof(count));
  if (count > kMaxFuzzBlobCount) return;
  auto decoded = DecodeCompressed(frame.bytes(), count);
  CheckRejection(decoded, "DecodeCompressed");
  if (!decoded.ok()) return;
  for (float value : *decoded) {
    if (!std::isfinite(value)) Violated("DecodeCompressed accepted a blob with a NaN or Inf value");
  }
  auto unaligned = DecodeCompressed(Misaligned({frame})[0].bytes(), count);
  if (!unaligned.ok() ||
      (count > 0 && std::memcmp(unaligned->data(), decoded->data(), count * sizeof(float)) != 0)) {
    Violated("a compressed blob decodes differently from an odd address");
  }
  auto other_count = DecodeCompressed(frame.bytes(), count + 1);
  if (other_count.ok()) Violated("a compressed blob decodes at a count its header does not name");
  const auto codec = static_cast<CompressionCodec>(frame.data()[0]);
  if (codec == CompressionCodec::kNone || codec == CompressionCodec::kFp16) {
    CompressionSettings settings;
    settings.codec = codec;
    auto again = EncodeCompressed(*decoded, settings);
    if (!again.ok() ||
        !std::equal(again->begin(), again->end(), frame.bytes().begin(), frame.bytes().end())) {
      Violated(std::string("a ") + CompressionCodecName(codec) +
               " blob does not re-encode to its own bytes");
    }
  }
}

void CheckInput(const std::vector<Frame>& frames) {
  for (const Frame& frame : frames) CheckCompressedBlob(frame);
  std::optional<Result<Envelope>> envelope;
  if (!frames.empty()) {
    envelope.emplace(DecodeEnvelope(frames[0]));
    CheckRejection(*envelope, "DecodeEnvelope");
    if (envelope->ok()) {
      EnvelopeAddress address = AddressOf(frames[0]);
      if (address.sender != (*envelope)->sender || address.request_id != (*envelope)->request_id) {
        Violated("AddressOf disagrees with an envelope DecodeEnvelope accepts");
      }
    }
  }

  auto decoded = Decode(frames);
  CheckRejection(decoded, "Decode");
  if (decoded.ok()) {
    if (!envelope || !envelope->ok()) {
      Violated("Decode accepts a message whose envelope DecodeEnvelope rejects");
    }
    if (!(**envelope == decoded->envelope)) {
      Violated("DecodeEnvelope and Decode return different envelopes");
    }
    CheckBlobs(decoded->body);
    CheckText(*decoded);
    CheckRoundTrip(*decoded);
  }

  const ParamLayout* own = decoded.ok() ? LayoutOf(decoded->body) : nullptr;
  if (own != nullptr) {
    DecodeOptions options;
    options.expected_layout = own;
    auto with_own = Decode(frames, options);
    if (!with_own.ok()) {
      Violated("a message is rejected when its own layout is expected: " +
               with_own.status().ToString());
    }
    if (!(*with_own == *decoded)) Violated("expecting a message's own layout changes the message");
  }

  static const ParamLayout kSampleLayout = testing::SampleLayout();
  DecodeOptions sample;
  sample.expected_layout = &kSampleLayout;
  auto with_sample = Decode(frames, sample);
  CheckRejection(with_sample, "Decode with an expected layout");
  bool should_accept = decoded.ok() && (own == nullptr || *own == kSampleLayout);
  if (with_sample.ok() != should_accept) {
    Violated(std::string("with SampleLayout() expected, Decode ") +
             (with_sample.ok() ? "accepts" : "rejects (" + with_sample.status().ToString() + ")") +
             " a message the default decode " + (decoded.ok() ? "accepts" : "rejects") +
             (own != nullptr && !(*own == kSampleLayout) ? " with a different layout" : ""));
  }
  if (with_sample.ok() && !(*with_sample == *decoded)) {
    Violated("expecting SampleLayout() changes the decoded message");
  }

  DecodeOptions small;
  small.limits = SmallLimits();
  auto limited = Decode(Misaligned(frames), small);
  CheckRejection(limited, "Decode under small limits");
  if (limited.ok()) {
    if (!decoded.ok()) {
      Violated("a message accepted under small limits is rejected under the defaults: " +
               decoded.status().ToString());
    }
    if (!(*limited == *decoded)) {
      Violated("small limits or unaligned frames change the decoded message");
    }
  }
}

}  // namespace
}  // namespace meshlearn::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  meshlearn::fuzz::CheckInput(meshlearn::fuzz::SplitFuzzInput({data, size}));
  return 0;
}
