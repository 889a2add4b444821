#pragma once
// TOML files described once (DESIGN.md "Files described once"), as config sections are
// (node/config/config.h). The record a file holds declares its keys once, in a static member
// beside its fields:
//
//   template <class Keys, class Self>  // Self: the record, or the const record when writing
//   static void Describe(Keys& keys, Self& r) {
//     keys.Format("format", r.format, 1);
//     keys.String("status", r.status);
//     keys.Number("real_s", r.real_seconds, {.empty_is_nan = true});
//     keys.Tables("methods", r.methods);  // [[methods]], each by its own Describe
//   }
//
// Writing and strict reading are two visitors over it: TomlWriter fills the toml++ table that
// RenderToml prints, TomlReader reads one through a TableReader (base/toml_reader.h). A key added
// to a description is written and read, or it is nowhere. Header-only over toml++: a library that
// includes it links meshlearn_base_toml.
//
// Specification.
// - Every key described is required (its writer writes every one), except: a number whose form
//   has empty_is_nan (absent means NaN, and NaN is not written), OptionalNumber, OptionalString
//   and OptionalBool (absent means not set), and Tables (absent or [] means none).
// - Format(key, value, current) comes first: a file whose format is not `current` is
//   kUnsupportedVersion at once, before any other key is read.
// - Numbers follow a NumberForm (base/number_text.h): its bounds, and non-finite numbers only
//   where it allows them; a whole number is a TOML integer, a number an integer or a float. An
//   unsigned 64-bit whole number travels as the TOML integer with the same bits (TOML's
//   integers are signed 64-bit).
// - toml++ prints the table: keys sorted, floats with 17 significant digits (they read back
//   equal), strings with their line breaks in a multi-line literal when they hold some.
// - Reading is strict: ParseToml's first error is kMalformed naming the file, the line, the
//   dotted key, the value found and what is allowed, or the first key that no description names.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "base/named_value.h"
#include "base/number_text.h"
#include "base/status.h"
#include "base/toml_reader.h"

namespace meshlearn {

// Fills a toml++ table from a description (RenderToml).
class TomlWriter {
 public:
  explicit TomlWriter(toml::table& table) : t_(table) {}

  void Format(const char* key, int value, int /*current*/) { t_.insert(key, value); }
  void String(const char* key, const std::string& value) { t_.insert(key, value); }
  void OptionalString(const char* key, const std::optional<std::string>& value) {
    if (value) t_.insert(key, *value);
  }
  template <std::integral Int>
  void Integer(const char* key, Int value, const NumberForm& /*form*/ = {}) {
    t_.insert(key, static_cast<int64_t>(value));
  }
  void Number(const char* key, double value, const NumberForm& form = {}) {
    if (!(form.empty_is_nan && value != value)) t_.insert(key, value);
  }
  void OptionalNumber(const char* key, const std::optional<double>& value) {
    if (value) t_.insert(key, *value);
  }
  void Bool(const char* key, bool value) { t_.insert(key, value); }
  void OptionalBool(const char* key, const std::optional<bool>& value) {
    if (value) t_.insert(key, *value);
  }
  template <class Enum>
  void Choice(const char* key, Enum value, NameTable<Enum> names) {
    t_.insert(key, std::string(NameOf(names, value)));
  }
  void Strings(const char* key, const std::vector<std::string>& values);
  template <std::integral Int>
  void Integers(const char* key, const std::vector<Int>& values) {
    toml::array array;
    for (Int v : values) array.push_back(static_cast<int64_t>(v));
    t_.insert(key, std::move(array));
  }
  // A table of strings (keys sorted when printed).
  void StringTable(const char* key, const std::vector<std::pair<std::string, std::string>>& pairs);
  // A table of counts: whole numbers >= 0.
  void Counts(const char* key, const std::map<std::string, uint64_t>& counts);
  // The sub-table `key`, by `describe(keys)`.
  template <class Describe>
  void Table(const char* key, Describe&& describe) {
    toml::table sub;
    TomlWriter keys(sub);
    describe(keys);
    t_.insert(key, std::move(sub));
  }
  // The array of tables `key`, each element by its Describe.
  template <class Record>
  void Tables(const char* key, const std::vector<Record>& records) {
    toml::array array;
    for (const Record& r : records) {
      toml::table sub;
      TomlWriter keys(sub);
      Record::Describe(keys, r);
      array.push_back(std::move(sub));
    }
    t_.insert(key, std::move(array));
  }

