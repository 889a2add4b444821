// meshlearn-heatmap: merges a run's node folders into heatmap.csv and renders matrix CSVs
// (communication counts, scores, EMD matrix) as PNG heatmaps (DESIGN.md "Outputs").
//
// A build whose tree was not clean writes into a checkout's results/ only with --allow-dirty
// (tools/layout/kept_results.h). Exit codes: 0 done, 2 bad input, an output that may not or cannot
// be written (one line on stderr naming the file, the line and what is allowed).

#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "process/build_identity.h"
#include "tools/cli/cli_exit.h"
#include "tools/layout/kept_results.h"
#include "tools/layout/run_layout.h"
#include "tools/plot/matrix_csv.h"
#include "tools/plot/render.h"

namespace {

namespace node = meshlearn::node;
using meshlearn::Result;
using meshlearn::Status;
namespace launch = meshlearn::launch;
namespace plot = meshlearn::plot;
namespace tools = meshlearn::tools;

int Fail(const Status& status) {
  std::cerr << "meshlearn-heatmap: " << status.message() << "\n";
  return tools::kExitBadInput;
}

// Reads the cluster file at `path`, when one is given.
Result<std::optional<std::map<std::string, int>>> LoadClusters(const std::string& path) {
  if (path.empty()) return std::optional<std::map<std::string, int>>();
  Result<std::map<std::string, int>> clusters = plot::ReadClusterCsv(path);
  if (!clusters.ok()) return clusters.status();
  return std::optional(std::move(clusters).value());
}

// Notes on stderr how many of `ids` the cluster file at `path` (read as `clusters`) leaves out.
void NoteIdsWithoutCluster(const std::string& path,
                           const std::optional<std::map<std::string, int>>& clusters,
                           const std::set<std::string>& ids) {
  if (!clusters) return;
  size_t without = 0;
  for (const auto& id : ids) without += clusters->count(id) == 0 ? 1 : 0;
  if (without > 0) {
    std::cerr << "meshlearn-heatmap: note: " << without << " of " << ids.size()
              << " ids have no cluster in " << path << "; they are drawn last\n";
  }
}

// The node ids of `m`'s rows and columns (a grouped matrix's: its groups' members).
std::set<std::string> NodeIds(const plot::LabeledMatrix& m) {
  std::set<std::string> ids;
  for (const auto& members : m.row_members) ids.insert(members.begin(), members.end());
  if (m.row_members.empty()) {
    ids.insert(m.row_ids.begin(), m.row_ids.end());
    ids.insert(m.col_ids.begin(), m.col_ids.end());
  }
  return ids;
}

// Requires an N x N matrix whose rows and columns name the same ids.
Status CheckSquare(const std::string& path, const plot::LabeledMatrix& m) {
  if (m.rows() != m.cols()) {
    return Status::InvalidArgument(path + ": " + std::to_string(m.rows()) + " rows but " +
                                   std::to_string(m.cols()) +
                                   " columns; a heatmap needs an N x N matrix whose first row "
                                   "and first column list the same ids");
  }
  const std::set<std::string> rows(m.row_ids.begin(), m.row_ids.end());
  const std::set<std::string> cols(m.col_ids.begin(), m.col_ids.end());
  if (rows != cols) {
    return Status::InvalidArgument(path +
                                   ": the row ids and the column ids differ; a heatmap "
                                   "needs the same ids as rows and as columns");
  }
  return Status::Ok();
}

int RunMerge(const std::string& run_dir, const std::string& clusters_path, std::string out_csv,
             std::string out_png, const std::string& title, size_t max_side, bool allow_dirty) {
  if (out_csv.empty()) out_csv = launch::PathIn(run_dir, launch::kHeatmapCsvFile);
  if (out_png.empty()) out_png = launch::PathIn(run_dir, launch::kHeatmapPngFile);
  for (const auto& [option, out] : {std::pair{"--out", out_csv}, std::pair{"--png", out_png}}) {
    Status may_write = launch::CheckWriteIntoResults(option, out, node::ThisBuild(), allow_dirty);
    if (!may_write.ok()) return Fail(may_write);
  }
  Result<std::optional<std::map<std::string, int>>> clusters = LoadClusters(clusters_path);
  if (!clusters.ok()) return Fail(clusters.status());
  std::vector<std::string> order;  // the cluster file's ids in cluster order
  if (clusters->has_value()) {
    for (const auto& [id, cluster] : **clusters) order.push_back(id);
    order = plot::ClusterOrderedIds(order, **clusters);
  }
  Result<plot::LabeledMatrix> merged = plot::MergeCommCounts(run_dir, order, max_side);
  if (!merged.ok()) return Fail(merged.status());
  const plot::LabeledMatrix& m = *merged;
  NoteIdsWithoutCluster(clusters_path, *clusters, NodeIds(m));
  const std::string what = m.row_members.empty() ? "node " : "group ";
  for (size_t r = 0; r < m.rows(); ++r) {
    bool unknown = true;
    for (size_t c = 0; c < m.cols() && unknown; ++c) unknown = std::isnan(m.at(r, c));
    if (unknown) {
      std::cerr << "meshlearn-heatmap: note: " << what << m.row_ids[r]
                << " has no comm.csv; its row is drawn grey (unknown)\n";
    }
  }
  Status status = plot::WriteMatrixCsv(out_csv, m);
  if (!status.ok()) return Fail(status);
  plot::HeatmapOptions options;
  const std::string grouped =
      m.row_members.empty() ? ""
                            : ", mean over groups of " + std::to_string(m.row_members[0].size());
  options.title = title.empty() ? "How often node i sampled node j (" +
                                      std::to_string(NodeIds(m).size()) + " nodes" + grouped + ")"
                                : title;
  std::map<std::string, int> row_clusters;
  if (clusters->has_value()) {
    row_clusters = plot::RowClusters(m, **clusters);
    options.clusters = &row_clusters;
  }
  status = plot::RenderHeatmapPng(m, out_png, options);
  if (!status.ok()) return Fail(status);
  std::cout << "heatmap.csv: " << out_csv << "\nheatmap.png: " << out_png << "\n";
  return tools::kExitOk;
}

int RunRender(const std::string& matrix_path, const std::string& out_png,
              const std::string& clusters_path, const std::string& title, const std::string& label,
              const std::string& row_title, const std::string& col_title, bool allow_dirty) {
  Status may_write = launch::CheckWriteIntoResults("OUT", out_png, node::ThisBuild(), allow_dirty);
  if (!may_write.ok()) return Fail(may_write);
  Result<plot::LabeledMatrix> read = plot::ReadMatrixCsv(matrix_path);
  if (!read.ok()) return Fail(read.status());
  Status status = CheckSquare(matrix_path, *read);
  if (!status.ok()) return Fail(status);
  auto clusters = LoadClusters(clusters_path);
  if (!clusters.ok()) return Fail(clusters.status());
  NoteIdsWithoutCluster(clusters_path, *clusters, NodeIds(*read));
  const plot::LabeledMatrix m =
      clusters->has_value() ? plot::OrderByClusters(*read, **clusters) : std::move(read).value();
  plot::HeatmapOptions options;
  options.title = title.empty() ? std::filesystem::path(matrix_path).filename().string() : title;
  options.value_label = label;
  options.row_title = row_title;
  options.col_title = col_title;
  if (clusters->has_value()) options.clusters = &**clusters;
  status = plot::RenderHeatmapPng(m, out_png, options);
  if (!status.ok()) return Fail(status);
  std::cout << "heatmap.png: " << out_png << "\n";
  return tools::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "meshlearn-heatmap: turns a run's communication counts and other N x N matrices into CSV "
      "and PNG heatmaps. Exit code 2 on bad input."};
  app.require_subcommand(1);

