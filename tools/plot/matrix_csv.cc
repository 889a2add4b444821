#include "tools/plot/matrix_csv.h"

#include "base/csv.h"
#include "tools/layout/run_layout.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

namespace meshlearn::plot {
namespace {

namespace fs = std::filesystem;

std::string Where(const std::string& path, size_t line) {
  return path + " line " + std::to_string(line);
}

std::string Trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  const size_t end = s.find_last_not_of(" \t");
  return s.substr(begin, end - begin + 1);
}

// Reads the whole file at `path`.
Result<std::string> ReadText(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return Status::NotFound(path + ": no such file");
  if (fs::is_directory(path, ec)) return Status::IoError(path + ": is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IoError(path + ": cannot open for reading");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::IoError(path + ": read failed");
  return text.str();
}

// Writes `text` to `path` through a temporary file and a rename, so a reader never sees half a
// file.
Status WriteText(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::IoError(path + ": cannot open for writing");
    out << text;
    out.flush();
    if (!out) return Status::IoError(path + ": write failed");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::IoError(path + ": cannot replace the file");
  }
  return Status::Ok();
}

// Reads and parses the CSV file at `path`.
Result<std::vector<CsvRecord>> ReadCsv(const std::string& path) {
  Result<std::string> text = ReadText(path);
  if (!text.ok()) return text.status();
  return ParseCsv(*text, path);
}

// Numbers in files a user may type: blanks around them and a leading '+' allowed.
constexpr NumberForm kTyped{.padded = true};

// Checks that `header` starts with `expected` cells; `exact` also requires no further cells.
Status CheckHeader(const std::string& path, const std::vector<CsvRecord>& records,
                   const std::vector<std::string>& expected, bool exact) {
  std::string wanted;
  for (const auto& name : expected) wanted += (wanted.empty() ? "" : ",") + name;
  if (exact) {
    wanted = "exactly `" + wanted + "`";
  } else {
    wanted = "`" + wanted + "` optionally followed by more columns";
  }
  if (records.empty())
    return Status::Malformed(path + ": empty file; expected the header " + wanted);
  const auto& header = records.front();
  bool ok = header.fields.size() >= expected.size() &&
            (!exact || header.fields.size() == expected.size());
  for (size_t c = 0; ok && c < expected.size(); ++c) ok = Trim(header.fields[c]) == expected[c];
  if (!ok) return Status::Malformed(Where(path, header.line) + ": header must be " + wanted);
  return Status::Ok();
}

// Returns the permutation that lists `ids` grouped by cluster (see OrderByClusters).
std::vector<size_t> ClusterOrder(const std::vector<std::string>& ids,
                                 const std::map<std::string, int>& clusters) {
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), 0);
  auto key = [&](size_t i) {
    const auto it = clusters.find(ids[i]);
    return it == clusters.end() ? std::pair(1, 0) : std::pair(0, it->second);
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto ka = key(a);
    const auto kb = key(b);
    if (ka != kb) return ka < kb;
    return NaturalLess(ids[a], ids[b]);
  });
  return order;
}

}  // namespace

bool NaturalLess(const std::string& a, const std::string& b) {
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      size_t ie = i;
      size_t je = j;
      while (ie < a.size() && is_digit(a[ie])) ++ie;
      while (je < b.size() && is_digit(b[je])) ++je;
      size_t iz = i;
      size_t jz = j;
      while (iz + 1 < ie && a[iz] == '0') ++iz;  // skip leading zeros, keep one digit
      while (jz + 1 < je && b[jz] == '0') ++jz;
      if (ie - iz != je - jz) return ie - iz < je - jz;
      const int cmp = a.compare(iz, ie - iz, b, jz, je - jz);
      if (cmp != 0) return cmp < 0;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  if ((i < a.size()) != (j < b.size())) return j < b.size();
  return a < b;
}

