#pragma once
// CURVE key pairs and the files that hold them (DESIGN.md "Reliability and security").
//
// Keys are Z85 text, 40 characters for 32 bytes, as ZeroMQ writes them. Three kinds of file, all
// plain text, one key per line:
// - a secret key file (`<name>.key`, mode 0600) holds exactly one key: the node's secret key.
//   The public key is derived from it, so one file is all a node needs;
// - a public key file (`<name>.pub`) holds exactly one key: the one to hand to peers;
// - an allowlist file holds any number of public keys. A public key file is an allowlist of one,
//   so `cat *.pub > allowed_keys` builds a mesh's allowlist.
// In every kind, blank lines and lines starting with `#` (comments) are skipped; any other line
// holds one key, optionally followed by the node id the key is bound to, then optionally by a `#`
// comment:
//     <key>                       a key any node id may use
//     <key> <node id>             a key only that node id may use (a Hello claiming another id
//                                 is refused, node/logic/membership.h)
//     <key> <node id>  # <text>   the same with a comment (e.g. the key file's name)
// The id must follow the node id rule (protocol/wire_text.h). A secret key file ignores it.
// Rationale: files written before ids were bound (a key and a comment) keep working, unbound;
// meshlearn-keygen writes the id into each .pub file, so `cat *.pub` gives a bound allowlist.
// Rationale: `#` is a Z85 character, but it is the digit 84 and 84 * 85^4 > 2^32 - 1, so no valid
// key starts with it; the comment marker can never be mistaken for a key.
//
// This module uses libzmq's key functions and never opens a socket.

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace meshlearn::node {

// Length of a Z85-encoded CURVE key.
inline constexpr size_t kZ85KeyLength = 40;

// A CURVE key pair, both halves Z85.
struct CurveKeyPair {
  std::string public_key;
  std::string secret_key;
  bool operator==(const CurveKeyPair&) const = default;
};

// True when `key` is 40 characters of valid Z85, i.e. a CURVE key ZeroMQ accepts.
bool IsZ85Key(std::string_view key);

// A fresh random key pair (libsodium through libzmq). kInternal when libzmq has no CURVE.
Result<CurveKeyPair> GenerateCurveKeyPair();

// The public key that belongs to `secret_key`. kInvalidArgument when `secret_key` is not a key.
Result<std::string> CurvePublicKeyOf(const std::string& secret_key);

// Reads the secret key file at `path` and derives its public key. Every error names the file:
// kNotFound (missing), kIoError (unreadable), kInvalidArgument (not exactly one key, a line that
// is neither key nor comment, or the file is accessible to group or others: a secret key file must
// be mode 0600 or stricter, as meshlearn-keygen writes it).
Result<CurveKeyPair> ReadSecretKeyFile(const std::string& path);

// One key of a public key or allowlist file and the node id bound to it.
struct AllowedKey {
  std::string key;
  std::string node_id;  // "" when the line binds the key to no id
  bool operator==(const AllowedKey&) const = default;
};

// Reads the keys of an allowlist or public key file at `path`, with the ids bound to them, in file
// order. Every error names the file (and the line): kNotFound, kIoError, kInvalidArgument (a bad
// line). An empty list is not an error here.
Result<std::vector<AllowedKey>> ReadAllowlistFile(const std::string& path);

// The keys alone of ReadAllowlistFile(`path`).
Result<std::vector<std::string>> ReadPublicKeysFile(const std::string& path);

// One key of a public key or allowlist file, the node id bound to it and a comment.
struct LabelledKey {
  std::string key;
  std::string node_id;  // written after the key; may be empty (any id may use the key)
  std::string label;    // written as "# <label>" after them; may be empty
};

// Writes an allowlist (or public key) file at `path`: the `header` as a `#` comment line, then
// one key per line with its node id and label. Replaces an existing file. kInvalidArgument for a
// key that is not Z85, an id that is not a node id or a label with a newline; kIoError naming the
// file when it cannot be written.
Status WritePublicKeysFile(const std::string& path, const std::string& header,
                           const std::vector<LabelledKey>& keys);

// Writes `pair` as `<dir>/<name>.key` (the secret key, created with mode 0600 so it is never
// readable by others, not even for a moment) and `<dir>/<name>.pub` (the public key, mode 0644,
// bound to node id `node_id` unless it is empty).
// `dir` must exist. Without `overwrite`, an existing file of either name fails with
// kInvalidArgument naming it, and nothing is written; with it, old files are replaced (the secret
// one is removed and created afresh, so its mode is 0600 whatever it was). kIoError naming the
// file on a write failure.
Status WriteKeyPairFiles(const std::string& dir, const std::string& name, const CurveKeyPair& pair,
                         bool overwrite, const std::string& node_id = "");

// The paths WriteKeyPairFiles() writes: "<dir>/<name>.key" and "<dir>/<name>.pub".
std::string SecretKeyPath(const std::string& dir, const std::string& name);
std::string PublicKeyPath(const std::string& dir, const std::string& name);

}  // namespace meshlearn::node
