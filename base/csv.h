#pragma once
// CSV as meshlearn writes and reads it: one quoting rule, one splitter and one number text
// (base/number_text.h), shared by every file a node or a tool writes or reads (rounds.csv,
// comm.csv, scores.csv, heatmap.csv, summary.csv, ...).
//
// Specification.
// - Fields follow RFC 4180: a field holding a comma, a quote, a carriage return or a line feed is
//   quoted, and a quote inside is doubled. Records end at "\n" or "\r\n"; a quoted field may span
//   lines. Rationale: ids and method names are the user's text; a comma in one must not shift
//   the columns after it.
// - A number cell is written by ExactNumber and read by ParseNumber (base/number_text.h): the
//   shortest text that reads back to the same double, empty for NaN (not known); CsvNumber reads
//   one cell and names its place.
// - Every parse error names the file, the 1-based line and column, what was found and what is
//   allowed.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/number_text.h"
#include "base/status.h"

namespace meshlearn {

// One record of CSV text and the 1-based line it starts on.
struct CsvRecord {
  size_t line = 0;
  std::vector<std::string> fields;
};

// `field` as one CSV field: unchanged, or quoted when it holds a comma, a quote, "\r" or "\n".
std::string CsvField(std::string_view field);

// `field` as one quoted CSV field, whatever it holds (quotes inside doubled).
std::string QuotedCsvField(std::string_view field);

// Splits RFC 4180 `text` into records; lines that are entirely empty are skipped. `name` and
// `first_line` (the line number of text's first line) place errors: kMalformed for a quoted
// field that is never closed or text after a closing quote.
Result<std::vector<CsvRecord>> ParseCsv(std::string_view text, const std::string& name,
                                        size_t first_line = 1);

// The fields of line `line_number` of file `name` (ParseCsv's rules; an empty line is one empty
// field). Errors as ParseCsv.
Result<std::vector<std::string>> SplitCsvLine(std::string_view line, const std::string& name,
                                              size_t line_number);

// "<name> line <line>, column <column>": where a CSV error is.
std::string CsvWhere(const std::string& name, size_t line, size_t column);

// Field `column` (0-based) of `record` in file `name`, read as a T under `form` (ParseNumber);
// kMalformed "<name> line <line>, column <column> (<what>): '<text>' is not ...; allowed: ..."
// otherwise. `what` names the column (or the row and column) for the reader.
template <typename T>
Result<T> CsvNumber(const std::string& name, const CsvRecord& record, size_t column,
                    std::string_view what, const NumberForm& form = {}) {
  return ParseNumber<T>(record.fields[column],
                        CsvWhere(name, record.line, column + 1) + " (" + std::string(what) + ")",
                        form);
}

}  // namespace meshlearn
