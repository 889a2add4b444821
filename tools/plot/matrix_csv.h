#pragma once
// Labeled matrices and the CSV files behind the run pictures (DESIGN.md "Outputs"): heatmap.csv,
// emd_matrix.csv, the per-node comm.csv files they are merged from, and cluster files.
//
// Specification.
// - A matrix CSV has a header row whose first cell is empty and whose other cells are the column
//   ids, then one row per matrix row: its id, then one number per column. An empty number cell
//   is NaN ("unknown", e.g. an EMD never measured). Rationale: DESIGN.md "Outputs" names the
//   first row and the first column as node ids; an empty cell keeps "unknown" apart from 0.
// - Fields follow RFC 4180: a field holding a comma, a quote or a line break is quoted, and a
//   quote inside is doubled. Lines may end in "\n" or "\r\n". Numbers are written in the shortest
//   text that reads back to the same double. Rationale: write -> read -> write gives the same
//   bytes, so a merged file can be compared and re-rendered without drift.
// - Every read error names the file, the 1-based line and column, what was found and what is
//   allowed. Rationale: these files are edited and produced by hand and by other tools.
// - Node ids sort "naturally": digit runs compare as numbers, so node-2 comes before node-10.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "base/csv_table.h"
#include "base/status.h"

namespace meshlearn::plot {

// An N x M matrix with row and column labels (node ids) and row-major values.
struct LabeledMatrix {
  std::vector<std::string> row_ids;
  std::vector<std::string> col_ids;
  std::vector<double> values;  // row_ids.size() * col_ids.size() entries, row-major
  // When each row stands for a group of nodes (MergeCommCounts above its `max_side`): the node
  // ids of row r's group, in order; the columns are the same groups. Empty when rows are nodes.
  std::vector<std::vector<std::string>> row_members;

  // Number of rows (row_ids.size()).
  size_t rows() const { return row_ids.size(); }
  // Number of columns (col_ids.size()).
  size_t cols() const { return col_ids.size(); }
  // The value at row `r`, column `c`; requires r < rows() and c < cols().
  double at(size_t r, size_t c) const { return values[r * col_ids.size() + c]; }
  // Mutable access to the value at row `r`, column `c`; same requirement as at().
  double& at(size_t r, size_t c) { return values[r * col_ids.size() + c]; }
  // True when the matrix is square and its row ids equal its column ids, in the same order.
  bool IsSquareWithSameIds() const { return row_ids == col_ids; }
};

// True when id `a` sorts before id `b` in natural order: maximal runs of ASCII digits compare as
// numbers (shorter run without leading zeros first), everything else byte by byte. A strict weak
// ordering; ties between equal-valued digit runs ("07" vs "7") fall back to plain string order.
bool NaturalLess(const std::string& a, const std::string& b);

// Reads a matrix CSV (format above). Returns kNotFound if the file does not exist, kIoError if it
// cannot be read, and kMalformed (naming file, line, column) for an empty file, a header whose
// first cell is not empty, an empty or repeated id, a row with a different number of cells than
// the header, or a cell that is neither a number nor empty. Inf and NaN spelled out are rejected.
Result<LabeledMatrix> ReadMatrixCsv(const std::string& path);

// Writes `m` to `path` in the format above, replacing the file. Returns kInvalidArgument when the
// value count does not match the ids, kIoError when the file cannot be written.
Status WriteMatrixCsv(const std::string& path, const LabeledMatrix& m);

// The largest number of nodes whose communication heatmap shows one row per node; the launcher's
// report and `meshlearn-heatmap merge` group nodes above it. Rationale: a dense N x N matrix of
// doubles is 8 N^2 bytes (80 GB at 100,000 nodes), and a picture cannot show more than about a
// thousand rows apart anyway (its cells are then 1 pixel).
inline constexpr size_t kHeatmapMaxSide = 1000;

// Builds the N x N communication matrix of a run folder. Every subfolder "node-<id>" of `run_dir`
// is node <id> (or node "node-<id>" when the comm.csv files name peers that way); its "comm.csv"
// (header `peer,times_sampled` with optional further columns such as `answered`) gives row <id>:
// entry (i, j) = times node i sampled node j, 0 where never sampled. The ids are the node folders
// plus every peer named in a comm.csv; ids in `order` come first in that order (they are included
// even without a folder), the rest follow in natural order. A row with no comm.csv (node folder
// without one, or a peer without a folder) is all NaN: its counts are unknown, not zero.
// When there are more than `max_side` ids (0: no limit), the matrix is grouped instead: the ids,
// in the order above, are cut into runs of ceil(N / max_side) consecutive ids (the last may be
// shorter); row and column I stand for run I, with id "<first id>..<last id>" and its members in
// row_members; entry (I, J) is the mean of the counts (i, j) over the pairs of a node i of I that
// has a comm.csv and a node j != i of J (NaN when there is no such pair). Memory stays
// O(entries of the comm.csv files + max_side^2), never O(N^2).
// Returns kNotFound when `run_dir` is not a folder or holds no node folder, kMalformed (naming
// file, line, column) for a bad comm.csv: wrong header, a count that is not a non-negative
// integer, an empty or repeated peer, or a row with too few cells.
Result<LabeledMatrix> MergeCommCounts(const std::string& run_dir,
                                      const std::vector<std::string>& order = {},
                                      size_t max_side = 0);

// The cluster of each row of `m`: a node's own for a node row, and for a group row (row_members)
// the cluster its members share; rows whose members have none, or several, are left out.
std::map<std::string, int> RowClusters(const LabeledMatrix& m,
                                       const std::map<std::string, int>& clusters);

// The ids of `ids` in the order OrderByClusters gives them (ascending cluster, natural order
// within a cluster, ids without a cluster last in natural order).
std::vector<std::string> ClusterOrderedIds(const std::vector<std::string>& ids,
                                           const std::map<std::string, int>& clusters);

// One row of a cluster file (clusters.csv, and the --clusters file of meshlearn-heatmap): a node
// and its cluster, an integer; blanks around either are allowed (a file typed by hand).
struct ClusterRow {
  std::string node;
  int cluster = 0;

  // The columns of a cluster file (base/csv_table.h).
  template <class Columns, class Self>
  static void Describe(Columns& c, Self& r) {
    c.Column("node", r.node, TextCell{.trimmed = true});
    c.Column("cluster", r.cluster, WholeCell{.form = {.padded = true}});
  }
};

// Reads a cluster file: CSV with header `node,cluster` and one row per node (ClusterRow).
// Returns id -> cluster; kNotFound for a missing file, kMalformed (file, line, column) for a
// wrong header, a non-integer cluster, an empty or repeated node id or a row with other than two
// cells.
Result<std::map<std::string, int>> ReadClusterCsv(const std::string& path);

// Writes `clusters` as a cluster file (rows in natural id order). Returns kIoError when the file
// cannot be written.
Status WriteClusterCsv(const std::string& path, const std::map<std::string, int>& clusters);

// Returns `m` with rows reordered so that rows are grouped by cluster (ascending cluster number;
// natural id order within a cluster; ids without a cluster last, in natural order), and columns
// reordered the same way by their own ids. Values move with their ids.
LabeledMatrix OrderByClusters(const LabeledMatrix& m, const std::map<std::string, int>& clusters);

}  // namespace meshlearn::plot