Result<LabeledMatrix> ReadMatrixCsv(const std::string& path) {
  Result<std::vector<CsvRecord>> parsed = ReadCsv(path);
  if (!parsed.ok()) return parsed.status();
  const std::vector<CsvRecord>& records = *parsed;
  if (records.empty()) {
    return Status::Malformed(path +
                             ": empty file; expected a header row (an empty cell, then the "
                             "column ids) and one row per matrix row");
  }
  const CsvRecord& header = records.front();
  if (!Trim(header.fields[0]).empty()) {
    return Status::Malformed(CsvWhere(path, header.line, 1) +
                             ": header must start with an empty "
                             "cell (found '" +
                             header.fields[0] + "'), then the column ids");
  }
  if (header.fields.size() < 2) {
    return Status::Malformed(Where(path, header.line) + ": header names no column id");
  }
  LabeledMatrix m;
  std::set<std::string> seen;
  for (size_t c = 1; c < header.fields.size(); ++c) {
    const std::string id = Trim(header.fields[c]);
    if (id.empty() || !seen.insert(id).second) {
      return Status::Malformed(CsvWhere(path, header.line, c + 1) + ": column id '" + id + "' is " +
                               (id.empty() ? "empty" : "repeated") +
                               "; allowed: a unique, non-empty id");
    }
    m.col_ids.push_back(id);
  }
  seen.clear();
  const size_t width = header.fields.size();
  for (size_t r = 1; r < records.size(); ++r) {
    const CsvRecord& row = records[r];
    if (row.fields.size() != width) {
      return Status::Malformed(Where(path, row.line) + ": row has " +
                               std::to_string(row.fields.size()) + " cells, the header has " +
                               std::to_string(width) + " (an id, then " +
                               std::to_string(width - 1) + " values)");
    }
    const std::string id = Trim(row.fields[0]);
    if (id.empty() || !seen.insert(id).second) {
      return Status::Malformed(CsvWhere(path, row.line, 1) + ": row id '" + id + "' is " +
                               (id.empty() ? "empty" : "repeated") +
                               "; allowed: a unique, non-empty id");
    }
    m.row_ids.push_back(id);
    for (size_t c = 1; c < width; ++c) {
      const Result<double> value =
          CsvNumber<double>(path, row, c, "row '" + id + "', column '" + m.col_ids[c - 1] + "'",
                            {.empty_is_nan = true, .padded = true});
      if (!value.ok()) return value.status();
      m.values.push_back(*value);
    }
  }
  if (m.row_ids.empty()) return Status::Malformed(path + ": header only, no matrix rows");
  return m;
}

Status WriteMatrixCsv(const std::string& path, const LabeledMatrix& m) {
  if (m.values.size() != m.rows() * m.cols()) {
    return Status::InvalidArgument(path + ": matrix has " + std::to_string(m.values.size()) +
                                   " values for " + std::to_string(m.rows()) + " x " +
                                   std::to_string(m.cols()) + " ids");
  }
  std::string text;
  for (const auto& id : m.col_ids) {
    text += ',';
    text += CsvField(id);
  }
  text += "\n";
  for (size_t r = 0; r < m.rows(); ++r) {
    text += CsvField(m.row_ids[r]);
    for (size_t c = 0; c < m.cols(); ++c) {
      text += ',';
      const double value = m.at(r, c);
      if (!std::isnan(value)) text += ExactNumber(value);
    }
    text += "\n";
  }
  return WriteText(path, text);
}

