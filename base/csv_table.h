#pragma once
// CSV files described once (DESIGN.md "Files described once"). The row of a file declares its
// columns, in order, in one static member beside its fields:
//
//   template <class Columns, class Self>  // Self: the row, or the const row when writing
//   static void Describe(Columns& c, Self& r) {
//     c.Column("method", r.name, TextCell{.quoted = true});
//     c.Group("cluster_", r.per_cluster);                  // cluster_0, cluster_1, ...
//     c.Column("epsilon", r.epsilon, Presence::kAddedLater);
//   }
//
// Every job on the file is a small visitor over that description: LayoutOf finds the columns a
// file of some rows has, RenderCsv and CsvRowText write, ReadCsv reads strictly. A column added
// to a description is written and read, or it is nowhere.
//
// Specification.
// - A column is a name in the header and one cell per row. A group is the columns "<prefix>0",
//   "<prefix>1", ... of one vector member: when writing, as many as the longest row's vector
//   (shorter ones end in empty cells); when reading, as many as the header has.
// - A description makes the same calls for every row. Presence says when a column is in a file:
//   - kAlways: in every file;
//   - kAddedLater: files written before it existed lack it; reading one keeps the row's default
//     there, and its layout says so (CsvLayout::Missing);
//   - kWhenUsed (a feature's columns): written only when some row holds a value there
//     (CellHolds), and absent otherwise; a kWhenUsed group's cells that are all empty in a row
//     read as an empty vector.
//   Rationale: the files that results/ keeps from every earlier version read back, and the file
//   of a run without a feature is what it was before the feature existed.
// - Each cell kind writes and reads one type: TextCell, NumberCell, WholeCell, FlagCell,
//   ListCell and WordCell below; a file may bring its own kind with the same Write and Read.
//   Numbers are ExactNumber and ParseNumber (base/number_text.h) and text is CsvField
//   (base/csv.h), so a file read and rendered again in the layout it was read in gives back its
//   bytes.
// - Reading is strict. Its first error is kMalformed and names the file, the line, the column
//   (number and name), what was found and what is allowed: a header other than the
//   description's (the error gives the allowed header), a row whose number of cells is not the
//   header's, a cell that its kind does not read.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/atomic_file.h"
#include "base/csv.h"
#include "base/number_text.h"
#include "base/status.h"

