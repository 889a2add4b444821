#pragma once
// CSV as meshlearn writes and reads it: one quoting rule, one number text and one parser, shared
// by every file a node or a tool writes (rounds.csv, comm.csv, scores.csv, heatmap.csv,
// summary.csv, ...).
//
// Specification.
// - Fields follow RFC 4180: a field holding a comma, a quote, a carriage return or a line feed is
//   quoted, and a quote inside is doubled. Records end at "\n" or "\r\n"; a quoted field may span
//   lines. Rationale: ids and method names are the user's text; a comma in one must not shift
//   the columns after it.
// - ExactNumber writes the shortest text that reads back to the same double. Rationale: write ->
//   read -> write gives the same bytes, so files can be compared and merged without drift.
// - Every parse error names the file, the 1-based line and column, what was found and what is
//   allowed.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

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

// The shortest decimal text that reads back as exactly `value` ("nan", "inf" and "-inf" for
// those values).
std::string ExactNumber(double value);

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

}  // namespace meshlearn
