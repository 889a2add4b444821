// The heatmap picture (tools/plot/render.h: RenderHeatmapPng, ComputeHeatmapLayout).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "tools/plot/canvas.h"
#include "tools/plot/render.h"

namespace meshlearn::plot {
namespace {

constexpr double kMaxLabelFont = 12;  // node-id labels, before the heatmap text scale
constexpr int kMaxCell = 40;
constexpr int kMinCell = 3;
constexpr int kMatrixBudget = 1400;  // preferred matrix side in pixels
constexpr int kMatrixLimit = 1800;   // matrix side above which cells go below kMinCell
constexpr double kBarWidth = 18;
constexpr double kTextScaleBase = 700;  // heatmap text grows beyond this matrix side (px)...
constexpr double kMaxTextScale = 1.6;   // ...up to this factor
constexpr double kMinBarHeight = 120;

// Viridis, sampled at 9 evenly spaced stops (matplotlib's _viridis_data at 0, 1/8, ..., 1).
constexpr std::array<Rgb, 9> kViridis = {{
    {0.267, 0.005, 0.329},
    {0.278, 0.175, 0.483},
    {0.230, 0.322, 0.546},
    {0.173, 0.449, 0.558},
    {0.128, 0.567, 0.551},
    {0.154, 0.680, 0.504},
    {0.360, 0.785, 0.388},
    {0.678, 0.864, 0.190},
    {0.993, 0.906, 0.144},
}};
constexpr Rgb kNanGrey = {0.80, 0.80, 0.80};

// The viridis colour at t in [0, 1] (clamped), interpolated linearly between stops.
Rgb Viridis(double t) {
  t = std::clamp(t, 0.0, 1.0) * (kViridis.size() - 1);
  const size_t i = std::min(static_cast<size_t>(t), kViridis.size() - 2);
  const double f = t - static_cast<double>(i);
  const Rgb& a = kViridis[i];
  const Rgb& b = kViridis[i + 1];
  return {a.r + f * (b.r - a.r), a.g + f * (b.g - a.g), a.b + f * (b.b - a.b)};
}

// Maximal runs [begin, end) of consecutive ids that share a cluster; ids without one form none.
struct ClusterRun {
  size_t begin, end;
  int cluster;
};
std::vector<ClusterRun> ClusterRuns(const std::vector<std::string>& ids,
                                    const std::map<std::string, int>& clusters) {
  std::vector<ClusterRun> runs;
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto it = clusters.find(ids[i]);
    if (it == clusters.end()) continue;
    if (!runs.empty() && runs.back().end == i && runs.back().cluster == it->second) {
      runs.back().end = i + 1;
    } else {
      runs.push_back({i, i + 1, it->second});
    }
  }
  return runs;
}

// The step between written id labels: 1, 2, 5, 10, 20, ... so that labels of `font` px do not
// overlap on cells of `cell` px.
size_t LabelStep(int cell, double font) {
  const double needed = font * 1.25 / cell;
  size_t step = 1;
  for (size_t base = 1;; base *= 10) {
    for (size_t m : {1, 2, 5}) {
      step = m * base;
      if (static_cast<double>(step) >= needed) return step;
    }
  }
}

double LabelFont(int cell) { return std::clamp(cell * 0.7, 9.0, kMaxLabelFont); }

// Font sizes and the colour bar width of a heatmap, grown with the matrix so that text keeps its
// size relative to the cells when a large picture is scaled down onto a page.
struct HeatmapText {
  double title = kTitleFont;
  double axis = kAxisTitleFont;
  double tick = kTickFont;
  double bar_width = kBarWidth;

