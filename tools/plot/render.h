#pragma once
// PNG pictures of a run (DESIGN.md "Outputs"): heatmap.png from a labeled matrix and curves.png
// from per-method series, drawn with cairo.
//
// Specification.
// - Heatmap cells are coloured by a perceptual sequential colour map (viridis: dark purple for
//   the smallest value, yellow for the largest) over [min, max] of the finite values; NaN cells
//   are light grey. Rationale: viridis stays ordered in lightness, also in greyscale print and
//   for colour-blind readers; grey is outside the map, so "unknown" never reads as a value.
// - The cell size shrinks with the matrix (40 px down to 3 px, smaller only beyond ~600 rows) so
//   the image stays below about 2000 px; node-id labels are thinned to every k-th id when the
//   cells are smaller than the text, and the other text grows (up to 1.6x) with the matrix.
//   Rationale: 2..200+ nodes must give a readable figure, also when scaled down onto a page.
// - With clusters, a border is drawn around every diagonal block (rows and columns of one
//   cluster) and its cluster number is written above it; the matrix is drawn in the given order,
//   so order it with OrderByClusters first.
// - A picture that cannot be written returns kIoError naming the path; bad arguments return
//   kInvalidArgument. Nothing here aborts.

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "tools/plot/matrix_csv.h"

namespace meshlearn::plot {

// What RenderHeatmapPng draws besides the cells.
struct HeatmapOptions {
  std::string title;                          // drawn above the matrix; none when empty
  std::string value_label = "times sampled";  // beside the colour scale bar
  std::string row_title = "sampler i";        // left axis title
  std::string col_title = "sampled peer j";   // bottom axis title
  // When set, cluster block borders and cluster labels are drawn (id -> cluster).
  const std::map<std::string, int>* clusters = nullptr;
};

// Where RenderHeatmapPng puts things, in pixels from the image's top-left corner.
struct HeatmapLayout {
  int width = 0;          // image width
  int height = 0;         // image height
  int cell = 0;           // side of one square cell
  int matrix_x = 0;       // left edge of column 0
  int matrix_y = 0;       // top edge of row 0
  size_t label_step = 1;  // every label_step-th row/column id is written

  // Centre of cell (r, c), for reading a rendered picture back.
  int CellCenterX(size_t c) const { return matrix_x + static_cast<int>(c) * cell + cell / 2; }
  int CellCenterY(size_t r) const { return matrix_y + static_cast<int>(r) * cell + cell / 2; }
};

// The layout RenderHeatmapPng uses for `m` and `options` (deterministic: same input, same
// layout). Requires a matrix with at least one row and column.
HeatmapLayout ComputeHeatmapLayout(const LabeledMatrix& m, const HeatmapOptions& options);

// Renders `m` as a PNG heatmap at `png_path` (replacing it): cells, row and column id labels,
// axis titles, a colour scale bar with its range ticked, the title, and cluster blocks when
// options.clusters is set. Returns kInvalidArgument for an empty matrix or a value count that
// does not match the ids, kIoError when the PNG cannot be written.
Status RenderHeatmapPng(const LabeledMatrix& m, const std::string& png_path,
                        const HeatmapOptions& options);

// One line of a chart: points (x[k], y[k]); a non-finite y breaks the line.
struct Series {
  std::string name;
  std::vector<double> x, y;
};

// Titles and scale of a chart.
struct ChartOptions {
  std::string title;
  std::string x_label = "round";
  std::string y_label;
  bool log_y = false;  // logarithmic y axis; points with y <= 0 are then skipped
};

// Renders a line chart of `series` at `png_path` (replacing it): one coloured line per series
// (markers when a series has few points), a legend with the series names, axes with ticks and
// labels, light grid lines and the title. Returns kInvalidArgument when there is no series, a
// series has x and y of different lengths, or no point is drawable (none finite, or none > 0 with
// log_y); kIoError when the PNG cannot be written.
Status RenderCurvesPng(const std::vector<Series>& series, const std::string& png_path,
                       const ChartOptions& options);

}  // namespace meshlearn::plot
