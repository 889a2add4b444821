#pragma once
// What the protocol allows in its strings (protocol/PROTOCOL.md, "Encoding rules"): every string
// is UTF-8, and a node id is a short name from a safe alphabet.
//
// Rationale: ids travel into logs, CSV files, folder names (node-<id>), JSON and Prometheus labels;
// a restricted alphabet makes all of them safe without escaping, and UTF-8 everywhere keeps the
// JSON of /status valid.

#include <cstddef>
#include <string>
#include <string_view>

namespace meshlearn {

// The longest node id, in bytes (= characters: the alphabet is ASCII).
inline constexpr size_t kMaxNodeIdBytes = 64;

// The rule for node ids, for error messages and documentation.
inline constexpr const char* kNodeIdRule =
    "1 to 64 characters from A-Z a-z 0-9 . _ -, starting with a letter or a digit";

// True when `text` is well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
// U+10FFFF).
bool IsValidUtf8(std::string_view text);

// True when `id` follows kNodeIdRule.
bool IsNodeId(std::string_view id);

// `text` with its control characters (below 0x20, and 0x7f) replaced by '?', for a log line that
// quotes a peer (a Goodbye's reason, a relay's refusal).
std::string Printable(std::string text);

}  // namespace meshlearn