  // Sizes for a matrix `matrix_px` pixels on its longer side.
  static HeatmapText ForMatrix(double matrix_px) {
    const double scale = std::clamp(matrix_px / kTextScaleBase, 1.0, kMaxTextScale);
    return {kTitleFont * scale, kAxisTitleFont * scale, kTickFont * scale, kBarWidth * scale};
  }
};

// Extra metrics of the heatmap layout that only the renderer needs.
struct HeatmapGeometry {
  HeatmapLayout layout;
  HeatmapText text;
  double label_font = 0;
  double bar_x = 0, bar_y = 0, bar_height = 0;
  double value_label_x = 0;  // right edge of the (rotated) value label beside the bar
  double row_title_x = 0;    // left edge of the (rotated) row axis title
};

HeatmapGeometry ComputeGeometry(const LabeledMatrix& m, const HeatmapOptions& options) {
  SurfacePtr surface(nullptr, cairo_surface_destroy);
  ContextPtr scratch = MeasuringContext(surface);
  cairo_t* cr = scratch.get();
  HeatmapGeometry g;
  HeatmapLayout& l = g.layout;
  const int n = static_cast<int>(std::max(m.rows(), m.cols()));
  l.cell = std::clamp(kMatrixBudget / std::max(n, 1), kMinCell, kMaxCell);
  if (n * l.cell > kMatrixLimit) l.cell = std::max(1, kMatrixLimit / n);
  g.label_font = LabelFont(l.cell);
  l.label_step = LabelStep(l.cell, g.label_font);
  g.text = HeatmapText::ForMatrix(static_cast<double>(n) * l.cell);
  // Once thinned, the labels may grow into the room the skipped ones leave.
  g.label_font = std::max(g.label_font, std::min(static_cast<double>(l.cell * l.label_step) * 0.55,
                                                 kMaxLabelFont * g.text.tick / kTickFont));

  SetFont(cr, g.label_font);
  double row_label_w = 0;
  double col_label_h = 0;
  for (size_t r = 0; r < m.rows(); r += l.label_step) {
    row_label_w = std::max(row_label_w, TextWidth(cr, m.row_ids[r]));
  }
  for (size_t c = 0; c < m.cols(); c += l.label_step) {
    col_label_h = std::max(col_label_h, TextWidth(cr, m.col_ids[c]));
  }
  SetFont(cr, g.text.axis);
  const double axis_title_h = LineHeight(cr);
  SetFont(cr, g.text.title, true);
  const double title_h = options.title.empty() ? 0 : LineHeight(cr) + kGap;
  const double title_w = TextWidth(cr, options.title);
  SetFont(cr, g.text.tick);
  const double cluster_h = options.clusters != nullptr ? LineHeight(cr) + 6 : 0;
  const auto [lo, hi] = FiniteRange(m.values);
  const bool any_nan =
      std::any_of(m.values.begin(), m.values.end(), [](double v) { return !std::isfinite(v); });
  double tick_w = any_nan ? TextWidth(cr, "no data") : 0.0;
  for (double v : {lo, hi}) tick_w = std::max(tick_w, TextWidth(cr, TickText(v)));
  if (hi > lo) {
    for (double v : NiceTicks(lo, hi, 5)) tick_w = std::max(tick_w, TextWidth(cr, TickText(v)));
  }

  const double matrix_w = static_cast<double>(m.cols()) * l.cell;
  const double matrix_h = static_cast<double>(m.rows()) * l.cell;
  // Everything is laid out from x = kPad, then shifted right to centre it under a wider title.
  const double content_w = axis_title_h + kGap + row_label_w + 6 + matrix_w + 3 * kGap +
                           g.text.bar_width + 6 + tick_w + kGap + axis_title_h;
  const double shift = std::max(0.0, std::floor((title_w - content_w) / 2));
  g.row_title_x = kPad + shift;
  l.matrix_x = static_cast<int>(std::ceil(g.row_title_x + axis_title_h + kGap + row_label_w + 6));
  l.matrix_y = static_cast<int>(std::ceil(kPad + title_h + cluster_h));
  g.bar_height = std::max(matrix_h, kMinBarHeight);
  g.bar_x = l.matrix_x + matrix_w + 3 * kGap;
  g.bar_y = l.matrix_y;
  g.value_label_x = g.bar_x + g.text.bar_width + 6 + tick_w + kGap + axis_title_h;
  const double right = g.value_label_x + kPad;
  const double bottom = l.matrix_y +
                        std::max(matrix_h + 6 + col_label_h + kGap + axis_title_h,
                                 g.bar_height + 2 * kGap + g.text.tick) +
                        kPad;
  l.width = static_cast<int>(std::ceil(std::max(right, title_w + 2 * kPad)));
  l.height = static_cast<int>(std::ceil(bottom));
  return g;
}

// The colour scale bar right of the matrix: gradient, min and max ticked, nice ticks between
// them where they do not crowd, and a grey "no data" swatch when some cell is NaN.
void DrawColourBar(cairo_t* cr, const HeatmapGeometry& g, double lo, double hi, bool any_nan) {
  const double x = g.bar_x;
  const double y = g.bar_y;
  const double h = g.bar_height;
  cairo_pattern_t* gradient = cairo_pattern_create_linear(0, y + h, 0, y);
  for (size_t i = 0; i < kViridis.size(); ++i) {
    const Rgb& c = kViridis[i];
    cairo_pattern_add_color_stop_rgb(gradient, static_cast<double>(i) / (kViridis.size() - 1), c.r,
                                     c.g, c.b);
  }
  cairo_rectangle(cr, x, y, g.text.bar_width, h);
  cairo_set_source(cr, gradient);
  cairo_fill(cr);
  cairo_pattern_destroy(gradient);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, x + 0.5, y + 0.5, g.text.bar_width - 1, h - 1);
  cairo_stroke(cr);

