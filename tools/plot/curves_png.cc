// The curves picture (tools/plot/render.h: RenderCurvesPng).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "tools/plot/canvas.h"
#include "tools/plot/render.h"

namespace meshlearn::plot {
namespace {

constexpr double kLegendFont = 12;
constexpr double kLegendSwatch = 28;     // length of the line sample in the legend
constexpr size_t kMaxMarkedPoints = 40;  // series with more points are drawn without markers

// Okabe-Ito colours, distinguishable with the common colour-vision deficiencies.
constexpr std::array<Rgb, 7> kSeriesColours = {{
    {0.000, 0.447, 0.698},  // blue
    {0.835, 0.369, 0.000},  // vermillion
    {0.000, 0.620, 0.451},  // bluish green
    {0.800, 0.475, 0.655},  // reddish purple
    {0.902, 0.624, 0.000},  // orange
    {0.337, 0.706, 0.914},  // sky blue
    {0.000, 0.000, 0.000},  // black
}};

// Colour and dash of series number `i`: the palette first with solid lines, then again dashed.
struct LineStyle {
  Rgb colour;
  bool dashed;
};
LineStyle SeriesStyle(size_t i) {
  return {kSeriesColours[i % kSeriesColours.size()], (i / kSeriesColours.size()) % 2 == 1};
}
void ApplyStyle(cairo_t* cr, const LineStyle& style) {
  SetColour(cr, style.colour);
  cairo_set_line_width(cr, 2);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  const double dash[] = {7, 4};
  cairo_set_dash(cr, style.dashed ? dash : nullptr, style.dashed ? 2 : 0, 0);
}

// The plot area of a picture, in pixels, and its axes.
struct PlotArea {
  Axis x_axis, y_axis;
  double left = 0, right = 0, top = 0, bottom = 0;
  // The pixel column of data value `x`, and the pixel row of `y`.
  double px(double x) const { return left + x_axis.Fraction(x) * (right - left); }
  double py(double y) const { return bottom - y_axis.Fraction(y) * (bottom - top); }
};

// Whether point (x, y) can be drawn on the chart's axes.
bool Drawable(double x, double y, const ChartOptions& options) {
  return std::isfinite(x) && std::isfinite(y) && (!options.log_y || y > 0);
}

// The bounds of the drawable points of `series`: {x_lo, x_hi, y_lo, y_hi}; kInvalidArgument for
// a series whose x and y differ in length, or when no point is drawable.
Result<std::array<double, 4>> DataBounds(const std::vector<Series>& series,
                                         const std::string& png_path, const ChartOptions& options) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (const Series& s : series) {
    if (s.x.size() != s.y.size()) {
      return Status::InvalidArgument(png_path + ": series '" + s.name + "' has " +
                                     std::to_string(s.x.size()) + " x values but " +
                                     std::to_string(s.y.size()) + " y values");
    }
    for (size_t k = 0; k < s.x.size(); ++k) {
      if (!Drawable(s.x[k], s.y[k], options)) continue;
      x_lo = std::min(x_lo, s.x[k]);
      x_hi = std::max(x_hi, s.x[k]);
      y_lo = std::min(y_lo, s.y[k]);
      y_hi = std::max(y_hi, s.y[k]);
    }
  }
  if (x_lo > x_hi) {
    return Status::InvalidArgument(png_path + ": no drawable point (finite" +
                                   std::string(options.log_y ? " and > 0 on a log axis" : "") +
                                   ")");
  }
  return std::array<double, 4>{x_lo, x_hi, y_lo, y_hi};
}

// Grid, frame, ticks and their labels, the axis titles and the title.
void DrawFrame(cairo_t* cr, const PlotArea& a, const ChartOptions& options, int width, int height) {
  cairo_set_line_width(cr, 1);
  cairo_set_source_rgb(cr, 0.90, 0.90, 0.90);
  for (double v : a.x_axis.ticks) {
    cairo_move_to(cr, std::round(a.px(v)) + 0.5, a.top);
    cairo_line_to(cr, std::round(a.px(v)) + 0.5, a.bottom);
  }
  for (double v : a.y_axis.ticks) {
    cairo_move_to(cr, a.left, std::round(a.py(v)) + 0.5);
    cairo_line_to(cr, a.right, std::round(a.py(v)) + 0.5);
  }
  cairo_stroke(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, std::round(a.left) + 0.5, std::round(a.top) + 0.5,
                  std::round(a.right - a.left), std::round(a.bottom - a.top));
  cairo_stroke(cr);
  SetFont(cr, kTickFont);
  for (double v : a.x_axis.ticks) {
    const double x = std::round(a.px(v)) + 0.5;
    cairo_move_to(cr, x, a.bottom);
    cairo_line_to(cr, x, a.bottom + 4);
    cairo_stroke(cr);
    DrawText(cr, TickText(v), x, a.bottom + 6, HAlign::kCenter, VAlign::kTop);
  }
  for (double v : a.y_axis.ticks) {
    const double y = std::round(a.py(v)) + 0.5;
    cairo_move_to(cr, a.left - 4, y);
    cairo_line_to(cr, a.left, y);
    cairo_stroke(cr);
    DrawText(cr, TickText(v), a.left - 6, y, HAlign::kRight, VAlign::kMiddle);
  }
  SetFont(cr, kAxisTitleFont);
  DrawText(cr, options.x_label, (a.left + a.right) / 2, height - kPad, HAlign::kCenter,
           VAlign::kBottom);
  if (!options.y_label.empty()) {
    DrawText(cr, options.y_label, kPad, (a.top + a.bottom) / 2, HAlign::kCenter, VAlign::kTop,
             -M_PI / 2);
  }
  if (!options.title.empty()) {
    SetFont(cr, kTitleFont, true);
    DrawText(cr, options.title, width / 2.0, kPad, HAlign::kCenter, VAlign::kTop);
  }
}

// Series `i`'s line (clipped to the plot area), its markers when it is short, and its legend row
// at (`legend_x`, `legend_y`), `legend_row` high.
void DrawSeries(cairo_t* cr, const PlotArea& a, const Series& s, size_t i,
                const ChartOptions& options, double legend_x, double legend_y, double legend_row) {
  const LineStyle style = SeriesStyle(i);
  size_t points = 0;
  for (size_t k = 0; k < s.x.size(); ++k) points += Drawable(s.x[k], s.y[k], options) ? 1 : 0;
  const bool markers = points <= kMaxMarkedPoints;
  cairo_save(cr);
  cairo_rectangle(cr, a.left, a.top, a.right - a.left, a.bottom - a.top);
  cairo_clip(cr);
  ApplyStyle(cr, style);
  bool pen_down = false;
  for (size_t k = 0; k < s.x.size(); ++k) {
    if (!Drawable(s.x[k], s.y[k], options)) {
      pen_down = false;
      continue;
    }
    if (pen_down) {
      cairo_line_to(cr, a.px(s.x[k]), a.py(s.y[k]));
    } else {
      cairo_move_to(cr, a.px(s.x[k]), a.py(s.y[k]));
    }
    pen_down = true;
  }
  cairo_stroke(cr);
  if (markers) {
    for (size_t k = 0; k < s.x.size(); ++k) {
      if (!Drawable(s.x[k], s.y[k], options)) continue;
      cairo_new_sub_path(cr);
      cairo_arc(cr, a.px(s.x[k]), a.py(s.y[k]), 3, 0, 2 * M_PI);
    }
    cairo_fill(cr);
  }
  cairo_restore(cr);
  ApplyStyle(cr, style);
  cairo_move_to(cr, legend_x, legend_y + legend_row / 2);
  cairo_line_to(cr, legend_x + kLegendSwatch, legend_y + legend_row / 2);
  cairo_stroke(cr);
  if (markers) {
    cairo_arc(cr, legend_x + kLegendSwatch / 2, legend_y + legend_row / 2, 3, 0, 2 * M_PI);
    cairo_fill(cr);
  }
  cairo_set_dash(cr, nullptr, 0, 0);
  cairo_set_source_rgb(cr, 0, 0, 0);
  SetFont(cr, kLegendFont);
  DrawText(cr, s.name, legend_x + kLegendSwatch + kGap, legend_y + legend_row / 2, HAlign::kLeft,
           VAlign::kMiddle);
}

}  // namespace

