#include "node/transport/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/atomic_file.h"
#include "protocol/wire_text.h"

namespace meshlearn::node {
namespace {

constexpr const char* kWhitespace = " \t\r";

std::string Trim(std::string_view text) {
  size_t begin = text.find_first_not_of(kWhitespace);
  if (begin == std::string_view::npos) return "";
  size_t end = text.find_last_not_of(kWhitespace);
  return std::string(text.substr(begin, end - begin + 1));
}

// One key found in a key file, the node id bound to it ("" for none) and its line (1-based).
struct KeyLine {
  std::string key;
  std::string node_id;
  int line = 0;
};

// The keys of a key file's text (see the format in the header). `name` (e.g. "allowlist file
// 'x'") prefixes errors. Errors never quote the line: it may hold a secret key.
Result<std::vector<KeyLine>> ParseKeyLines(const std::string& text, const std::string& name) {
  std::vector<KeyLine> keys;
  size_t start = 0;
  for (int line_number = 1; start <= text.size(); ++line_number) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = Trim(std::string_view(text).substr(start, end - start));
    start = end + 1;
    if (line.empty() || line[0] == '#') continue;
    size_t word_end = line.find_first_of(kWhitespace);
    std::string word = line.substr(0, word_end);
    std::string rest = word_end == std::string::npos ? "" : Trim(line.substr(word_end));
    std::string where = name + ", line " + std::to_string(line_number);
    if (!IsZ85Key(word)) {
      return Status::InvalidArgument(where + ": not a CURVE key (" + std::to_string(kZ85KeyLength) +
                                     " Z85 characters, as meshlearn-keygen writes; this one has " +
                                     std::to_string(word.size()) +
                                     ") nor a comment (a line starting with '#')");
    }
    std::string node_id;
    if (!rest.empty() && rest[0] != '#') {
      size_t id_end = rest.find_first_of(kWhitespace);
      node_id = rest.substr(0, id_end);
      rest = id_end == std::string::npos ? "" : Trim(rest.substr(id_end));
      if (!IsNodeId(node_id) || (!rest.empty() && rest[0] != '#')) {
        return Status::InvalidArgument(where + ": after the key, only the node id bound to it (" +
                                       kNodeIdRule + ") and a '#' comment may follow");
      }
    }
    keys.push_back({word, node_id, line_number});
  }
  return keys;
}

// The whole text of the key file at `path`, described as `what` ("secret key file") in errors.
// With `private_only`, a file that group or others may access is refused: its mode is checked on
// the descriptor the text is read from.
Result<std::string> ReadKeyFileText(const std::string& path, const std::string& what,
                                    bool private_only) {
  std::string name = what + " '" + path + "'";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    if (error == ENOENT) return Status::NotFound(name + " does not exist");
    return Status::IoError("cannot open " + name + ": " + std::strerror(error));
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return Status::IoError("cannot read " + name + ": not a regular file");
  }
  if (private_only && (info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return Status::InvalidArgument(name + " is accessible by group or others (mode " + mode +
                                   "); a secret key must be private: chmod 600 " + path);
  }
  std::string text;
  std::array<char, 4096> chunk;
  for (;;) {
    ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      ::close(fd);
      return Status::IoError("cannot read " + name + ": " + std::strerror(error));
    }
    if (n == 0) break;
    text.append(chunk.data(), static_cast<size_t>(n));
    if (text.size() > (1u << 24)) {
      ::close(fd);
      return Status::InvalidArgument(name + " is larger than 16 MiB; it is not a key file");
    }
  }
  ::close(fd);
  return text;
}

