#pragma once
// The two `keys` objects that run a section's description (node/config/config.h, "One
// description per section"): KeyReader reads a TOML table into a section, KeyWriter writes a
// section out as TOML. Each offers the same calls, one per kind of key; a kind of key is read and
// written here and nowhere else. Internal to node/config: it exposes toml++.

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "base/named_value.h"
#include "base/status.h"
#include "base/toml_reader.h"
#include "node/config/config.h"

namespace meshlearn::node {

// An inline allowlist entry: "<key>" or "<key> <node id>".
struct InlineKey {
  std::string key;
  std::string node_id;
};

// Splits inline allowlist entry `entry`; nullopt when it is not one.
std::optional<InlineKey> ParseInlineKey(const std::string& entry);

// `s` as a TOML string literal (quoted and escaped).
std::string TomlString(const std::string& s);

// The description of one [[peers]] entry (a `keys` call of NodeConfig::Describe).
template <class Keys, class Peer>
void DescribePeer(Keys& keys, Peer& p) {
  keys.NodeId("id", p.id);
  keys.Endpoint("address", p.endpoint, EndpointUse::kPeer);
  keys.PublicKey("public_key", p.public_key);
}

// What a KeyReader reads: a whole config (its required keys must be there, and each section's
// Check runs once its keys are read), or only the keys a table holds, onto a config that already
// has the others (nothing is required and no Check runs: the caller checks the complete config
// with CheckNodeConfig).
enum class Reading { kWhole, kPresentKeysOnly };

// Reads the keys a description names from one TOML table, through a TableReader (so errors name
// the file, the line, the dotted key, the value and what is allowed). The first error sticks:
// later calls do nothing, and status() returns it.
class KeyReader {
 public:
  explicit KeyReader(TableReader& table, Reading reading = Reading::kWhole)
      : t_(table), reading_(reading) {}

  // The first error, or Ok.
  const Status& status() const { return status_; }

  void NodeId(const char* key, std::string& out);
  void Endpoint(const char* key, std::string& out, EndpointUse use);
  void String(const char* key, std::string& out, Need need = Need::kOptional,
              Written /*unused*/ = Written::kAlways) {
    Run([&] { return t_.String(key, &out, Required(need == Need::kRequired)); });
  }
  void PublicKey(const char* key, std::string& out);
  void PublicKeyList(const char* key, std::vector<std::string>& out);
  template <class Enum>
  void Choice(const char* key, Enum& out, NameTable<Enum> names) {
    Run([&] { return t_.Choice(key, &out, names); });
  }
  template <class Int>
  void Integer(const char* key, Int& out, int64_t min, int64_t max,
               Written /*unused*/ = Written::kAlways, int64_t /*unwritten*/ = 0) {
    Run([&] { return t_.Integer(key, &out, min, max); });
  }
  void Number(const char* key, double& out, double min, double max, Bound bound = Bound::kClosed) {
    Run([&] { return t_.Number(key, &out, min, max, bound == Bound::kOpen); });
  }
  void OptionalNumber(const char* key, std::optional<double>& out) {
    Run([&] { return t_.OptionalNumber(key, &out); });
  }
  void PositiveNumber(const char* key, std::optional<double>& out, double max);
  void NumberOrWord(const char* key, std::optional<double>& out, const char* word, double min,
                    double max);
  void Port(const char* key, std::optional<uint16_t>& out) {
    Run([&] { return t_.Optional16(key, &out); });
  }
  void Bool(const char* key, bool& out) {
    Run([&] { return t_.Bool(key, &out); });
  }
  void ClusterIds(const char* key, std::vector<std::pair<std::string, int>>& out);
  void NodeIdList(const char* key, std::vector<std::string>& out);
  void Edges(const char* key, std::vector<topology::GraphEdge>& out);

  // Reads sub-table `key` (when present) by `S::Describe`, then `S::Check` if S has one.
  template <class S>
  void Section(const char* key, S& out, Written /*unused*/ = Written::kAlways) {
    Run([&] { return t_.Table(key, [&](TableReader& sub) { return ReadSection(sub, out); }); });
  }
  // Reads sub-table `key` into `out` when present; `out` stays empty otherwise.
  template <class S>
  void OptionalSection(const char* key, std::optional<S>& out) {
    Run([&] {
      return t_.Table(key, [&](TableReader& sub) {
        S section;
        MESHLEARN_RETURN_IF_ERROR(ReadSection(sub, section));
        out = std::move(section);
        return Status::Ok();
      });
    });
  }
  // Reads the array of tables `key`, one peer per table.
  void Peers(const char* key, std::vector<PeerAddress>& out);

 private:
  template <class F>
  void Run(F read) {
    if (status_.ok()) status_ = read();
  }