 private:
  toml::table& t_;
};

// Reads a description's keys from one table through a TableReader; the first error sticks.
class TomlReader {
 public:
  explicit TomlReader(TableReader& table) : t_(table) {}

  // The first error, or Ok.
  const Status& status() const { return status_; }

  void Format(const char* key, int& value, int current);
  void String(const char* key, std::string& out) {
    Run([&] { return t_.String(key, &out, /*required=*/true); });
  }
  void OptionalString(const char* key, std::optional<std::string>& out);
  template <std::integral Int>
  void Integer(const char* key, Int& out, const NumberForm& form = {}) {
    Run([&] {
      return t_.Read(key, true,
                     [&](const toml::node& n) { return ReadInteger(key, n, form, out); });
    });
  }
  void Number(const char* key, double& out, const NumberForm& form = {});
  void OptionalNumber(const char* key, std::optional<double>& out);
  void Bool(const char* key, bool& out) {
    Run([&] {
      return t_.Read(key, true, [&](const toml::node& n) { return ReadBool(key, n, out); });
    });
  }
  void OptionalBool(const char* key, std::optional<bool>& out) {
    Run([&] {
      return t_.Read(key, false,
                     [&](const toml::node& n) { return ReadBool(key, n, out.emplace()); });
    });
  }
  template <class Enum>
  void Choice(const char* key, Enum& out, NameTable<Enum> names) {
    Run([&] {
      return t_.Read(key, true, [&](const toml::node&) { return t_.Choice(key, &out, names); });
    });
  }
  void Strings(const char* key, std::vector<std::string>& out);
  template <std::integral Int>
  void Integers(const char* key, std::vector<Int>& out) {
    Run([&] {
      return t_.Read(key, true, [&](const toml::node& n) -> Status {
        const toml::array* array = n.as_array();
        if (!array) return t_.Fail(key, n, "must be an array of whole numbers");
        out.clear();
        for (const toml::node& item : *array) {
          MESHLEARN_RETURN_IF_ERROR(ReadInteger(key, item, {}, out.emplace_back()));
        }
        return Status::Ok();
      });
    });
  }
  void StringTable(const char* key, std::vector<std::pair<std::string, std::string>>& out);
  void Counts(const char* key, std::map<std::string, uint64_t>& out);
  template <class Describe>
  void Table(const char* key, Describe&& describe) {
    Run([&] {
      return t_.Read(key, true, [&](const toml::node& n) -> Status {
        if (!n.is_table()) return t_.Fail(key, n, "must be a table [" + t_.Qualified(key) + "]");
        TableReader sub(*n.as_table(), t_.file(), t_.Qualified(key));
        TomlReader keys(sub);
        describe(keys);
        MESHLEARN_RETURN_IF_ERROR(keys.status());
        return sub.RejectUnknown();
      });
    });
  }
  template <class Record>
  void Tables(const char* key, std::vector<Record>& out) {
    Run([&] {
      out.clear();
      return t_.Read(key, false, [&](const toml::node& n) -> Status {
        const toml::array* array = n.as_array();
        if (!array || (!array->empty() && !array->is_array_of_tables())) {
          return t_.Fail(key, n, "must be an array of tables [[" + t_.Qualified(key) + "]]");
        }
        for (size_t i = 0; i < array->size(); ++i) {
          TableReader sub(*array->get(i)->as_table(), t_.file(),
                          t_.Qualified(key) + "[" + std::to_string(i) + "]");
          TomlReader keys(sub);
          Record::Describe(keys, out.emplace_back());
          MESHLEARN_RETURN_IF_ERROR(keys.status());
          MESHLEARN_RETURN_IF_ERROR(sub.RejectUnknown());
        }
        return Status::Ok();
      });
    });
  }

