#pragma once
// Protocol version constants (see protocol/PROTOCOL.md, "Versions and compatibility").

#include <cstdint>

namespace meshlearn {

// The magic number opening every envelope: the ASCII bytes "MLRN" read as a big-endian uint32.
inline constexpr uint32_t kProtocolMagic = 0x4D4C524E;

// The protocol version this build speaks. Bump when a message gains a field or a type is added,
// and name the first version of the feature below (PROTOCOL.md, "Versions and compatibility").
inline constexpr uint16_t kProtocolVersion = 3;

// The oldest protocol version this build can still talk to.
// Rationale: a node must refuse, with a clear Error, peers whose messages it cannot interpret,
// instead of mis-decoding them.
inline constexpr uint16_t kMinProtocolVersion = 1;

// Per-feature minimum versions: a node uses a feature with a peer only when the peer's Hello or
// HelloAck envelope announced at least this protocol_version.
// Rationale: an older peer would answer the feature with Error(unknown_type) at best; knowing its
// version, the node does not ask.

// Goodbye (type 17).
inline constexpr uint16_t kGoodbyeVersion = 2;

// Compressed models: GetModel.accepts and Model.encoding, whose blobs hold the compressed bytes of
// protocol/compression.h (PROTOCOL.md, "Compressed models").
inline constexpr uint16_t kCompressedModelVersion = 3;

// Compressed embeddings of the EMD exchange: EmbedRequest.accepts, EmbedReply.encoding and
// WitnessRows.encoding, whose blobs hold fp16 or int8 bytes (PROTOCOL.md, "Compressed
// embeddings").
// Rationale: part of version 3, which no release announced without it; a version-3 node that
// predates the fields ignores accepts (and so answers float32), and no node compresses rows for
// a witness that does not announce this version.
inline constexpr uint16_t kCompressedEmbeddingVersion = 3;

}  // namespace meshlearn