namespace {

// Peer -> times sampled, from one comm.csv; nullopt for a node folder without one.
using CommCounts = std::optional<std::map<std::string, uint64_t>>;

// Reads every node folder's comm.csv into `folders` (keyed by folder name) and collects every
// peer id named in them in `peers`. The filesystem calls may throw; the caller catches.
Status ReadCommFolders(const std::string& run_dir, std::map<std::string, CommCounts>& folders,
                       std::set<std::string>& peers) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || !launch::NodeIdOfFolder(name)) continue;
    const std::string path = launch::PathIn(entry.path().string(), launch::kCommFile);
    if (!fs::exists(path, ec)) {
      folders[name] = std::nullopt;
      continue;
    }
    Result<std::vector<CsvRecord>> parsed = ReadCsv(path);
    if (!parsed.ok()) return parsed.status();
    MESHLEARN_RETURN_IF_ERROR(CheckHeader(path, *parsed, {"peer", "times_sampled"}, false));
    std::map<std::string, uint64_t> counts;
    for (size_t r = 1; r < parsed->size(); ++r) {
      const CsvRecord& row = (*parsed)[r];
      if (row.fields.size() < 2) {
        return Status::Malformed(Where(path, row.line) +
                                 ": row has 1 cell; expected a peer id and times_sampled");
      }
      const std::string peer = Trim(row.fields[0]);
      if (peer.empty() || counts.count(peer) != 0) {
        return Status::Malformed(CsvWhere(path, row.line, 1) + ": peer id '" + peer + "' is " +
                                 (peer.empty() ? "empty" : "repeated") +
                                 "; allowed: each peer once");
      }
      const Result<uint64_t> count = CsvNumber<uint64_t>(path, row, 1, "times_sampled", kTyped);
      if (!count.ok()) return count.status();
      counts[peer] = *count;
      peers.insert(peer);
    }
    folders[name] = std::move(counts);
  }
  if (ec) return Status::IoError(run_dir + ": cannot list the folder: " + ec.message());
  return Status::Ok();
}

}  // namespace

Result<LabeledMatrix> MergeCommCounts(const std::string& run_dir,
                                      const std::vector<std::string>& order, size_t max_side) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) return Status::NotFound(run_dir + ": no such folder");
  std::map<std::string, CommCounts> folders;
  std::set<std::string> ids;  // every node: the peers named in comm.csv files, then the folders
  try {
    MESHLEARN_RETURN_IF_ERROR(ReadCommFolders(run_dir, folders, ids));
  } catch (const fs::filesystem_error& e) {
    return Status::IoError(run_dir + ": cannot read the run folder: " + e.what());
  }
  if (folders.empty()) {
    return Status::NotFound(run_dir + ": no node folder (node-<id>/comm.csv) in this folder");
  }
  // A folder "node-7" is node "7" (DESIGN.md), unless the peers are named after the whole folder
  // name ("node-7"), as when node ids themselves start with "node-".
  size_t whole_name_hits = 0;
  size_t suffix_hits = 0;
  for (const auto& [name, counts] : folders) {
    whole_name_hits += ids.count(name);
    suffix_hits += ids.count(*launch::NodeIdOfFolder(name));
  }
  std::map<std::string, CommCounts> rows;  // node id -> its counts
  for (auto& [name, counts] : folders) {
    const std::string id = whole_name_hits > suffix_hits ? name : *launch::NodeIdOfFolder(name);
    ids.insert(id);
    rows[id] = std::move(counts);
  }
  std::vector<std::string> ordered;
  std::set<std::string> placed;
  for (const auto& id : order) {
    if (placed.insert(id).second) ordered.push_back(id);
  }
  std::vector<std::string> rest;
  for (const auto& id : ids) {
    if (placed.count(id) == 0) rest.push_back(id);
  }
  std::sort(rest.begin(), rest.end(), NaturalLess);
  ordered.insert(ordered.end(), rest.begin(), rest.end());

  // Group g holds ids [g * size, (g + 1) * size); one id per group when nothing is grouped.
  const bool grouped = max_side > 0 && ordered.size() > max_side;
  const size_t size = grouped ? (ordered.size() + max_side - 1) / max_side : 1;
  const size_t groups = (ordered.size() + size - 1) / size;
  LabeledMatrix m;
  for (size_t g = 0; g < groups; ++g) {
    const size_t first = g * size;
    const size_t end = std::min(first + size, ordered.size());
    if (!grouped) {
      m.row_ids.push_back(ordered[first]);
      continue;
    }
    m.row_ids.push_back(ordered[first] + ".." + ordered[end - 1]);
    m.row_members.emplace_back(ordered.begin() + first, ordered.begin() + end);
  }
  m.col_ids = m.row_ids;
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < ordered.size(); ++i) group_of[ordered[i]] = i / size;
  // Per group pair the sum of the counts, then their mean over the pairs (i, j != i) of a known
  // row i: known[r] rows of group r with a comm.csv, each paired with every member of group c.
  m.values.assign(groups * groups, 0.0);
  std::vector<size_t> known(groups, 0);
  for (size_t i = 0; i < ordered.size(); ++i) {
    const auto it = rows.find(ordered[i]);
    if (it == rows.end() || !it->second) continue;  // unknown row: no pairs
    const size_t r = i / size;
    ++known[r];
    for (const auto& [peer, count] : *it->second) {
      m.values[r * groups + group_of.at(peer)] += static_cast<double>(count);
    }
  }
  for (size_t r = 0; r < groups; ++r) {
    for (size_t c = 0; c < groups; ++c) {
      const size_t members = std::min(size, ordered.size() - c * size);
      const size_t pairs = known[r] * members - (grouped && r == c ? known[r] : 0);
      double& v = m.values[r * groups + c];
      v = pairs > 0 ? v / static_cast<double>(pairs) : std::numeric_limits<double>::quiet_NaN();
    }
  }
  return m;
}