  SetFont(cr, g.text.tick);
  const double min_gap = LineHeight(cr) * 1.1;
  auto y_of = [&](double v) { return hi > lo ? y + h - (v - lo) / (hi - lo) * h : y + h; };
  auto tick = [&](double v) {
    const double ty = std::round(y_of(v)) + 0.5;
    cairo_move_to(cr, x + g.text.bar_width, ty);
    cairo_line_to(cr, x + g.text.bar_width + 4, ty);
    cairo_stroke(cr);
    DrawText(cr, TickText(v), x + g.text.bar_width + 6, ty, HAlign::kLeft, VAlign::kMiddle);
  };
  if (std::isfinite(lo)) {
    tick(lo);
    if (hi > lo) {
      tick(hi);
      for (double v : NiceTicks(lo, hi, 5)) {
        if (std::abs(y_of(v) - y_of(lo)) >= min_gap && std::abs(y_of(v) - y_of(hi)) >= min_gap) {
          tick(v);
        }
      }
    }
  }
  if (any_nan) {
    const double ny = y + h + 2 * kGap;
    SetColour(cr, kNanGrey);
    cairo_rectangle(cr, x, ny, g.text.bar_width, g.text.tick);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    DrawText(cr, "no data", x + g.text.bar_width + 6, ny + g.text.tick / 2, HAlign::kLeft,
             VAlign::kMiddle);
  }
}

// The matrix's cells, without antialiasing so neighbouring cells meet without seams, coloured
// over [lo, hi]; whether any value is not finite (drawn grey).
bool DrawCells(cairo_t* cr, const LabeledMatrix& m, const HeatmapLayout& l, double lo, double hi) {
  bool any_nan = false;
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
  for (size_t r = 0; r < m.rows(); ++r) {
    for (size_t c = 0; c < m.cols(); ++c) {
      const double v = m.at(r, c);
      if (std::isfinite(v)) {
        SetColour(cr, Viridis(hi > lo ? (v - lo) / (hi - lo) : 0.0));
      } else {
        any_nan = true;
        SetColour(cr, kNanGrey);
      }
      cairo_rectangle(cr, l.matrix_x + static_cast<double>(c) * l.cell,
                      l.matrix_y + static_cast<double>(r) * l.cell, l.cell, l.cell);
      cairo_fill(cr);
    }
  }
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
  return any_nan;
}

// Cluster blocks: separators across the matrix, a frame around each diagonal block, and the
// cluster number above its columns.
void DrawClusterBlocks(cairo_t* cr, const LabeledMatrix& m, const HeatmapGeometry& g,
                       const std::map<std::string, int>& clusters) {
  const HeatmapLayout& l = g.layout;
  const double matrix_w = static_cast<double>(m.cols()) * l.cell;
  const double matrix_h = static_cast<double>(m.rows()) * l.cell;
  const auto row_runs = ClusterRuns(m.row_ids, clusters);
  const auto col_runs = ClusterRuns(m.col_ids, clusters);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_set_line_width(cr, 1);
  for (const auto& run : row_runs) {
    if (run.begin == 0) continue;
    const double y = l.matrix_y + static_cast<double>(run.begin) * l.cell;
    cairo_move_to(cr, l.matrix_x, y);
    cairo_line_to(cr, l.matrix_x + matrix_w, y);
  }
  for (const auto& run : col_runs) {
    if (run.begin == 0) continue;
    const double x = l.matrix_x + static_cast<double>(run.begin) * l.cell;
    cairo_move_to(cr, x, l.matrix_y);
    cairo_line_to(cr, x, l.matrix_y + matrix_h);
  }
  cairo_stroke(cr);
  cairo_set_line_width(cr, 2.5);
  for (const auto& rr : row_runs) {
    for (const auto& cc : col_runs) {
      if (rr.cluster != cc.cluster) continue;
      cairo_rectangle(cr, l.matrix_x + static_cast<double>(cc.begin) * l.cell,
                      l.matrix_y + static_cast<double>(rr.begin) * l.cell,
                      static_cast<double>(cc.end - cc.begin) * l.cell,
                      static_cast<double>(rr.end - rr.begin) * l.cell);
    }
  }
  cairo_set_source_rgb(cr, 0.85, 0.10, 0.10);
  cairo_stroke(cr);
  SetFont(cr, g.text.tick);
  cairo_set_source_rgb(cr, 0, 0, 0);
  for (const auto& cc : col_runs) {
    const double x0 = l.matrix_x + static_cast<double>(cc.begin) * l.cell;
    const double x1 = l.matrix_x + static_cast<double>(cc.end) * l.cell;
    std::string text = std::string("cluster ").append(std::to_string(cc.cluster));
    if (TextWidth(cr, text) > x1 - x0) text = std::string("c").append(std::to_string(cc.cluster));
    if (TextWidth(cr, text) > x1 - x0) text = std::to_string(cc.cluster);
    if (TextWidth(cr, text) > x1 - x0 + 4) continue;
    DrawText(cr, text, (x0 + x1) / 2, l.matrix_y - 4, HAlign::kCenter, VAlign::kBottom);
  }
}

}  // namespace

