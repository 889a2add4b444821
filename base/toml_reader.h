#pragma once
// TableReader: typed, validated reading of one TOML table (toml++), shared by the node config,
// the launcher's scenario files and the TOML files described once (base/toml_table.h). Every
// error names the file, the line, the dotted key, the value found and what is allowed; keys
// never read are reported as unknown. Header-only: a library that includes it links
// meshlearn_base_toml (base/CMakeLists.txt).

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "base/named_value.h"
#include "base/status.h"

namespace meshlearn {

// Reads the keys of one TOML table, remembering which were read so that the rest can be
// reported as unknown. Methods returning Status read one key: absent keys keep the caller's
// default (unless required); present keys must have the right type and range.
class TableReader {
 public:
  // Where the nodes of a table built from several sources were written ("<file>:<line>", "--set
  // <assignment>"), by node: toml++ copies a node without its line, so a reader of such a table
  // is told each node's origin instead.
  using Origins = std::map<const toml::node*, std::string>;

  // `origins` (when given) must outlive the reader; an error about a node it holds starts with
  // that node's origin instead of `file` and the node's line.
  TableReader(const toml::table& table, std::string file, std::string section,
              const Origins* origins = nullptr)
      : table_(table), file_(std::move(file)), section_(std::move(section)), origins_(origins) {}

  // Reads string `key` into `out`; kInvalidArgument when absent but `required`.
  Status String(const char* key, std::string* out, bool required = false) {
    return Read(key, required, [&](const toml::node& n) -> Status {
      auto v = n.value<std::string>();
      if (!n.is_string() || !v) return Fail(key, n, "must be a string");
      *out = *v;
      return Status::Ok();
    });
  }

  // Reads the choice `key` into `out`: a string naming one entry of `names`.
  template <class Enum>
  Status Choice(const char* key, Enum* out, NameTable<Enum> names) {
    return Read(key, false, [&](const toml::node& n) -> Status {
      auto v = n.value<std::string>();
      if (!n.is_string() || !v) return Fail(key, n, "must be a string");
      if (std::optional<Enum> value = ValueNamed(names, *v)) {
        *out = *value;
        return Status::Ok();
      }
      return Fail(key, n, "must be one of " + Join(NamesOf(names)));
    });
  }