  std::string run_dir, clusters_path, out_csv, out_png, title;
  CLI::App* merge = app.add_subcommand(
      "merge", "Merge RUN_DIR/node-<id>/comm.csv into heatmap.csv and render heatmap.png");
  merge->add_option("RUN_DIR", run_dir, "Run folder holding node-<id>/ folders")->required();
  merge->add_option("--clusters", clusters_path,
                    "Cluster file (CSV `node,cluster`): order rows and columns by cluster and "
                    "draw the cluster blocks");
  merge->add_option("--out", out_csv, "Merged matrix CSV (default RUN_DIR/heatmap.csv)");
  merge->add_option("--png", out_png, "Picture (default RUN_DIR/heatmap.png)");
  merge->add_option("--title", title, "Picture title");
  size_t max_side = plot::kHeatmapMaxSide;
  merge
      ->add_option("--max-side", max_side,
                   "Most rows and columns: above it, runs of consecutive nodes (in cluster order "
                   "with --clusters) become one row and column, holding the mean count per pair; "
                   "0 keeps one row per node")
      ->capture_default_str();

  std::string matrix_path, render_png, label = "value", row_title = "row node i",
                                       col_title = "column node j";
  CLI::App* render =
      app.add_subcommand("render", "Render an N x N matrix CSV (counts, scores, EMD) as a PNG");
  render
      ->add_option("MATRIX", matrix_path,
                   "Matrix CSV: header \"\",<ids...>, then one row per id: id,<values...>; an "
                   "empty cell is unknown")
      ->required();
  render->add_option("OUT", render_png, "PNG file to write")->required();
  render->add_option("--clusters", clusters_path, "Cluster file (CSV `node,cluster`)");
  render->add_option("--title", title, "Picture title (default: the CSV file name)");
  render->add_option("--label", label, "What the values are, written beside the colour scale")
      ->capture_default_str();
  render->add_option("--row-title", row_title, "Title of the row axis")->capture_default_str();
  render->add_option("--col-title", col_title, "Title of the column axis")->capture_default_str();

  bool allow_dirty = false;
  tools::AddAllowDirtyFlag(*merge, allow_dirty);
  tools::AddAllowDirtyFlag(*render, allow_dirty);
  app.set_version_flag("--version", node::VersionText("meshlearn-heatmap"));

  if (std::optional<int> exit = tools::ParseCommandLine(app, argc, argv)) return *exit;
  if (merge->parsed()) {
    return RunMerge(run_dir, clusters_path, out_csv, out_png, title, max_side, allow_dirty);
  }
  return RunRender(matrix_path, render_png, clusters_path, title, label, row_title, col_title,
                   allow_dirty);
}