HeatmapLayout ComputeHeatmapLayout(const LabeledMatrix& m, const HeatmapOptions& options) {
  return ComputeGeometry(m, options).layout;
}

Status RenderHeatmapPng(const LabeledMatrix& m, const std::string& png_path,
                        const HeatmapOptions& options) {
  if (m.rows() == 0 || m.cols() == 0) {
    return Status::InvalidArgument(png_path + ": cannot draw an empty matrix");
  }
  if (m.values.size() != m.rows() * m.cols()) {
    return Status::InvalidArgument(png_path + ": matrix has " + std::to_string(m.values.size()) +
                                   " values for " + std::to_string(m.rows()) + " x " +
                                   std::to_string(m.cols()) + " ids");
  }
  const HeatmapGeometry g = ComputeGeometry(m, options);
  const HeatmapLayout& l = g.layout;
  SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, l.width, l.height),
                     cairo_surface_destroy);
  ContextPtr context(cairo_create(surface.get()), cairo_destroy);
  cairo_t* cr = context.get();
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);

  const auto [lo, hi] = FiniteRange(m.values);
  const bool any_nan = DrawCells(cr, m, l, lo, hi);
  const double matrix_w = static_cast<double>(m.cols()) * l.cell;
  const double matrix_h = static_cast<double>(m.rows()) * l.cell;
  if (options.clusters != nullptr) DrawClusterBlocks(cr, m, g, *options.clusters);

  // Matrix frame, id labels with ticks, axis titles.
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, l.matrix_x - 0.5, l.matrix_y - 0.5, matrix_w + 1, matrix_h + 1);
  cairo_stroke(cr);
  SetFont(cr, g.label_font);
  for (size_t r = 0; r < m.rows(); r += l.label_step) {
    const double y = l.CellCenterY(r) + (l.cell % 2 == 0 ? 0.0 : 0.5);
    cairo_move_to(cr, l.matrix_x - 1, y);
    cairo_line_to(cr, l.matrix_x - 4, y);
    cairo_stroke(cr);
    DrawText(cr, m.row_ids[r], l.matrix_x - 6, y, HAlign::kRight, VAlign::kMiddle);
  }
  double col_label_h = 0;
  for (size_t c = 0; c < m.cols(); c += l.label_step) {
    const double x = l.CellCenterX(c) + (l.cell % 2 == 0 ? 0.0 : 0.5);
    cairo_move_to(cr, x, l.matrix_y + matrix_h + 1);
    cairo_line_to(cr, x, l.matrix_y + matrix_h + 4);
    cairo_stroke(cr);
    DrawText(cr, m.col_ids[c], x, l.matrix_y + matrix_h + 6, HAlign::kRight, VAlign::kMiddle,
             -M_PI / 2);
    col_label_h = std::max(col_label_h, TextWidth(cr, m.col_ids[c]));
  }
  SetFont(cr, g.text.axis);
  DrawText(cr, options.col_title, l.matrix_x + matrix_w / 2,
           l.matrix_y + matrix_h + 6 + col_label_h + kGap, HAlign::kCenter, VAlign::kTop);
  DrawText(cr, options.row_title, g.row_title_x, l.matrix_y + matrix_h / 2, HAlign::kCenter,
           VAlign::kTop, -M_PI / 2);
  DrawText(cr, options.value_label, g.value_label_x, g.bar_y + g.bar_height / 2, HAlign::kCenter,
           VAlign::kBottom, -M_PI / 2);
  if (!options.title.empty()) {
    SetFont(cr, g.text.title, true);
    DrawText(cr, options.title, l.width / 2.0, kPad, HAlign::kCenter, VAlign::kTop);
  }
  DrawColourBar(cr, g, lo, hi, any_nan);
  return WritePng(surface.get(), cr, png_path);
}

}  // namespace meshlearn::plot
