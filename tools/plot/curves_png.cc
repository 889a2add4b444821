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

}  // namespace

Status RenderCurvesPng(const std::vector<Series>& series, const std::string& png_path,
                       const ChartOptions& options) {
  if (series.empty()) return Status::InvalidArgument(png_path + ": no series to draw");
  auto drawable = [&](double x, double y) {
    return std::isfinite(x) && std::isfinite(y) && (!options.log_y || y > 0);
  };
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (const Series& s : series) {
    if (s.x.size() != s.y.size()) {
      return Status::InvalidArgument(png_path + ": series '" + s.name + "' has " +
                                     std::to_string(s.x.size()) + " x values but " +
                                     std::to_string(s.y.size()) + " y values");
    }
    for (size_t k = 0; k < s.x.size(); ++k) {
      if (!drawable(s.x[k], s.y[k])) continue;
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
  const Axis x_axis = LinearAxis(x_lo, x_hi, 8);
  const Axis y_axis = options.log_y ? LogAxis(y_lo, y_hi) : LinearAxis(y_lo, y_hi, 6);

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
  for (double v : y_axis.ticks) y_tick_w = std::max(y_tick_w, TextWidth(cr, TickText(v)));
  SetFont(cr, kLegendFont);
  double legend_w = 0;
  for (const Series& s : series) legend_w = std::max(legend_w, TextWidth(cr, s.name));
  legend_w += kLegendSwatch + 3 * kGap;
  const double legend_row = LineHeight(cr) + 6;
  SetFont(cr, kAxisTitleFont);
  const double axis_title_h = LineHeight(cr);
  SetFont(cr, kTitleFont, true);
  const double title_h = options.title.empty() ? 0 : LineHeight(cr) + kGap;
  const double left = kPad + (options.y_label.empty() ? 0 : axis_title_h + kGap) + y_tick_w + 8;
  const double right = kWidth - kPad - legend_w - 2 * kGap;
  const double top = kPad + title_h + kGap;
  const double bottom = kHeight - kPad - axis_title_h - kGap - tick_h - 8;
  auto px = [&](double x) { return left + x_axis.Fraction(x) * (right - left); };
  auto py = [&](double y) { return bottom - y_axis.Fraction(y) * (bottom - top); };

  // Grid, frame, ticks and their labels.
  cairo_set_line_width(cr, 1);
  cairo_set_source_rgb(cr, 0.90, 0.90, 0.90);
  for (double v : x_axis.ticks) {
    cairo_move_to(cr, std::round(px(v)) + 0.5, top);
    cairo_line_to(cr, std::round(px(v)) + 0.5, bottom);
  }
  for (double v : y_axis.ticks) {
    cairo_move_to(cr, left, std::round(py(v)) + 0.5);
    cairo_line_to(cr, right, std::round(py(v)) + 0.5);
  }
  cairo_stroke(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, std::round(left) + 0.5, std::round(top) + 0.5, std::round(right - left),
                  std::round(bottom - top));
  cairo_stroke(cr);
  SetFont(cr, kTickFont);
  for (double v : x_axis.ticks) {
    const double x = std::round(px(v)) + 0.5;
    cairo_move_to(cr, x, bottom);
    cairo_line_to(cr, x, bottom + 4);
    cairo_stroke(cr);
    DrawText(cr, TickText(v), x, bottom + 6, HAlign::kCenter, VAlign::kTop);
  }
  for (double v : y_axis.ticks) {
    const double y = std::round(py(v)) + 0.5;
    cairo_move_to(cr, left - 4, y);
    cairo_line_to(cr, left, y);
    cairo_stroke(cr);
    DrawText(cr, TickText(v), left - 6, y, HAlign::kRight, VAlign::kMiddle);
  }
  SetFont(cr, kAxisTitleFont);
  DrawText(cr, options.x_label, (left + right) / 2, kHeight - kPad, HAlign::kCenter,
           VAlign::kBottom);
  if (!options.y_label.empty()) {
    DrawText(cr, options.y_label, kPad, (top + bottom) / 2, HAlign::kCenter, VAlign::kTop,
             -M_PI / 2);
  }
  if (!options.title.empty()) {
    SetFont(cr, kTitleFont, true);
    DrawText(cr, options.title, kWidth / 2.0, kPad, HAlign::kCenter, VAlign::kTop);
  }

  // Lines (clipped to the plot area), markers for short series, and the legend.
  const double legend_x = right + 2 * kGap;
  double legend_y = top;
  for (size_t i = 0; i < series.size(); ++i) {
    const Series& s = series[i];
    const LineStyle style = SeriesStyle(i);
    size_t points = 0;
    for (size_t k = 0; k < s.x.size(); ++k) points += drawable(s.x[k], s.y[k]) ? 1 : 0;
    const bool markers = points <= kMaxMarkedPoints;
    cairo_save(cr);
    cairo_rectangle(cr, left, top, right - left, bottom - top);
    cairo_clip(cr);
    ApplyStyle(cr, style);
    bool pen_down = false;
    for (size_t k = 0; k < s.x.size(); ++k) {
      if (!drawable(s.x[k], s.y[k])) {
        pen_down = false;
        continue;
      }
      if (pen_down) {
        cairo_line_to(cr, px(s.x[k]), py(s.y[k]));
      } else {
        cairo_move_to(cr, px(s.x[k]), py(s.y[k]));
      }
      pen_down = true;
    }
    cairo_stroke(cr);
    if (markers) {
      for (size_t k = 0; k < s.x.size(); ++k) {
        if (!drawable(s.x[k], s.y[k])) continue;
        cairo_new_sub_path(cr);
        cairo_arc(cr, px(s.x[k]), py(s.y[k]), 3, 0, 2 * M_PI);
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
    legend_y += legend_row;
  }
  return WritePng(surface.get(), cr, png_path);
}

}  // namespace meshlearn::plot
