// PROTOCOL.md's tables and the struct descriptions of protocol/messages.h cannot disagree: this
// test renders every description (its fields in wire order with their msgpack types, optional
// ones in brackets, and its blob frames) and compares it with the message table, the envelope
// table and the nested structs of protocol/PROTOCOL.md. Text in parentheses in a cell is prose
// for the reader and is not compared.

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "protocol/field_count.h"
#include "protocol/messages.h"

namespace meshlearn {
namespace {

namespace fs = std::filesystem;
using codec_internal::DescribeFields;

// The name a nested struct has in PROTOCOL.md.
template <class S>
std::string WireName() {
  if constexpr (std::is_same_v<S, PeerInfo>) return "PeerInfo";
  if constexpr (std::is_same_v<S, PeerScore>) return "PeerScore";
  if constexpr (std::is_same_v<S, HeldEstimate>) return "HeldEstimate";
  if constexpr (std::is_same_v<S, EstimateChain>) return "Chain";
  if constexpr (std::is_same_v<S, TensorSpec>) return "TensorSpec";
  return "unnamed";
}

// The msgpack type PROTOCOL.md names for an integer field of maximum `max`.
std::string UintType(uint64_t max) {
  switch (max) {
    case UINT8_MAX:
      return "uint8";
    case UINT16_MAX:
      return "uint16";
    case UINT32_MAX:
      return "uint32";
    case UINT64_MAX:
      return "uint64";
    default:
      return "uint";
  }
}

// Renders a description the way PROTOCOL.md writes it: "name type" per field, "[name type]" for
// an optional one; the blob frames' names, "[name]" for an optional one; and the nested structs
// it names.
class DocRenderer {
 public:
  std::string Fields() const { return Join(fields_, "none"); }
  std::string Blobs() const { return Join(blobs_, "none"); }
  const std::set<std::string>& nested() const { return nested_; }

  template <class T>
  void Uint(const char* name, const T&, uint64_t max) {
    Field(name, UintType(max));
  }
  template <class L>
  void Count(const char* name, const uint32_t&, L) {
    Field(name, "uint32");
  }
  void Int(const char* name, const int64_t&) { Field(name, "int64"); }
  void Bool(const char* name, const bool&) { Field(name, "bool"); }
  void Float64(const char* name, const double&) { Field(name, "float64"); }
  void String(const char* name, const std::string&) { Field(name, "str"); }
  void AnyString(const char* name, const std::string&) { Field(name, "str"); }
  void NodeId(const char* name, const std::string&) { Field(name, "str"); }
  template <class L>
  void NodeIds(const char* name, const std::optional<std::vector<std::string>>&, L) {
    Field(name, "array of str");
  }
  void Codecs(const char* name, const std::vector<CompressionCodec>&) {
    Field(name, "array of uint8");
  }
  template <class S>
  void Struct(const char* name, const S&) {
    Field(name, Nested<S>());
  }
  template <class S>
  void Struct(const char* name, const std::optional<S>&) {
    Field(name, Nested<S>());
  }
  template <class S, class L>
  void List(const char* name, const std::vector<S>&, L) {
    Field(name, "array of " + Nested<S>());
  }
  void Layout(const char* name, const ParamLayout&) {
    nested_.insert("TensorSpec");
    Field(name, "Layout");
  }
  void Dims(const char* name, const std::vector<int64_t>&) { Field(name, "array of uint"); }
  void Optional() { optional_ = true; }
  template <class T>
  void Present(const char* name, const std::optional<T>&) {
    Field(name, "bool");
  }
  void Encoding(const char* name, const CompressionSettings&, BlobContents) {
    Field(name, "uint8");
  }
  void Chain(const char* name, const std::optional<EstimateChain>&) {
    Field(name, Nested<EstimateChain>());
  }
  void Blob(const char* name, const FloatArray&, uint64_t) { blobs_.push_back(name); }
  void Blob(const char* name, const std::optional<FloatArray>&, uint64_t) {
    blobs_.push_back("[" + std::string(name) + "]");
  }

 private:
  template <class S>
  std::string Nested() {
    nested_.insert(WireName<S>());
    return WireName<S>();
  }
  void Field(const char* name, const std::string& type) {
    const std::string field = std::string(name) + " " + type;
    fields_.push_back(optional_ ? "[" + field + "]" : field);
  }
  static std::string Join(const std::vector<std::string>& items, const char* empty) {
    if (items.empty()) return empty;
    std::string joined;
    for (const std::string& item : items) joined += (joined.empty() ? "" : ", ") + item;
    return joined;
  }