Status RenderCurvesPng(const std::vector<Series>& series, const std::string& png_path,
                       const ChartOptions& options) {
  if (series.empty()) return Status::InvalidArgument(png_path + ": no series to draw");
  auto bounds = DataBounds(series, png_path, options);
  if (!bounds.ok()) return bounds.status();
  const auto [x_lo, x_hi, y_lo, y_hi] = *bounds;
  PlotArea area;
  area.x_axis = LinearAxis(x_lo, x_hi, 8);
  area.y_axis = options.log_y ? LogAxis(y_lo, y_hi) : LinearAxis(y_lo, y_hi, 6);

  constexpr int kWidth = 960;
  constexpr int kHeight = 600;
  SurfacePtr surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, kWidth, kHeight),
                     cairo_surface_destroy);
  ContextPtr context(cairo_create(surface.get()), cairo_destroy);
  cairo_t* cr = context.get();
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);

  // Margins from the text they hold.
  SetFont(cr, kTickFont);
  const double tick_h = LineHeight(cr);
  double y_tick_w = 0;
  for (double v : area.y_axis.ticks) y_tick_w = std::max(y_tick_w, TextWidth(cr, TickText(v)));
  SetFont(cr, kLegendFont);
  double legend_w = 0;
  for (const Series& s : series) legend_w = std::max(legend_w, TextWidth(cr, s.name));
  legend_w += kLegendSwatch + 3 * kGap;
  const double legend_row = LineHeight(cr) + 6;
  SetFont(cr, kAxisTitleFont);
  const double axis_title_h = LineHeight(cr);
  SetFont(cr, kTitleFont, true);
  const double title_h = options.title.empty() ? 0 : LineHeight(cr) + kGap;
  area.left = kPad + (options.y_label.empty() ? 0 : axis_title_h + kGap) + y_tick_w + 8;
  area.right = kWidth - kPad - legend_w - 2 * kGap;
  area.top = kPad + title_h + kGap;
  area.bottom = kHeight - kPad - axis_title_h - kGap - tick_h - 8;

  DrawFrame(cr, area, options, kWidth, kHeight);
  const double legend_x = area.right + 2 * kGap;
  double legend_y = area.top;
  for (size_t i = 0; i < series.size(); ++i) {
    DrawSeries(cr, area, series[i], i, options, legend_x, legend_y, legend_row);
    legend_y += legend_row;
  }
  return WritePng(surface.get(), cr, png_path);
}

}  // namespace meshlearn::plot
