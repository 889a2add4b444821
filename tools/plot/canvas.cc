#include "tools/plot/canvas.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace meshlearn::plot {
namespace {

constexpr const char* kFontFamily = "sans-serif";

}  // namespace

void SetColour(cairo_t* cr, const Rgb& c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }

void SetFont(cairo_t* cr, double size, bool bold) {
  cairo_select_font_face(cr, kFontFamily, CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

// Advance width of `text` in the current font.
double TextWidth(cairo_t* cr, const std::string& text) {
  cairo_text_extents_t extents;
  cairo_text_extents(cr, text.c_str(), &extents);
  return extents.x_advance;
}

// Height (ascent + descent) of a line in the current font.
double LineHeight(cairo_t* cr) {
  cairo_font_extents_t extents;
  cairo_font_extents(cr, &extents);
  return extents.ascent + extents.descent;
}

// Draws `text` in the current font and colour, anchored at (x, y) as aligned, rotated by `angle`
// radians about the anchor.
void DrawText(cairo_t* cr, const std::string& text, double x, double y, HAlign h, VAlign v,
              double angle) {
  cairo_font_extents_t font;
  cairo_font_extents(cr, &font);
  const double w = TextWidth(cr, text);
  const double dx = h == HAlign::kLeft ? 0 : h == HAlign::kCenter ? -w / 2 : -w;
  const double dy = v == VAlign::kTop      ? font.ascent
                    : v == VAlign::kMiddle ? (font.ascent - font.descent) / 2
                                           : -font.descent;
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_rotate(cr, angle);
  cairo_move_to(cr, dx, dy);
  cairo_show_text(cr, text.c_str());
  cairo_restore(cr);
}

// A short label for a tick value: whole numbers in full, others with up to 4 significant digits.
std::string TickText(double value) {
  if (std::abs(value) < 1e-12) value = 0;
  char buffer[32];
  // Whole numbers below a million in full ("20000", not "2e+04"): counts read best that way.
  const bool whole = std::abs(value) < 1e6 && value == std::round(value);
  std::snprintf(buffer, sizeof(buffer), whole ? "%.0f" : "%.4g", value);
  return buffer;
}

// "Nice" tick values (1, 2 or 5 times a power of ten apart) covering [lo, hi], about `target`
// of them.
std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / std::max(1, target);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power * 10;
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * power) {
      step = m * power;
      break;
    }
  }
  std::vector<double> ticks;
  // Integer multiples of the step, so that ticks do not drift by accumulated rounding.
  const auto first = static_cast<int64_t>(std::ceil(lo / step - 1e-9));
  const auto last = static_cast<int64_t>(std::floor(hi / step + 1e-9));
  for (int64_t k = first; k <= last; ++k) ticks.push_back(static_cast<double>(k) * step);
  return ticks;
}

// A scratch context for measuring text before the image size is known.
ContextPtr MeasuringContext(SurfacePtr& surface) {
  surface.reset(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1));
  return ContextPtr(cairo_create(surface.get()), cairo_destroy);
}

// Writes `surface` to `path` as PNG.
Status WritePng(cairo_surface_t* surface, cairo_t* cr, const std::string& path) {
  if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
    return Status::Internal(path + ": drawing failed: " + cairo_status_to_string(cairo_status(cr)));
  }
  cairo_surface_flush(surface);
  const cairo_status_t status = cairo_surface_write_to_png(surface, path.c_str());
  if (status != CAIRO_STATUS_SUCCESS) {
    return Status::IoError(path + ": cannot write PNG: " + cairo_status_to_string(status));
  }
  return Status::Ok();
}

// Smallest and largest finite value; {NaN, NaN} when none is finite.
std::pair<double, double> FiniteRange(const std::vector<double>& values) {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (lo > hi) return {std::nan(""), std::nan("")};
  return {lo, hi};
}

// A linear axis from nice ticks that enclose [lo, hi].
Axis LinearAxis(double lo, double hi, int target) {
  if (!(hi > lo)) {
    const double half = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= half;
    hi += half;
  }
  std::vector<double> ticks = NiceTicks(lo, hi, target);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : hi - lo;
  Axis axis;
  axis.lo = ticks.front() > lo + 1e-9 * step ? ticks.front() - step : ticks.front();
  axis.hi = ticks.back() < hi - 1e-9 * step ? ticks.back() + step : ticks.back();
  if (axis.lo < ticks.front()) ticks.insert(ticks.begin(), axis.lo);
  if (axis.hi > ticks.back()) ticks.push_back(axis.hi);
  axis.ticks = std::move(ticks);
  return axis;
}

// A log10 axis enclosing [lo, hi] (both > 0) whose ends are 1, 2 or 5 times a power of ten;
// ticks at both ends and every power of ten, and at 2x and 5x when the axis spans at most two
// decades.
Axis LogAxis(double lo, double hi) {
  auto steps = [](int first, int last) {
    std::vector<double> v;
    for (int e = first; e <= last; ++e) {
      for (double m : {1.0, 2.0, 5.0}) v.push_back(m * std::pow(10.0, e));
    }
    return v;
  };
  const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  const std::vector<double> candidates = steps(first, last + 1);
  Axis axis;
  axis.log = true;
  axis.lo = candidates.front();
  for (double v : candidates) {
    if (v <= lo * (1 + 1e-9)) axis.lo = v;
  }
  axis.hi = candidates.back();
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    if (*it >= hi * (1 - 1e-9) && *it > axis.lo) axis.hi = *it;
  }
  const bool dense = std::log10(axis.hi / axis.lo) <= 2 + 1e-9;
  for (double v : candidates) {
    const bool decade = std::abs(std::log10(v) - std::round(std::log10(v))) < 1e-9;
    const bool end = v == axis.lo || v == axis.hi;
    if ((decade || dense || end) && v >= axis.lo * (1 - 1e-9) && v <= axis.hi * (1 + 1e-9)) {
      axis.ticks.push_back(v);
    }
  }
  return axis;
}

}  // namespace meshlearn::plot