  // Reads integer `key` in [min, max] into `out`.
  template <typename Int>
  Status Integer(const char* key, Int* out, int64_t min, int64_t max) {
    return Read(key, false, [&](const toml::node& n) -> Status {
      if (!n.is_integer()) return Fail(key, n, "must be an integer");
      int64_t v = *n.value<int64_t>();
      if (v < min || v > max) {
        return Fail(key, n,
                    "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
      }
      *out = static_cast<Int>(v);
      return Status::Ok();
    });
  }

  // Reads a port number [0, 65535] into `out` (left empty when absent).
  Status Optional16(const char* key, std::optional<uint16_t>* out) {
    return Read(key, false, [&](const toml::node& n) -> Status {
      if (!n.is_integer() || *n.value<int64_t>() < 0 || *n.value<int64_t>() > 65535) {
        return Fail(key, n, "must be an integer port in [0, 65535] (0 = any free port)");
      }
      *out = static_cast<uint16_t>(*n.value<int64_t>());
      return Status::Ok();
    });
  }

  // A number (integer or float) in [min, max]; `open_min` excludes min itself.
  Status Number(const char* key, double* out, double min, double max, bool open_min = false) {
    return Read(key, false, [&](const toml::node& n) -> Status {
      if (!n.is_number()) return Fail(key, n, "must be a number");
      double v = *n.value<double>();
      if (!(open_min ? v > min : v >= min) || !(v <= max) || !std::isfinite(v)) {
        std::ostringstream range;
        range << "must be in " << (open_min ? "(" : "[") << min << ", " << max << "]";
        return Fail(key, n, range.str());
      }
      *out = v;
      return Status::Ok();
    });
  }

  // Reads any finite number into `out` (left empty when absent).
  Status OptionalNumber(const char* key, std::optional<double>* out) {
    double v = 0;
    bool present = table_.contains(key);
    MESHLEARN_RETURN_IF_ERROR(Number(key, &v, -1e300, 1e300));
    if (present) *out = v;
    return Status::Ok();
  }

  // Reads boolean `key` into `out`.
  Status Bool(const char* key, bool* out) {
    return Read(key, false, [&](const toml::node& n) -> Status {
      if (!n.is_boolean()) return Fail(key, n, "must be true or false");
      *out = *n.value<bool>();
      return Status::Ok();
    });
  }

  // Reads sub-table `key` with `read` (absent tables are skipped).
  Status Table(const char* key, const std::function<Status(TableReader&)>& read) {
    return Read(key, false, [&](const toml::node& n) -> Status {
      if (!n.is_table()) return Fail(key, n, "must be a table [" + Qualified(key) + "]");
      TableReader sub(*n.as_table(), file_, Qualified(key), origins_);
      MESHLEARN_RETURN_IF_ERROR(read(sub));
      return sub.RejectUnknown();
    });
  }

  // Reads array of tables `key` ([[key]]) with `read`, once per element.
  Status TableArray(const char* key, const std::function<Status(TableReader&)>& read) {
    return Read(key, false, [&](const toml::node& n) -> Status {
      const toml::array* array = n.as_array();
      if (!array || !array->is_array_of_tables()) {
        return Fail(key, n, "must be an array of tables [[" + Qualified(key) + "]]");
      }
      for (size_t i = 0; i < array->size(); ++i) {
        TableReader sub(*array->get(i)->as_table(), file_,
                        Qualified(key) + "[" + std::to_string(i) + "]", origins_);
        MESHLEARN_RETURN_IF_ERROR(read(sub));
        MESHLEARN_RETURN_IF_ERROR(sub.RejectUnknown());
      }
      return Status::Ok();
    });
  }

  // Visits every key of this table as (key, node) in file order and marks all of them read.
  Status Each(const std::function<Status(const std::string&, const toml::node&)>& visit) {
    for (const auto& [k, v] : table_) {
      read_.insert(std::string(k.str()));
      MESHLEARN_RETURN_IF_ERROR(visit(std::string(k.str()), v));
    }
    return Status::Ok();
  }

  // kInvalidArgument naming the first key of this table that was never read.
  Status RejectUnknown() const {
    for (const auto& [k, v] : table_) {
      if (!read_.count(std::string(k.str()))) {
        return Status::InvalidArgument(Where(v) + "unknown key '" +
                                       Qualified(std::string(k.str())) +
                                       "' (see configs/README.md for the accepted keys)");
      }
    }
    return Status::Ok();
  }

  // An error about `key` holding `n`.
  Status Fail(const std::string& key, const toml::node& n, const std::string& allowed) const {
    std::ostringstream value;
    n.visit([&](const auto& v) { value << v; });
    return Status::InvalidArgument(Where(n) + "'" + Qualified(key) + "' = " + value.str() + " " +
                                   allowed);
  }

  // The file name errors start with.
  const std::string& file() const { return file_; }
  // The dotted name of this table ("" at the top level).
  const std::string& section() const { return section_; }

  // Reads `key` with `f` when present; kInvalidArgument when absent but `required`.
  Status Read(const char* key, bool required, const std::function<Status(const toml::node&)>& f) {
    read_.insert(key);
    const toml::node* n = table_.get(key);
    if (!n) {
      if (required) {
        return Status::InvalidArgument(file_ + ": missing required key '" + Qualified(key) + "'");
      }
      return Status::Ok();
    }
    return f(*n);
  }

  // "<file>:<line>: " of `n` (just "<file>: " when the line is unknown), or "<origin>: " when the
  // reader was given the origin of `n`.
  std::string Where(const toml::node& n) const {
    if (origins_) {
      if (auto it = origins_->find(&n); it != origins_->end()) return it->second + ": ";
    }
    const auto& src = n.source();
    if (src.begin.line == 0) return file_ + ": ";
    return file_ + ":" + std::to_string(src.begin.line) + ": ";
  }

  // `key` prefixed with this table's dotted name.
  std::string Qualified(const std::string& key) const {
    return section_.empty() ? key : section_ + "." + key;
  }

 private:
  static std::string Join(const std::vector<std::string>& values) {
    std::string out;
    for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + ("\"" + values[i] + "\"");
    return out;
  }

  const toml::table& table_;
  std::string file_;
  std::string section_;
  const Origins* origins_;
  std::set<std::string> read_;
};

}  // namespace meshlearn