  std::vector<std::string> fields_;
  std::vector<std::string> blobs_;
  std::set<std::string> nested_;
  bool optional_ = false;
};

template <class S>
DocRenderer Render() {
  const S s{};
  DocRenderer renderer;
  DescribeFields(renderer, s);
  return renderer;
}

// A table cell as compared: without text in parentheses, spaces collapsed.
std::string Comparable(std::string cell) {
  for (size_t open; (open = cell.find('(')) != std::string::npos;) {
    int depth = 0;
    size_t close = open;
    for (; close < cell.size(); ++close) {
      depth += cell[close] == '(' ? 1 : cell[close] == ')' ? -1 : 0;
      if (depth == 0) break;
    }
    cell.erase(open, close - open + 1);
  }
  std::istringstream words(cell);
  std::string word, out;
  while (words >> word) out += (out.empty() ? "" : " ") + word;
  for (size_t at; (at = out.find(" ,")) != std::string::npos;) out.erase(at, 1);
  return out;
}

// The cells of a markdown table row.
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::istringstream in(line.substr(1));
  for (std::string cell; std::getline(in, cell, '|');) cells.push_back(Comparable(cell));
  return cells;
}

std::string ReadProtocolMd() {
  std::ifstream in(fs::path(MESHLEARN_SOURCE_DIR) / "protocol" / "PROTOCOL.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The lines of section `heading` ("## Message types") up to the next "## " heading.
std::vector<std::string> SectionLines(const std::string& doc, const std::string& heading) {
  std::vector<std::string> lines;
  std::istringstream in(doc.substr(doc.find("\n" + heading + "\n") + 1));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && line.rfind("## ", 0) != 0) lines.push_back(line);
  return lines;
}

// The rows of the message table: type number -> {name, body fields, blob frames}.
std::map<int, std::vector<std::string>> MessageRows(const std::string& doc) {
  std::map<int, std::vector<std::string>> rows;
  for (const std::string& line : SectionLines(doc, "## Message types")) {
    if (line.size() < 3 || line[0] != '|' || !std::isdigit(static_cast<unsigned char>(line[2]))) {
      continue;
    }
    std::vector<std::string> cells = Cells(line);
    if (cells.size() >= 5) rows[std::stoi(cells[0])] = {cells[1], cells[3], cells[4]};
  }
  return rows;
}

// The nested structs' definitions: "`Name` = [fields]".
std::map<std::string, std::string> NestedStructs(const std::string& doc) {
  std::map<std::string, std::string> structs;
  std::string flat = doc;
  for (char& c : flat) c = c == '\n' ? ' ' : c;
  static const std::regex kDefinition("`(\\w+)` = \\[([^\\]]*)\\]");
  for (auto it = std::sregex_iterator(flat.begin(), flat.end(), kDefinition);
       it != std::sregex_iterator(); ++it) {
    structs[(*it)[1]] = Comparable((*it)[2]);
  }
  return structs;
}

TEST(ProtocolDoc, TheMessageTableIsTheDescriptions) {
  const std::string doc = ReadProtocolMd();
  ASSERT_FALSE(doc.empty()) << "protocol/PROTOCOL.md not found under " << MESHLEARN_SOURCE_DIR;
  const auto rows = MessageRows(doc);
  std::set<std::string> nested;
  std::set<int> described;
  auto check = [&]<class M>() {
    const int type = static_cast<int>(M::kType);
    described.insert(type);
    const DocRenderer rendered = Render<M>();
    nested.insert(rendered.nested().begin(), rendered.nested().end());
    auto row = rows.find(type);
    ASSERT_NE(row, rows.end()) << "PROTOCOL.md has no row for type " << type;
    EXPECT_EQ(row->second[0], MessageTypeName(M::kType)) << "type " << type;
    EXPECT_EQ(row->second[1], rendered.Fields()) << MessageTypeName(M::kType) << "'s body fields";
    EXPECT_EQ(row->second[2], rendered.Blobs()) << MessageTypeName(M::kType) << "'s blob frames";
  };
  [&]<size_t... I>(std::index_sequence<I...>) {
    (check.template operator()<std::variant_alternative_t<I, Body>>(), ...);
  }
  (std::make_index_sequence<std::variant_size_v<Body>>());
  for (const auto& [type, row] : rows) {
    EXPECT_TRUE(described.count(type)) << "PROTOCOL.md has a row for type " << type << " ("
                                       << row[0] << "), which no message struct describes";
  }
  const auto structs = NestedStructs(doc);
  for (const std::string& name : nested) {
    EXPECT_TRUE(structs.count(name)) << "PROTOCOL.md does not define the nested struct " << name;
  }
}

TEST(ProtocolDoc, TheNestedStructsAreTheirDescriptions) {
  const auto structs = NestedStructs(ReadProtocolMd());
  auto check = [&]<class S>() {
    auto it = structs.find(WireName<S>());
    ASSERT_NE(it, structs.end()) << "PROTOCOL.md does not define " << WireName<S>();
    EXPECT_EQ(it->second, Render<S>().Fields()) << WireName<S>();
  };
  check.template operator()<PeerInfo>();
  check.template operator()<PeerScore>();
  check.template operator()<HeldEstimate>();
  check.template operator()<EstimateChain>();
  check.template operator()<TensorSpec>();
}

TEST(ProtocolDoc, TheEnvelopeTableIsItsDescription) {
  std::vector<std::string> documented;
  for (const std::string& line : SectionLines(ReadProtocolMd(), "## Envelope (frame 0)")) {
    if (line.size() < 3 || line[0] != '|' || !std::isdigit(static_cast<unsigned char>(line[2]))) {
      continue;
    }
    std::vector<std::string> cells = Cells(line);
    EXPECT_EQ(cells[0], std::to_string(documented.size())) << "rows in field order";
    documented.push_back(cells[1] + " " + cells[2]);
  }
  std::string joined;
  for (const std::string& field : documented) joined += (joined.empty() ? "" : ", ") + field;
  EXPECT_EQ(joined, Render<Envelope>().Fields());
}

// A Ping that gained an optional field its table row does not have.
struct ExtendedPing {
  uint64_t nonce = 0;
  bool extra = false;
  template <class Fields, class Self>
  static void Describe(Fields& f, Self& m) {
    f.Uint("nonce", m.nonce, UINT64_MAX);
    f.Optional();
    f.Bool("extra", m.extra);
  }
};

// The comparison notices what it is for: a field that the table does not have.
TEST(ProtocolDoc, ADescriptionAndATableThatDifferAreCaught) {
  const auto rows = MessageRows(ReadProtocolMd());
  EXPECT_EQ(rows.at(9)[1], Render<Ping>().Fields());
  EXPECT_EQ(Render<ExtendedPing>().Fields(), "nonce uint64, [extra bool]");
  EXPECT_NE(rows.at(9)[1], Render<ExtendedPing>().Fields());
}

}  // namespace
}  // namespace meshlearn
