#pragma once
// Encoding and decoding of whole messages: Message <-> [envelope][body][blob...] frames.
//
// Decoding never throws and never trusts the peer: every size and count is checked against
// Limits before use, blobs must match their layout exactly, weights must be finite, and a layout
// can be checked against the local model's. Errors come back as a Status whose code is one of
// base/status.h's ErrorCodes and whose message says what was wrong and what is allowed.

#include <span>
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

// Encodes `message` into its frames: envelope, body, then blob frames (weights/embeddings are
// shared, not copied). envelope.type is taken from the body. Never fails.
std::vector<Frame> Encode(const Message& message);

// Decodes only frame 0, the envelope, checking magic, version compatibility and that the type
// is known. Lets a receiver address an Error reply even when the body is bad.
Result<Envelope> DecodeEnvelope(const Frame& frame, const Limits& limits = {});

// Decodes a whole message from its frames under `options`.
Result<Message> Decode(std::span<const Frame> frames, const DecodeOptions& options = {});

// Total bytes of `frames`.
uint64_t TotalBytes(std::span<const Frame> frames);

}  // namespace meshlearn