 private:
  template <class F>
  void Run(F read) {
    if (status_.ok()) status_ = read();
  }
  Status ReadBool(const char* key, const toml::node& n, bool& out) {
    if (!n.is_boolean()) return t_.Fail(key, n, "must be true or false");
    out = *n.value<bool>();
    return Status::Ok();
  }
  template <std::integral Int>
  Status ReadInteger(const char* key, const toml::node& n, const NumberForm& form, Int& out) {
    if constexpr (std::is_same_v<Int, uint64_t>) {
      int64_t bits = 0;  // the same bits (the specification)
      MESHLEARN_RETURN_IF_ERROR(ReadInteger(key, n, form, bits));
      out = static_cast<uint64_t>(bits);
      return Status::Ok();
    } else {
      NumberForm bounded = form;
      if (sizeof(Int) < sizeof(int64_t) || std::is_unsigned_v<Int>) {
        bounded.min = std::max(form.min.value_or(-1e300),
                               static_cast<double>(std::numeric_limits<Int>::min()));
        bounded.max = std::min(form.max.value_or(1e300),
                               static_cast<double>(std::numeric_limits<Int>::max()));
      }
      const std::optional<int64_t> v = n.is_integer() ? n.value<int64_t>() : std::nullopt;
      const double d = v ? static_cast<double>(*v) : 0;
      if (!v || (bounded.min && d < *bounded.min) || (bounded.max && d > *bounded.max)) {
        return t_.Fail(key, n, "must be " + AllowedNumbers<int64_t>(bounded));
      }
      out = static_cast<Int>(*v);
      return Status::Ok();
    }
  }

