#pragma once
// Config names of enumerated choices. Each choice (a metric, a sampler, an optimiser...) has one
// table of (name, value) pairs kept next to its enum; config parsers look names up in it, and
// config writers, logs and status documents print names from it. Such a table is the only place
// where a config string meets a type (STYLE.md): code past the parser compares enums, never
// strings.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace meshlearn {

// One entry of a name table: the config name of `value`.
template <class Enum>
struct NamedValue {
  std::string_view name;
  Enum value;
};

// A name table: every value of a choice with its config name, in documentation order.
template <class Enum>
using NameTable = std::span<const NamedValue<Enum>>;

// The value named `name` in `table`, or nullopt when no entry has that name.
template <class Enum>
std::optional<Enum> ValueNamed(NameTable<Enum> table, std::string_view name) {
  for (const NamedValue<Enum>& entry : table) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

// The name of `value` in `table`; "?" when the table lacks it (a bug in the table).
template <class Enum>
std::string_view NameOf(NameTable<Enum> table, Enum value) {
  for (const NamedValue<Enum>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

// Every name of `table`, in table order.
template <class Enum>
std::vector<std::string> NamesOf(NameTable<Enum> table) {
  std::vector<std::string> names;
  for (const NamedValue<Enum>& entry : table) names.emplace_back(entry.name);
  return names;
}

}  // namespace meshlearn