// Writes all of `text` to `fd`; false on failure (errno set).
bool WriteAll(int fd, const std::string& text) {
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool IsZ85Key(std::string_view key) {
  if (key.size() != kZ85KeyLength) return false;
  std::string terminated(key);  // zmq_z85_decode reads up to a NUL
  std::array<uint8_t, 32> bytes;
  return zmq_z85_decode(bytes.data(), terminated.c_str()) != nullptr;
}

Result<CurveKeyPair> GenerateCurveKeyPair() {
  std::array<char, kZ85KeyLength + 1> public_key{};
  std::array<char, kZ85KeyLength + 1> secret_key{};
  if (zmq_curve_keypair(public_key.data(), secret_key.data()) != 0) {
    return Status::Internal(std::string("cannot generate a CURVE key pair (libzmq without CURVE "
                                        "support?): ") +
                            zmq_strerror(zmq_errno()));
  }
  return CurveKeyPair{public_key.data(), secret_key.data()};
}

Result<std::string> CurvePublicKeyOf(const std::string& secret_key) {
  if (!IsZ85Key(secret_key)) {
    return Status::InvalidArgument("a CURVE secret key must be " + std::to_string(kZ85KeyLength) +
                                   " Z85 characters");
  }
  std::array<char, kZ85KeyLength + 1> public_key{};
  if (zmq_curve_public(public_key.data(), secret_key.c_str()) != 0) {
    return Status::Internal(std::string("cannot derive a CURVE public key: ") +
                            zmq_strerror(zmq_errno()));
  }
  return std::string(public_key.data());
}

Result<CurveKeyPair> ReadSecretKeyFile(const std::string& path) {
  const std::string what = "secret key file";
  auto text = ReadKeyFileText(path, what, /*private_only=*/true);
  if (!text.ok()) return text.status();
  std::string name = what + " '" + path + "'";
  auto keys = ParseKeyLines(*text, name);
  if (!keys.ok()) return keys.status();
  if (keys->size() != 1) {
    return Status::InvalidArgument(name + " must hold exactly one key (found " +
                                   std::to_string(keys->size()) +
                                   "); write one with meshlearn-keygen");
  }
  CurveKeyPair pair;
  pair.secret_key = keys->front().key;
  auto public_key = CurvePublicKeyOf(pair.secret_key);
  if (!public_key.ok()) return public_key.status().WithContext(name);
  pair.public_key = *public_key;
  return pair;
}

Result<std::vector<AllowedKey>> ReadAllowlistFile(const std::string& path) {
  const std::string what = "public key file";
  auto text = ReadKeyFileText(path, what, /*private_only=*/false);
  if (!text.ok()) return text.status();
  auto lines = ParseKeyLines(*text, what + " '" + path + "'");
  if (!lines.ok()) return lines.status();
  std::vector<AllowedKey> keys;
  for (const KeyLine& line : *lines) keys.push_back({line.key, line.node_id});
  return keys;
}

Result<std::vector<std::string>> ReadPublicKeysFile(const std::string& path) {
  auto allowed = ReadAllowlistFile(path);
  if (!allowed.ok()) return allowed.status();
  std::vector<std::string> keys;
  for (const AllowedKey& k : *allowed) keys.push_back(k.key);
  return keys;
}

Status WritePublicKeysFile(const std::string& path, const std::string& header,
                           const std::vector<LabelledKey>& keys) {
  if (header.find('\n') != std::string::npos) {
    return Status::InvalidArgument(path + ": the header must be one line");
  }
  std::string text = "# " + header + "\n";
  for (const LabelledKey& k : keys) {
    if (!IsZ85Key(k.key)) {
      return Status::InvalidArgument(path + ": '" + k.key + "' is not a Z85 CURVE key");
    }
    if (k.label.find('\n') != std::string::npos) {
      return Status::InvalidArgument(path + ": a key label must be one line");
    }
    if (!k.node_id.empty() && !IsNodeId(k.node_id)) {
      return Status::InvalidArgument(path + ": '" + k.node_id +
                                     "' is not a node id: " + kNodeIdRule);
    }
    text += k.key + (k.node_id.empty() ? "" : " " + k.node_id) +
            (k.label.empty() ? "" : "  # " + k.label) + "\n";
  }
  return WriteFileAtomically(path, text);
}

std::string SecretKeyPath(const std::string& dir, const std::string& name) {
  return dir + "/" + name + ".key";
}

std::string PublicKeyPath(const std::string& dir, const std::string& name) {
  return dir + "/" + name + ".pub";
}

Status WriteKeyPairFiles(const std::string& dir, const std::string& name, const CurveKeyPair& pair,
                         bool overwrite, const std::string& node_id) {
  if (!IsZ85Key(pair.public_key) || !IsZ85Key(pair.secret_key)) {
    return Status::InvalidArgument("not a CURVE key pair: keys must be Z85 (40 characters)");
  }
  if (!node_id.empty() && !IsNodeId(node_id)) {
    return Status::InvalidArgument("'" + node_id + "' is not a node id: " + kNodeIdRule);
  }
  if (name.empty() || name.find('/') != std::string::npos || name.find('\n') != std::string::npos) {
    return Status::InvalidArgument("key name '" + name +
                                   "' must be non-empty, one line and have no '/'");
  }
  std::string secret_path = SecretKeyPath(dir, name);
  std::string public_path = PublicKeyPath(dir, name);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::NotFound("key folder '" + dir + "' does not exist");
  }
  for (const std::string& path : {secret_path, public_path}) {
    if (!overwrite &&
        std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found) {
      return Status::InvalidArgument("'" + path +
                                     "' already exists; refusing to overwrite a key (--force "
                                     "replaces it)");
    }
  }
  // Created with mode 0600 and O_EXCL: the secret is never readable by others, not even between
  // a create and a chmod, and a planted symlink is not followed.
  if (overwrite && ::unlink(secret_path.c_str()) != 0 && errno != ENOENT) {
    return Status::IoError("cannot replace '" + secret_path + "': " + std::strerror(errno));
  }
  int fd = ::open(secret_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    return Status::IoError("cannot create '" + secret_path + "': " + std::strerror(errno));
  }
  std::string text = "# meshlearn CURVE secret key of " + name +
                     ", written by meshlearn-keygen. Keep it private (mode 0600).\n"
                     "# Its public key (also in " +
                     name + ".pub): " + pair.public_key + "\n" + pair.secret_key + "\n";
  bool written = WriteAll(fd, text) && ::fsync(fd) == 0;
  int error = errno;
  ::close(fd);
  if (!written) {
    ::unlink(secret_path.c_str());
    return Status::IoError("cannot write '" + secret_path + "': " + std::strerror(error));
  }
  return WritePublicKeysFile(
      public_path,
      "meshlearn CURVE public key of " + name +
          (node_id.empty() ? " (any node id may use it)" : ", bound to node id " + node_id),
      {{pair.public_key, node_id, ""}});
}

}  // namespace meshlearn::node
