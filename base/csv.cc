#include "base/csv.h"

namespace meshlearn {

std::string CsvField(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  return QuotedCsvField(field);
}

std::string QuotedCsvField(std::string_view field) {
  std::string quoted = "\"";
  for (char c : field) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string CsvWhere(const std::string& name, size_t line, size_t column) {
  return name + " line " + std::to_string(line) + ", column " + std::to_string(column);
}

Result<std::vector<CsvRecord>> ParseCsv(std::string_view text, const std::string& name,
                                        size_t first_line) {
  std::vector<CsvRecord> records;
  CsvRecord record;
  std::string field;
  size_t line = first_line;
  size_t i = 0;
  bool record_open = false;  // a field of the current record has begun
  auto end_record = [&] {
    if (record_open) {
      record.fields.push_back(std::move(field));
      records.push_back(std::move(record));
    }
    record = CsvRecord{};
    field.clear();
    record_open = false;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (!record_open) record.line = line;
    if (c == '"' && field.empty()) {
      const size_t quote_line = line;
      record_open = true;
      ++i;
      bool closed = false;
      while (i < text.size()) {
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          closed = true;
          ++i;
          break;
        }
        if (text[i] == '\n') ++line;
        field += text[i++];
      }
      if (!closed) {
        return Status::Malformed(CsvWhere(name, quote_line, record.fields.size() + 1) +
                                 ": quoted field is never closed; allowed: \"text\" with inner "
                                 "quotes doubled");
      }
      if (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
        return Status::Malformed(CsvWhere(name, line, record.fields.size() + 1) +
                                 ": text after a closing quote; allowed: a comma or the end of "
                                 "the line");
      }
      continue;
    }
    if (c == ',') {
      record_open = true;
      record.fields.push_back(std::move(field));
      field.clear();
      ++i;
    } else if (c == '\n' || c == '\r') {
      end_record();
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      ++i;
      ++line;
    } else {
      record_open = true;
      field += c;
      ++i;
    }
  }
  end_record();
  return records;
}

Result<std::vector<std::string>> SplitCsvLine(std::string_view line, const std::string& name,
                                              size_t line_number) {
  auto records = ParseCsv(line, name, line_number);
  if (!records.ok()) return records.status();
  if (records->empty()) return std::vector<std::string>(1);
  return std::move(records->front().fields);
}

}  // namespace meshlearn
