#pragma once
// Decode limits: every count and size a peer controls is bounded before anything is allocated.

#include <cstdint>

namespace meshlearn {

// Upper bounds applied while decoding a message from a peer. A message above any limit is
// rejected with kTooLarge or kTooMany; nothing is allocated for it beyond the received bytes.
struct Limits {
  uint64_t max_message_bytes = 256ull << 20;  // all frames together (256 MiB)
  uint32_t max_frames = 4;                    // envelope + body + blobs
  uint32_t max_string_bytes = 1024;           // any id, endpoint, key or error text
  uint32_t max_tensors = 4096;                // tensors in one layout
  uint32_t max_tensor_rank = 8;               // dimensions of one tensor
  uint32_t max_peers = 4096;                  // entries of a PeerList
  uint32_t max_score_entries = 4096;          // entries of a score row
  uint32_t max_embed_rows = 4096;             // rows of an EmbedReply
  uint32_t max_embed_cols = 4096;             // columns of an EmbedReply
};

// The most entries an `accepts` codec list may hold (GetModel.accepts, EmbedRequest.accepts;
// too_many above). Rationale: this build decodes three codecs; the list needs no tuning.
inline constexpr uint32_t kMaxAcceptedCodecs = 16;

// The largest tensor dimension and offset a Layout may hold (2^40; malformed above), so that no
// product of a tensor's dimensions is computed from unbounded numbers.
inline constexpr uint64_t kMaxLayoutValue = 1ull << 40;

}  // namespace meshlearn
