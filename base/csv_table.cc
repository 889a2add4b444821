#include "base/csv_table.h"

#include <algorithm>

namespace meshlearn {
namespace {

// kMalformed "<where>: '<cell>' <refusal>; allowed: <allowed>".
Status Refused(const std::string& where, std::string_view cell, const std::string& refusal,
               const std::string& allowed) {
  return Status::Malformed(where + ": '" + std::string(cell) + "' " + refusal +
                           "; allowed: " + allowed);
}

}  // namespace

std::string TextCell::Write(const std::string& value) const {
  return quoted ? QuotedCsvField(value) : CsvField(value);
}

Status TextCell::Read(std::string_view cell, const std::string&, std::string& out) const {
  if (trimmed) {
    const size_t begin = cell.find_first_not_of(" \t");
    cell = begin == std::string_view::npos
               ? std::string_view()
               : cell.substr(begin, cell.find_last_not_of(" \t") - begin + 1);
  }
  out = std::string(cell);
  return Status::Ok();
}

Status NumberCell::Read(std::string_view cell, const std::string& where, double& out) const {
  auto value = ParseNumber<double>(cell, where, form);
  if (value.ok()) out = *value;
  return value.status();
}

Status NumberCell::Read(std::string_view cell, const std::string& where,
                        std::optional<double>& out) const {
  if (cell.empty()) {
    out.reset();
    return Status::Ok();
  }
  double value = 0;
  MESHLEARN_RETURN_IF_ERROR(Read(cell, where, value));
  out = value;
  return Status::Ok();
}

Status FlagCell::Read(std::string_view cell, const std::string& where, bool& out) const {
  if (cell != "0" && cell != "1") return Refused(where, cell, "is not a flag", "1 or 0");
  out = cell == "1";
  return Status::Ok();
}

std::string ListCell::Write(const std::vector<std::string>& values) const {
  std::string joined;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) joined += separator;
    joined += values[i];
  }
  return CsvField(joined);
}

Status ListCell::Read(std::string_view cell, const std::string&,
                      std::vector<std::string>& out) const {
  out.clear();
  if (cell.empty()) return Status::Ok();
  for (size_t begin = 0;;) {
    const size_t end = cell.find(separator, begin);
    out.emplace_back(cell.substr(begin, end - begin));
    if (end == std::string_view::npos) return Status::Ok();
    begin = end + 1;
  }
}

Status WordCell::Read(std::string_view cell, const std::string& where, std::string& out) const {
  if (std::find(words.begin(), words.end(), cell) != words.end()) {
    out = std::string(cell);
    return Status::Ok();
  }
  std::string allowed;
  for (std::string_view word : words) {
    if (!allowed.empty()) allowed += ", ";
    allowed += word;
  }
  return Refused(where, cell, "is not a word of this column", allowed);
}

std::string CsvLayout::Header() const {
  std::string line;
  for (const Entry& e : entries) {
    for (const std::string& name : e.header) {
      if (!line.empty()) line += ',';
      line += CsvField(name);
    }
  }
  return line;
}

size_t CsvLayout::width() const {
  size_t cells = 0;
  for (const Entry& e : entries) cells += e.header.size();
  return cells;
}

std::vector<std::string> CsvLayout::Missing() const {
  std::vector<std::string> missing;
  for (const Entry& e : entries) {
    if (e.presence == Presence::kAddedLater && e.header.empty()) missing.push_back(e.name);
  }
  return missing;
}

std::string CsvLayout::Allowed() const {
  std::string allowed;
  bool optional = false;
  for (const Entry& e : entries) {
    std::string name = e.group ? e.name + "0," + e.name + "1..." : e.name;
    if (e.presence != Presence::kAlways) name = "[" + name + "]";
    optional |= e.presence != Presence::kAlways;
    if (!allowed.empty()) allowed += ',';
    allowed += name;
  }
  if (!optional) return allowed;
  return allowed +
         " (a name in brackets: absent in files written before it existed or without "
         "its feature)";
}

void CsvLayout::SetGroupWidth(const std::string& prefix, size_t count) {
  for (Entry& e : entries) {
    if (!e.group || e.name != prefix) continue;
    e.header.clear();
    for (size_t i = 0; i < count; ++i) e.header.push_back(prefix + std::to_string(i));
  }
}

size_t CsvLayout::ColumnOf(const std::string& name) const {
  size_t column = 0;
  for (const Entry& e : entries) {
    for (const std::string& n : e.header) {
      ++column;
      if (n == name) return column;
    }
  }
  return 0;
}

namespace csv_table_internal {

CsvLayout::Entry& LayoutBuilder::Entry(const char* name, bool group, Presence presence) {
  if (index_ == layout_.entries.size()) {
    layout_.entries.push_back({.name = name, .group = group, .presence = presence, .header = {}});
  }
  return layout_.entries[index_++];
}

void RowWriter::Append(const std::string& cell) {
  if (!first_) text_ += ',';
  first_ = false;
  text_ += cell;
}

void HeaderReader::Match(const char* name, bool group, Presence presence) {
  CsvLayout::Entry& e = layout_.entries.emplace_back();
  e.name = name;
  e.group = group;
  e.presence = presence;
  if (!status_.ok()) return;
  const std::vector<std::string>& names = header_.fields;
  if (group) {
    while (column_ < names.size() && names[column_] == e.name + std::to_string(e.header.size())) {
      e.header.push_back(names[column_++]);
    }
  } else if (column_ < names.size() && names[column_] == e.name) {
    e.header.push_back(names[column_++]);
  } else if (presence == Presence::kAlways) {
    status_ = Status::Malformed(
        CsvWhere(file_, header_.line, column_ + 1) + ": " +
        (column_ < names.size() ? "the column '" + names[column_] + "'" : "the header's end") +
        " where the column '" + e.name + "' belongs; allowed: the header ");
  }
}

Status HeaderReader::Finish() {
  if (status_.ok() && column_ < header_.fields.size()) {
    status_ = Status::Malformed(CsvWhere(file_, header_.line, column_ + 1) + ": the column '" +
                                header_.fields[column_] +
                                "' is not one of this file's, or not in its place; allowed: the "
                                "header ");
  }
  if (status_.ok()) return status_;
  return Status::Malformed(status_.message() + layout_.Allowed());
}

std::string RowReader::Where(const std::string& name) const {
  return CsvWhere(file_, record_.line, column_ + 1) + " (" + name + ")";
}

Status WidthError(const std::string& file, const CsvRecord& record, const CsvLayout& layout) {
  return Status::Malformed(
      file + " line " + std::to_string(record.line) + ": " + std::to_string(record.fields.size()) +
      " cells; allowed: " + std::to_string(layout.width()) + ", one per column of the header");
}

}  // namespace csv_table_internal
}  // namespace meshlearn