  // `required`, unless this reader reads only the keys present.
  bool Required(bool required) const { return required && reading_ == Reading::kWhole; }

  template <class S>
  Status ReadSection(TableReader& table, S& out) const {
    KeyReader keys(table, reading_);
    S::Describe(keys, out);
    MESHLEARN_RETURN_IF_ERROR(keys.status());
    if constexpr (requires { out.Check(table.file()); }) {
      if (reading_ == Reading::kWhole) return out.Check(table.file());
    }
    return Status::Ok();
  }

  TableReader& t_;
  Reading reading_;
  Status status_;
};

// Writes the keys a description names as TOML, in description order: the keys of this table,
// then its sub-tables, then its arrays of tables. Numbers keep 17 significant digits, so that a
// written config reads back equal.
class KeyWriter {
 public:
  // A writer for the table `section` ("" at the top level). `write_defaults`: also write the keys
  // and sections described kUnlessDefault when they hold their defaults (every key a config can
  // have, with its value).
  explicit KeyWriter(std::string section = "", bool write_defaults = false);

  // The TOML written so far.
  std::string Text() const { return keys_.str() + tables_.str() + arrays_.str(); }

  void NodeId(const char* key, const std::string& value) { Line(key, TomlString(value)); }
  void Endpoint(const char* key, const std::string& value, EndpointUse use) {
    if (IsOptional(use) && value.empty()) return;
    Line(key, TomlString(value));
  }
  void String(const char* key, const std::string& value, Need /*unused*/ = Need::kOptional,
              Written written = Written::kAlways) {
    if (written == Written::kUnlessDefault && value.empty() && !write_defaults_) return;
    Line(key, TomlString(value));
  }
  void PublicKey(const char* key, const std::string& value) {
    if (!value.empty()) Line(key, TomlString(value));
  }
  void PublicKeyList(const char* key, const std::vector<std::string>& values);
  template <class Enum>
  void Choice(const char* key, Enum value, NameTable<Enum> names) {
    Line(key, TomlString(std::string(NameOf(names, value))));
  }
  template <class Int>
  void Integer(const char* key, Int value, int64_t /*min*/, int64_t /*max*/,
               Written written = Written::kAlways, int64_t unwritten = 0) {
    if (written == Written::kUnlessDefault && static_cast<int64_t>(value) == unwritten &&
        !write_defaults_) {
      return;
    }
    Line(key, value);
  }
  void Number(const char* key, double value, double /*min*/, double /*max*/,
              Bound /*unused*/ = Bound::kClosed) {
    Line(key, value);
  }
  void OptionalNumber(const char* key, const std::optional<double>& value) {
    if (value) Line(key, *value);
  }
  void PositiveNumber(const char* key, const std::optional<double>& value, double /*max*/) {
    OptionalNumber(key, value);
  }
  void NumberOrWord(const char* key, const std::optional<double>& value, const char* word,
                    double /*min*/, double /*max*/) {
    if (value) {
      Line(key, *value);
    } else {
      // A basic string, as before this writer existed: checkpoints compare the text.
      Line(key, std::string("\"") + word + "\"");
    }
  }
  void Port(const char* key, const std::optional<uint16_t>& value) {
    if (value) Line(key, *value);
  }
  void Bool(const char* key, bool value) { Line(key, value ? "true" : "false"); }
  void ClusterIds(const char* key, const std::vector<std::pair<std::string, int>>& clusters);
  void NodeIdList(const char* key, const std::vector<std::string>& ids);
  void Edges(const char* key, const std::vector<topology::GraphEdge>& edges);

  // Writes `section` as the sub-table `key` by `S::Describe`; with kUnlessDefault, not at all
  // when it equals a default-constructed S.
  template <class S>
  void Section(const char* key, const S& section, Written written = Written::kAlways) {
    if (written == Written::kUnlessDefault && section == S{} && !write_defaults_) return;
    KeyWriter sub(Qualified(key), write_defaults_);
    S::Describe(sub, section);
    tables_ << "\n[" << Qualified(key) << "]\n" << sub.Text();
  }
  // Writes `section` as the sub-table `key` when it is set.
  template <class S>
  void OptionalSection(const char* key, const std::optional<S>& section) {
    if (section) Section(key, *section);
  }
  // Writes `peers` as the array of tables `key`.
  void Peers(const char* key, const std::vector<PeerAddress>& peers);

 private:
  template <class V>
  void Line(const char* key, const V& value) {
    keys_ << key << " = " << value << "\n";
  }
  std::string Qualified(const std::string& key) const {
    return section_.empty() ? key : section_ + "." + key;
  }

  std::string section_;
  bool write_defaults_;
  std::ostringstream keys_;
  std::ostringstream tables_;
  std::ostringstream arrays_;
};

}  // namespace meshlearn::node