namespace meshlearn {

// When a column is in a file (the specification above).
enum class Presence { kAlways, kAddedLater, kWhenUsed };

// Cell kinds. Each has `std::string Write(const T&) const` and
// `Status Read(std::string_view cell, const std::string& where, T& out) const`, where `where` is
// "<file> line <l>, column <c> (<name>)"; Read's error is kMalformed "<where>: '<cell>' is not
// ...; allowed: ...".

// Any text, written by CsvField; `quoted`: always quoted (QuotedCsvField); `trimmed`: read
// without the spaces and tabs around it (a file typed by hand).
struct TextCell {
  bool quoted = false;
  bool trimmed = false;
  std::string Write(const std::string& value) const;
  Status Read(std::string_view cell, const std::string& where, std::string& out) const;
};

// A number under `form` (default: what ExactNumber writes, NaN as an empty cell); an optional's
// empty cell is nullopt.
struct NumberCell {
  NumberForm form = kExactNumberForm;
  std::string Write(double value) const { return ExactNumber(value); }
  std::string Write(const std::optional<double>& value) const { return ExactNumber(value); }
  Status Read(std::string_view cell, const std::string& where, double& out) const;
  Status Read(std::string_view cell, const std::string& where, std::optional<double>& out) const;
};

// A whole number under `form` (its bounds); an optional's empty cell is nullopt.
struct WholeCell {
  NumberForm form = {};
  template <std::integral Int>
  std::string Write(Int value) const {
    return std::to_string(value);
  }
  template <std::integral Int>
  std::string Write(const std::optional<Int>& value) const {
    return value ? std::to_string(*value) : std::string();
  }
  template <std::integral Int>
  Status Read(std::string_view cell, const std::string& where, Int& out) const {
    auto value = ParseNumber<Int>(cell, where, form);
    if (value.ok()) out = *value;
    return value.status();
  }
  template <std::integral Int>
  Status Read(std::string_view cell, const std::string& where, std::optional<Int>& out) const {
    if (cell.empty()) {
      out.reset();
      return Status::Ok();
    }
    Int value{};
    MESHLEARN_RETURN_IF_ERROR(Read(cell, where, value));
    out = value;
    return Status::Ok();
  }
};

// A flag: 1 or 0.
struct FlagCell {
  std::string Write(bool value) const { return value ? "1" : "0"; }
  Status Read(std::string_view cell, const std::string& where, bool& out) const;
};

// Texts joined by `separator` in one cell (written by CsvField); an empty cell is no text.
struct ListCell {
  char separator = ';';
  std::string Write(const std::vector<std::string>& values) const;
  Status Read(std::string_view cell, const std::string& where, std::vector<std::string>& out) const;
};

// One of `words` (a status, a metric's name).
struct WordCell {
  std::span<const std::string_view> words;
  std::string Write(const std::string& value) const { return CsvField(value); }
  Status Read(std::string_view cell, const std::string& where, std::string& out) const;
};

// The kind a column of each type has unless its description names another.
inline TextCell DefaultCell(const std::string&) { return {}; }
inline NumberCell DefaultCell(double) { return {}; }
inline NumberCell DefaultCell(const std::optional<double>&) { return {}; }
inline FlagCell DefaultCell(bool) { return {}; }
inline ListCell DefaultCell(const std::vector<std::string>&) { return {}; }
template <std::integral Int>
WholeCell DefaultCell(Int) {
  return {};
}
template <std::integral Int>
WholeCell DefaultCell(const std::optional<Int>&) {
  return {};
}

// True when `value` is something a kWhenUsed column writes: a set optional, a number that is not
// NaN, a text or a vector that is not empty; anything else always.
template <class T>
bool CellHolds(const T& value) {
  if constexpr (requires { value.has_value(); }) {
    return value.has_value();
  } else if constexpr (std::is_floating_point_v<T>) {
    return value == value;
  } else if constexpr (requires { value.empty(); }) {
    return !value.empty();
  } else {
    return true;
  }
}

// The columns of one file: for each call of the description, in order, the header names it has
// in that file (none: absent; one: a column; one per member: a group).
struct CsvLayout {
  struct Entry {
    std::string name;  // the column's name, or the group's prefix
    bool group = false;
    Presence presence = Presence::kAlways;
    std::vector<std::string> header;  // its names in this file
  };
  std::vector<Entry> entries;

  // The header line: every entry's names joined by commas (CsvField each), no line end.
  std::string Header() const;
  // The number of cells in a row.
  size_t width() const;
  // The kAddedLater columns this file lacks (written before they existed), in order.
  std::vector<std::string> Missing() const;
  // The headers the description allows, as errors say it: "a,[b],c_0,c_1...", a name in brackets
  // absent in some files.
  std::string Allowed() const;
  // Sets the group `prefix` to `count` columns ("<prefix>0" ...); no effect when none has it.
  void SetGroupWidth(const std::string& prefix, size_t count);
  // The 1-based column of the header name `name` in this file; 0 when it has none.
  size_t ColumnOf(const std::string& name) const;

