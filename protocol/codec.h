#pragma once
// Encoding and decoding of whole messages: Message <-> [envelope][body][blob...] frames. Every
// struct is written and read by its one description (protocol/messages.h, "One description per
// struct"); this file adds the frames, the envelope's checks and the choice of struct by type.
//
// Decoding never throws and never trusts the peer: every size and count is checked against
// Limits before use, blobs must match their layout exactly, weights must be finite, and a layout
// can be checked against the local model's. Errors come back as a Status whose code is one of
// base/status.h's ErrorCodes and whose message says what was wrong and what is allowed.

#include <span>
#include <string>
#include <vector>

#include "base/param_layout.h"
#include "base/status.h"
#include "protocol/frame.h"
#include "protocol/limits.h"
#include "protocol/messages.h"

namespace meshlearn {

// What a decoder checks beyond well-formedness.
struct DecodeOptions {
  Limits limits;
  // When set, a Model's or EmbedRequest's layout must equal this one (the local model's).
  const ParamLayout* expected_layout = nullptr;
};

// The codecs this build decodes a Model's blobs from besides none (fp16, int8 and topk), in the
// order a GetModel lists them in accepts (PROTOCOL.md, "Compressed models"). A top-k Model carries
// a chain of updates of the owner's public estimate (Model.chain), never a whole model.
std::span<const CompressionCodec> ModelCodecs();

// The codecs this build decodes projected embeddings from besides none (fp16 and int8: the
// EmbedReply and WitnessRows blobs), in the order an EmbedRequest lists them in accepts
// (PROTOCOL.md, "Compressed embeddings").
// Rationale: embeddings travel once per pair, whole; top-k's public estimate has nothing to
// build on.
std::span<const CompressionCodec> EmbeddingCodecs();

// Encodes `message` into its frames: envelope, body, then blob frames (weights/embeddings are
// shared, not copied). envelope.type is taken from the body. Never fails.
std::vector<Frame> Encode(const Message& message);

// A message body encoded once, to be sent under many envelopes: the body frame and its blob
// frames. Copying it shares the frames; it never copies their bytes.
// Rationale: a node answers every requester of a round with the same model snapshot, so its body
// is encoded once per snapshot and each reply costs an envelope; an encoding that costs more than
// a copy (a compressed model) is paid once per snapshot, not once per requester.
struct EncodedBody {
  MessageType type = MessageType::kPing;  // the type of the body it encodes
  std::vector<Frame> frames;              // the body frame, then the blob frames
};

// Encodes `body` alone: the frames that follow the envelope in Encode(). Never fails.
EncodedBody EncodeBody(const Body& body);

// Encodes a message of `envelope` and the already encoded `body`: the same bytes as Encode() of
// that envelope and the body `body` encodes. envelope.type is taken from `body`. Never fails.
std::vector<Frame> Encode(const Envelope& envelope, const EncodedBody& body);

// Decodes only frame 0, the envelope: a well-formed array (kMalformed), then in this order the
// magic (kBadMagic), version compatibility (kUnsupportedVersion), a known type (kUnknownType) and a
// sender that is a node id (kInvalidArgument, protocol/wire_text.h).
Result<Envelope> DecodeEnvelope(const Frame& frame, const Limits& limits = {});

// Who to answer when a message is refused: the request id of a well-formed envelope, and its
// sender when that is a node id.
struct EnvelopeAddress {
  std::string sender;       // empty when frame 0 is not well-formed or the sender not a node id
  uint64_t request_id = 0;  // 0 when frame 0 is not well-formed
};

// The address of envelope frame `frame` whatever its values: an Error refusing the message
// (bad_magic, unsupported_version, unknown_type included) then carries the request id, so that the
// requester can match it (PROTOCOL.md, "Envelope").
EnvelopeAddress AddressOf(const Frame& frame, const Limits& limits = {});

// Decodes a whole message from its frames under `options`.
Result<Message> Decode(std::span<const Frame> frames, const DecodeOptions& options = {});

// Total bytes of `frames`.
uint64_t TotalBytes(std::span<const Frame> frames);

}  // namespace meshlearn