  TableReader& t_;
  Status status_;
};

inline void TomlWriter::Strings(const char* key, const std::vector<std::string>& values) {
  toml::array array;
  for (const std::string& v : values) array.push_back(v);
  t_.insert(key, std::move(array));
}

inline void TomlWriter::StringTable(const char* key,
                                    const std::vector<std::pair<std::string, std::string>>& pairs) {
  toml::table table;
  for (const auto& [k, v] : pairs) table.insert_or_assign(k, v);
  t_.insert(key, std::move(table));
}

inline void TomlWriter::Counts(const char* key, const std::map<std::string, uint64_t>& counts) {
  toml::table table;
  for (const auto& [k, v] : counts) table.insert_or_assign(k, static_cast<int64_t>(v));
  t_.insert(key, std::move(table));
}

inline void TomlReader::Format(const char* key, int& value, int current) {
  Integer(key, value);
  if (status_.ok() && value != current) {
    status_ = Status::UnsupportedVersion(t_.file() + ": format " + std::to_string(value) + " ('" +
                                         t_.Qualified(key) + "'); this build reads " +
                                         std::to_string(current));
  }
}

inline void TomlReader::OptionalString(const char* key, std::optional<std::string>& out) {
  Run([&] {
    return t_.Read(key, false, [&](const toml::node& n) -> Status {
      if (!n.is_string()) return t_.Fail(key, n, "must be a string");
      out = *n.value<std::string>();
      return Status::Ok();
    });
  });
}

inline void TomlReader::Number(const char* key, double& out, const NumberForm& form) {
  Run([&] {
    if (form.empty_is_nan) out = std::numeric_limits<double>::quiet_NaN();
    return t_.Read(key, !form.empty_is_nan, [&](const toml::node& n) -> Status {
      const double v = n.is_number() ? *n.value<double>() : 0;
      if (!n.is_number() || (v != v && !form.non_finite) || (std::isinf(v) && !form.non_finite) ||
          (form.min && v < *form.min) || (form.max && v > *form.max)) {
        NumberForm allowed = form;
        allowed.empty_is_nan = false;
        return t_.Fail(key, n, "must be " + AllowedNumbers<double>(allowed));
      }
      out = v;
      return Status::Ok();
    });
  });
}

inline void TomlReader::OptionalNumber(const char* key, std::optional<double>& out) {
  Run([&] {
    return t_.Read(key, false, [&](const toml::node& n) -> Status {
      if (!n.is_number() || !std::isfinite(*n.value<double>())) {
        return t_.Fail(key, n, "must be " + AllowedNumbers<double>());
      }
      out = *n.value<double>();
      return Status::Ok();
    });
  });
}

inline void TomlReader::Strings(const char* key, std::vector<std::string>& out) {
  Run([&] {
    return t_.Read(key, true, [&](const toml::node& n) -> Status {
      const toml::array* array = n.as_array();
      out.clear();
      for (size_t i = 0; array && i < array->size(); ++i) {
        if (!array->get(i)->is_string()) array = nullptr;
        if (array) out.push_back(*array->get(i)->value<std::string>());
      }
      return array ? Status::Ok() : t_.Fail(key, n, "must be an array of strings");
    });
  });
}

inline void TomlReader::StringTable(const char* key,
                                    std::vector<std::pair<std::string, std::string>>& out) {
  Run([&] {
    return t_.Read(key, true, [&](const toml::node& n) -> Status {
      const toml::table* table = n.as_table();
      if (!table) return t_.Fail(key, n, "must be a table of strings");
      out.clear();
      for (const auto& [k, v] : *table) {
        if (!v.is_string()) return t_.Fail(key, n, "must be a table of strings");
        out.emplace_back(std::string(k.str()), *v.value<std::string>());
      }
      return Status::Ok();
    });
  });
}

inline void TomlReader::Counts(const char* key, std::map<std::string, uint64_t>& out) {
  Run([&] {
    return t_.Read(key, true, [&](const toml::node& n) -> Status {
      const toml::table* table = n.as_table();
      if (!table) return t_.Fail(key, n, "must be a table of whole numbers >= 0");
      out.clear();
      for (const auto& [k, v] : *table) {
        const std::optional<int64_t> count = v.is_integer() ? v.value<int64_t>() : std::nullopt;
        if (!count || *count < 0) {
          return t_.Fail(std::string(key) + "." + std::string(k.str()), v,
                         "must be a whole number >= 0");
        }
        out[std::string(k.str())] = static_cast<uint64_t>(*count);
      }
      return Status::Ok();
    });
  });
}

inline Result<toml::table> ParseTomlText(std::string_view text, const std::string& name) {
  try {
    return toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    return Status::Malformed(name + ":" + std::to_string(e.source().begin.line) + ": not TOML (" +
                             std::string(e.description()) + ")");
  }
}

// The TOML text of `record` (toml++'s printing of TomlWriter's table), with a line end.
template <class Record>
std::string RenderToml(const Record& record) {
  toml::table root;
  TomlWriter keys(root);
  Record::Describe(keys, record);
  std::ostringstream text;
  text << root << "\n";
  return text.str();
}

// Reads a Record from TOML text of file `name` (the specification's rules). The format's error
// is kUnsupportedVersion; every other kMalformed.
template <class Record>
Result<Record> ParseToml(std::string_view text, const std::string& name) {
  auto root = ParseTomlText(text, name);
  if (!root.ok()) return root.status();
  TableReader table(*root, name, "");
  TomlReader keys(table);
  Record record;
  Record::Describe(keys, record);
  Status read = keys.status().ok() ? table.RejectUnknown() : keys.status();
  if (read.code() == ErrorCode::kInvalidArgument) return Status::Malformed(read.message());
  if (!read.ok()) return read;
  return record;
}

}  // namespace meshlearn
