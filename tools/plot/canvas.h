#pragma once
// What the pictures of tools/plot/render.h share (internal to meshlearn_plot): the cairo handles,
// the fonts and margins, text drawing, tick values, the chart axes and writing a PNG. The
// heatmap is drawn in heatmap_png.cc, the curves in curves_png.cc.

#include <cairo.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace meshlearn::plot {

using SurfacePtr = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;
using ContextPtr = std::unique_ptr<cairo_t, decltype(&cairo_destroy)>;

inline constexpr double kPad = 16;  // outer margin
inline constexpr double kGap = 8;   // between neighbouring elements
inline constexpr double kTitleFont = 16;
inline constexpr double kAxisTitleFont = 13;
inline constexpr double kTickFont = 11;

// A colour, each channel in [0, 1].
struct Rgb {
  double r, g, b;
};

// Sets the source colour of `cr`.
void SetColour(cairo_t* cr, const Rgb& c);
// Selects the sans-serif font of `size` px, bold or not.
void SetFont(cairo_t* cr, double size, bool bold = false);
// Advance width of `text` in the current font.
double TextWidth(cairo_t* cr, const std::string& text);
// Height (ascent + descent) of a line in the current font.
double LineHeight(cairo_t* cr);

enum class HAlign { kLeft, kCenter, kRight };
enum class VAlign { kTop, kMiddle, kBottom };

// Draws `text` in the current font and colour, anchored at (x, y) as aligned, rotated by `angle`
// radians about the anchor.
void DrawText(cairo_t* cr, const std::string& text, double x, double y, HAlign h, VAlign v,
              double angle = 0);
// A short label for a tick value: whole numbers in full, others with up to 4 significant digits.
std::string TickText(double value);
// "Nice" tick values (1, 2 or 5 times a power of ten apart) covering [lo, hi], about `target`
// of them.
std::vector<double> NiceTicks(double lo, double hi, int target);
// A scratch context for measuring text before the image size is known.
ContextPtr MeasuringContext(SurfacePtr& surface);
// Writes `surface` to `path` as PNG.
Status WritePng(cairo_surface_t* surface, cairo_t* cr, const std::string& path);
// Smallest and largest finite value; {NaN, NaN} when none is finite.
std::pair<double, double> FiniteRange(const std::vector<double>& values);

// A chart axis: the drawn range, its ticks, and whether it is logarithmic.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;

  // Where `v` falls on the axis, 0 at lo and 1 at hi.
  double Fraction(double v) const {
    if (log) return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    return (v - lo) / (hi - lo);
  }
};

// A linear axis from nice ticks that enclose [lo, hi].
Axis LinearAxis(double lo, double hi, int target);
// A log10 axis enclosing [lo, hi] (both > 0) whose ends are 1, 2 or 5 times a power of ten;
// ticks at both ends and every power of ten, and at 2x and 5x when the axis spans at most two
// decades.
Axis LogAxis(double lo, double hi);

}  // namespace meshlearn::plot