std::map<std::string, int> RowClusters(const LabeledMatrix& m,
                                       const std::map<std::string, int>& clusters) {
  std::map<std::string, int> out;
  for (size_t r = 0; r < m.rows(); ++r) {
    const std::vector<std::string> one = {m.row_ids[r]};
    const std::vector<std::string>& members = m.row_members.empty() ? one : m.row_members[r];
    std::optional<int> shared;
    bool same = true;
    for (const auto& id : members) {
      const auto it = clusters.find(id);
      same = same && it != clusters.end() && (!shared || *shared == it->second);
      if (!same) break;
      shared = it->second;
    }
    if (same && shared) out[m.row_ids[r]] = *shared;
  }
  return out;
}

std::vector<std::string> ClusterOrderedIds(const std::vector<std::string>& ids,
                                           const std::map<std::string, int>& clusters) {
  std::vector<std::string> out;
  for (size_t i : ClusterOrder(ids, clusters)) out.push_back(ids[i]);
  return out;
}

Result<std::map<std::string, int>> ReadClusterCsv(const std::string& path) {
  auto table = ReadCsvFile<ClusterRow>(path);
  if (!table.ok()) return table.status();
  std::map<std::string, int> clusters;
  for (size_t r = 0; r < table->rows.size(); ++r) {
    const ClusterRow& row = table->rows[r];
    if (row.node.empty() || !clusters.emplace(row.node, row.cluster).second) {
      return Status::Malformed(CsvWhere(path, table->lines[r], 1) + " (node): '" + row.node +
                               "' is " + (row.node.empty() ? "empty" : "repeated") +
                               "; allowed: each node once");
    }
  }
  return clusters;
}

Status WriteClusterCsv(const std::string& path, const std::map<std::string, int>& clusters) {
  std::vector<ClusterRow> rows;
  for (const auto& [id, cluster] : clusters) rows.push_back({id, cluster});
  std::sort(rows.begin(), rows.end(),
            [](const ClusterRow& a, const ClusterRow& b) { return NaturalLess(a.node, b.node); });
  return WriteCsvFile<ClusterRow>(path, rows);
}

LabeledMatrix OrderByClusters(const LabeledMatrix& m, const std::map<std::string, int>& clusters) {
  const std::vector<size_t> row_order = ClusterOrder(m.row_ids, clusters);
  const std::vector<size_t> col_order = ClusterOrder(m.col_ids, clusters);
  LabeledMatrix out;
  for (size_t r : row_order) out.row_ids.push_back(m.row_ids[r]);
  for (size_t c : col_order) out.col_ids.push_back(m.col_ids[c]);
  out.values.reserve(m.values.size());
  for (size_t r : row_order) {
    for (size_t c : col_order) out.values.push_back(m.at(r, c));
  }
  return out;
}

}  // namespace meshlearn::plot