  bool operator==(const CsvLayout&) const = default;
};

// The rows of one file, the line each starts on, and the layout they were read in.
template <class Row>
struct CsvTable {
  CsvLayout layout;
  std::vector<Row> rows;
  std::vector<size_t> lines;  // rows[i] starts on line lines[i]: for checks after reading
};

// The calls of a description; Derived implements Cell(name, value, kind, presence) and
// Cells(prefix, values, kind, presence) (values: a vector).
template <class Derived>
class CsvColumns {
 public:
  // A column of `value`'s default kind (DefaultCell).
  template <class T>
  void Column(const char* name, T& value, Presence presence = Presence::kAlways) {
    self().Cell(name, value, DefaultCell(value), presence);
  }
  // A column of kind `kind`.
  template <class T, class Kind>
  requires(!std::same_as<Kind, Presence>) void Column(const char* name, T& value, const Kind& kind,
                                                      Presence presence = Presence::kAlways) {
    self().Cell(name, value, kind, presence);
  }
  // The group "<prefix>0", "<prefix>1", ... of `values`, of their default kind.
  template <class Vector>
  void Group(const char* prefix, Vector& values, Presence presence = Presence::kAlways) {
    self().Cells(prefix, values, DefaultCell(typename std::remove_cvref_t<Vector>::value_type{}),
                 presence);
  }
  // The group of `values`, of kind `kind`.
  template <class Vector, class Kind>
  requires(!std::same_as<Kind, Presence>) void Group(const char* prefix, Vector& values,
                                                     const Kind& kind,
                                                     Presence presence = Presence::kAlways) {
    self().Cells(prefix, values, kind, presence);
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

namespace csv_table_internal {

// Builds the layout of the rows it is run over (LayoutOf).
class LayoutBuilder : public CsvColumns<LayoutBuilder> {
 public:
  LayoutBuilder(CsvLayout& layout, bool any_rows) : layout_(layout), any_rows_(any_rows) {}
  void Next() { index_ = 0; }
  template <class T, class Kind>
  void Cell(const char* name, const T& value, const Kind&, Presence presence) {
    CsvLayout::Entry& e = Entry(name, false, presence);
    if (e.header.empty() && (presence != Presence::kWhenUsed || (any_rows_ && CellHolds(value)))) {
      e.header.push_back(name);
    }
  }
  template <class Vector, class Kind>
  void Cells(const char* prefix, const Vector& values, const Kind&, Presence presence) {
    CsvLayout::Entry& e = Entry(prefix, true, presence);
    for (size_t i = e.header.size(); i < values.size(); ++i) {
      e.header.push_back(prefix + std::to_string(i));
    }
  }

 private:
  CsvLayout::Entry& Entry(const char* name, bool group, Presence presence);
  CsvLayout& layout_;
  bool any_rows_;
  size_t index_ = 0;
};

// Appends one row's cells in a layout (CsvRowText).
class RowWriter : public CsvColumns<RowWriter> {
 public:
  explicit RowWriter(const CsvLayout& layout) : layout_(layout) {}
  std::string Take() { return std::move(text_); }
  template <class T, class Kind>
  void Cell(const char*, const T& value, const Kind& kind, Presence) {
    if (!layout_.entries[index_++].header.empty()) Append(kind.Write(value));
  }
  template <class Vector, class Kind>
  void Cells(const char*, const Vector& values, const Kind& kind, Presence) {
    const size_t width = layout_.entries[index_++].header.size();
    for (size_t i = 0; i < width; ++i) Append(i < values.size() ? kind.Write(values[i]) : "");
  }

 private:
  void Append(const std::string& cell);
  const CsvLayout& layout_;
  size_t index_ = 0;
  bool first_ = true;
  std::string text_;
};

// Matches a header to the description (ReadCsv): the first error sticks.
class HeaderReader : public CsvColumns<HeaderReader> {
 public:
  HeaderReader(const std::string& file, const CsvRecord& header, CsvLayout& layout)
      : file_(file), header_(header), layout_(layout) {}
  // Refuses the columns left after the description's; the first error.
  Status Finish();
  template <class T, class Kind>
  void Cell(const char* name, const T&, const Kind&, Presence presence) {
    Match(name, false, presence);
  }
  template <class Vector, class Kind>
  void Cells(const char* prefix, const Vector&, const Kind&, Presence presence) {
    Match(prefix, true, presence);
  }

 private:
  void Match(const char* name, bool group, Presence presence);
  const std::string& file_;
  const CsvRecord& header_;
  CsvLayout& layout_;
  size_t column_ = 0;
  Status status_;
};

// Reads one row's cells in a layout (ReadCsv): the first error sticks.
class RowReader : public CsvColumns<RowReader> {
 public:
  RowReader(const std::string& file, const CsvRecord& record, const CsvLayout& layout)
      : file_(file), record_(record), layout_(layout) {}
  const Status& status() const { return status_; }
  template <class T, class Kind>
  void Cell(const char*, T& value, const Kind& kind, Presence) {
    const CsvLayout::Entry& e = layout_.entries[index_++];
    if (!e.header.empty() && status_.ok()) {
      status_ = kind.Read(record_.fields[column_], Where(e.header.front()), value);
      ++column_;
    }
  }
  template <class Vector, class Kind>
  void Cells(const char*, Vector& values, const Kind& kind, Presence presence) {
    const CsvLayout::Entry& e = layout_.entries[index_++];
    values.clear();
    bool any = false;
    for (const std::string& name : e.header) {
      if (!status_.ok()) return;
      values.emplace_back();
      any |= !record_.fields[column_].empty();
      status_ = kind.Read(record_.fields[column_], Where(name), values.back());
      ++column_;
    }
    if (presence == Presence::kWhenUsed && !any) values.clear();
  }

 private:
  // "<file> line <l>, column <c> (<name>)" of the next cell.
  std::string Where(const std::string& name) const;
  const std::string& file_;
  const CsvRecord& record_;
  const CsvLayout& layout_;
  size_t index_ = 0;
  size_t column_ = 0;
  Status status_;
};

// kMalformed: `record` of `file` has another number of cells than `layout`'s header.
Status WidthError(const std::string& file, const CsvRecord& record, const CsvLayout& layout);

}  // namespace csv_table_internal

// The layout of a file of `rows`: every kAlways and kAddedLater column, the kWhenUsed columns
// some row holds a value in, each group as wide as its longest vector.
template <class Row>
CsvLayout LayoutOf(std::span<const Row> rows) {
  CsvLayout layout;
  csv_table_internal::LayoutBuilder builder(layout, !rows.empty());
  if (rows.empty()) Row::Describe(builder, static_cast<const Row&>(Row{}));
  for (const Row& row : rows) {
    builder.Next();
    Row::Describe(builder, row);
  }
  return layout;
}

// The layout of a file of these rows with every kAlways and kAddedLater column and no group or
// kWhenUsed column: a file whose every row is written as it comes (rounds.csv).
template <class Row>
CsvLayout CurrentLayout() {
  return LayoutOf(std::span<const Row>());
}

// The line of `row` in `layout`, with its "\n".
template <class Row>
std::string CsvRowText(const Row& row, const CsvLayout& layout) {
  csv_table_internal::RowWriter writer(layout);
  Row::Describe(writer, row);
  return writer.Take() + "\n";
}

// The text of a file of `rows` in `layout`: its header, then one line per row.
template <class Row>
std::string RenderCsv(std::span<const Row> rows, const CsvLayout& layout) {
  std::string text = layout.Header() + "\n";
  for (const Row& row : rows) text += CsvRowText(row, layout);
  return text;
}

// The text of a file of `rows` in LayoutOf(rows).
template <class Row>
std::string RenderCsv(std::span<const Row> rows) {
  return RenderCsv(rows, LayoutOf(rows));
}

// Reads the CSV text of file `name` (the specification's rules).
template <class Row>
Result<CsvTable<Row>> ReadCsv(std::string_view text, const std::string& name) {
  auto records = ParseCsv(text, name);
  if (!records.ok()) return records.status();
  CsvTable<Row> table;
  Row row;
  if (records->empty()) {
    csv_table_internal::LayoutBuilder builder(table.layout, false);
    Row::Describe(builder, static_cast<const Row&>(row));
    return Status::Malformed(name + ": empty; allowed: the header " + table.layout.Allowed() +
                             ", then one line per row");
  }
  csv_table_internal::HeaderReader header(name, records->front(), table.layout);
  Row::Describe(header, static_cast<const Row&>(row));
  MESHLEARN_RETURN_IF_ERROR(header.Finish());
  for (size_t r = 1; r < records->size(); ++r) {
    const CsvRecord& record = (*records)[r];
    if (record.fields.size() != table.layout.width()) {
      return csv_table_internal::WidthError(name, record, table.layout);
    }
    csv_table_internal::RowReader reader(name, record, table.layout);
    Row::Describe(reader, row = Row{});
    MESHLEARN_RETURN_IF_ERROR(reader.status());
    table.rows.push_back(std::move(row));
    table.lines.push_back(record.line);
  }
  return table;
}

// Reads the file at `path` (ReadWholeFile's errors, then ReadCsv's).
template <class Row>
Result<CsvTable<Row>> ReadCsvFile(const std::string& path) {
  auto text = ReadWholeFile(path);
  if (!text.ok()) return text.status();
  return ReadCsv<Row>(*text, path);
}

// Replaces the file at `path` with RenderCsv(rows, layout), atomically (WriteFileAtomically).
template <class Row>
Status WriteCsvFile(const std::string& path, std::span<const Row> rows, const CsvLayout& layout) {
  return WriteFileAtomically(path, RenderCsv(rows, layout));
}

// Replaces the file at `path` with RenderCsv(rows), atomically.
template <class Row>
Status WriteCsvFile(const std::string& path, std::span<const Row> rows) {
  return WriteCsvFile(path, rows, LayoutOf(rows));
}

}  // namespace meshlearn
