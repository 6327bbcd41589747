#include "line_chart.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "plot_style.hpp"
#include "plot_text.hpp"

namespace tinygpt::plot {
namespace {

constexpr int kMaxXTicks = 8;
constexpr int kMaxYTicks = 7;
constexpr int kTickLength = 5;
constexpr int kLineThickness = 2;
constexpr int kMarkerSize = 7;
// Beyond this many points markers would merge into a thick smear, so only the line is drawn.
constexpr std::size_t kMaxMarkedPoints = 60;

// [lo, hi] widened by `fraction` of its width on each side, or, when it is a single value, by a
// tenth of that value (at least `min_half_width`) so the point lands mid-axis.
Range padded(double lo, double hi, double fraction, double min_half_width) {
  if (hi > lo) {
    const double pad = (hi - lo) * fraction;
    return {lo - pad, hi + pad};
  }
  const double half = std::max(std::abs(lo) * 0.1, min_half_width);
  return {lo - half, hi + half};
}

// Whether every step is a whole number, as optimiser steps are; the step axis then has no
// fractional ticks (a single point at step 0 gets -1, 0, 1 rather than -1, -0.5, ...).
bool whole_steps(const std::vector<ChartSeries>& series) {
  for (const ChartSeries& s : series) {
    for (const LossPoint& p : s.points) {
      if (p.step != std::floor(p.step)) return false;
    }
  }
  return true;
}

// The plotting rectangle and the data-to-pixel mapping (values grow upwards).
struct PlotArea {
  int x, y, width, height;
  Range xr, yr;

  int px(double step) const {
    const double f = (step - xr.lo) / (xr.hi - xr.lo);
    return x + static_cast<int>(std::lround(f * (width - 1)));
  }
  int py(double value) const {
    const double f = (value - yr.lo) / (yr.hi - yr.lo);
    return y + height - 1 - static_cast<int>(std::lround(f * (height - 1)));
  }
};

void draw_axes(Canvas& canvas, const PlotArea& area, const AxisTicks& x_ticks,
               const AxisTicks& y_ticks) {
  const int cap = text_cap_height(style::kTextScale);
  for (const double v : x_ticks.values) {
    const int x = area.px(v);
    canvas.fill_rect(x, area.y, 1, area.height, style::kGridLine);
    canvas.fill_rect(x, area.y + area.height, 1, kTickLength, style::kInk);
    draw_text_centered(canvas, x, area.y + area.height + kTickLength + style::kGap,
                       format_tick(v, x_ticks.step), style::kSoftInk, style::kTextScale);
  }
  for (const double v : y_ticks.values) {
    const int y = area.py(v);
    canvas.fill_rect(area.x, y, area.width, 1, style::kGridLine);
    canvas.fill_rect(area.x - kTickLength, y, kTickLength, 1, style::kInk);
    const std::string label = format_tick(v, y_ticks.step);
    canvas.draw_text(area.x - kTickLength - style::kGap - text_size(label, style::kTextScale).width,
                     y - cap / 2, label, style::kSoftInk, style::kTextScale);
  }
  canvas.stroke_rect(area.x - 1, area.y - 1, area.width + 2, area.height + 2, style::kInk);
}

void draw_marker(Canvas& canvas, int x, int y, Rgb color) {
  canvas.fill_rect(x - kMarkerSize / 2, y - kMarkerSize / 2, kMarkerSize, kMarkerSize, color);
}

bool has_markers(const std::vector<LossPoint>& series) { return series.size() <= kMaxMarkedPoints; }

void draw_series(Canvas& canvas, const PlotArea& area, const std::vector<LossPoint>& series,
                 Rgb color) {
  const bool marked = has_markers(series);
  const LossPoint* previous = nullptr;
  for (const LossPoint& p : series) {
    if (!std::isfinite(p.loss)) {
      previous = nullptr;
      continue;
    }
    const int x = area.px(p.step), y = area.py(p.loss);
    if (previous != nullptr) {
      canvas.draw_line(area.px(previous->step), area.py(previous->loss), x, y, color,
                       kLineThickness);
    }
    if (marked) draw_marker(canvas, x, y, color);
    previous = &p;
  }
}

// How much of the series' lines lies in the rectangle (x, y, w, h): samples every 2 pixels
// along each segment between finite points, and each point, that fall inside it.
int line_samples_inside(const PlotArea& area, const std::vector<const ChartSeries*>& entries, int x,
                        int y, int w, int h) {
  const auto inside = [&](double px, double py) { return px >= x && px < x + w && py >= y && py < y + h; };
  int count = 0;
  for (const ChartSeries* e : entries) {
    const LossPoint* previous = nullptr;
    for (const LossPoint& p : e->points) {
      if (!std::isfinite(p.loss)) {
        previous = nullptr;
        continue;
      }
      const double x1 = area.px(p.step), y1 = area.py(p.loss);
      count += inside(x1, y1) ? 1 : 0;
      if (previous != nullptr) {
        const double x0 = area.px(previous->step), y0 = area.py(previous->loss);
        const int n = static_cast<int>(std::max(std::abs(x1 - x0), std::abs(y1 - y0)) / 2.0) + 1;
        for (int k = 1; k < n; ++k) {
          const double f = static_cast<double>(k) / n;
          count += inside(x0 + f * (x1 - x0), y0 + f * (y1 - y0)) ? 1 : 0;
        }
      }
      previous = &p;
    }
  }
  return count;
}

// Where a legend box of w x h goes: of the top corners (the `left` one first), then the sides'
// middles, the bottom corners and the centre line, the first place that covers the least of
// the lines, so the key never hides data a free place would have spared.
std::pair<int, int> legend_place(const PlotArea& area, const std::vector<const ChartSeries*>& entries,
                                 int w, int h, int pad, bool left) {
  const int xl = area.x + pad, xr = area.x + area.width - w - pad, xc = area.x + (area.width - w) / 2;
  const int yt = area.y + pad, yb = area.y + area.height - h - pad, ym = area.y + (area.height - h) / 2;
  const int first = left ? xl : xr, second = left ? xr : xl;
  const std::pair<int, int> places[] = {{first, yt}, {second, yt}, {first, ym}, {second, ym},
                                        {first, yb}, {second, yb}, {xc, yt}, {xc, ym}, {xc, yb}};
  std::pair<int, int> best = places[0];
  int least = -1;
  for (const auto& place : places) {
    const int covered = line_samples_inside(area, entries, place.first, place.second, w, h);
    if (least < 0 || covered < least) {
      least = covered;
      best = place;
    }
  }
  return best;
}

// A boxed key inside the plot where it covers the least of the lines (legend_place), naming the
// series that have points.
void draw_legend(Canvas& canvas, const PlotArea& area, const std::vector<ChartSeries>& series,
                 bool left) {
  std::vector<const ChartSeries*> entries;
  for (const ChartSeries& s : series) {
    if (!s.points.empty()) entries.push_back(&s);
  }
  if (entries.empty()) return;
  constexpr int kSample = 28, kPad = 10;
  const int cap = text_cap_height(style::kTextScale);
  const int row = cap + 2 * style::kGap;
  int name_width = 0;
  for (const ChartSeries* e : entries) {
    name_width = std::max(name_width, text_size(e->name, style::kTextScale).width);
  }
  const int box_w = kPad + kSample + style::kGap + name_width + kPad;
  const int box_h = 2 * kPad + static_cast<int>(entries.size()) * row - 2 * style::kGap;
  const auto [box_x, box_y] = legend_place(area, entries, box_w, box_h, kPad, left);
  canvas.fill_rect(box_x, box_y, box_w, box_h, style::kBackground);
  canvas.stroke_rect(box_x, box_y, box_w, box_h, style::kGridLine);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const int top = box_y + kPad + static_cast<int>(i) * row;
    const int mid_y = top + cap / 2;
    canvas.draw_line(box_x + kPad, mid_y, box_x + kPad + kSample, mid_y, entries[i]->color,
                     kLineThickness);
    if (has_markers(entries[i]->points)) {
      draw_marker(canvas, box_x + kPad + kSample / 2, mid_y, entries[i]->color);
    }
    canvas.draw_text(box_x + kPad + kSample + style::kGap, top, entries[i]->name, style::kInk,
                     style::kTextScale);
  }
}

}  // namespace

std::vector<LossPoint> plottable(const std::vector<LossPoint>& series) {
  std::vector<LossPoint> out;
  for (const LossPoint& p : series) {
    if (std::isfinite(p.step)) out.push_back(p);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const LossPoint& a, const LossPoint& b) { return a.step < b.step; });
  return out;
}

ChartAxes axes_for(const std::vector<ChartSeries>& series, const std::string& x_name,
                   const std::string& y_name, const Range* fixed_y) {
  std::optional<Range> step, value;
  for (const ChartSeries& s : series) {
    for (const LossPoint& p : s.points) {
      if (!std::isfinite(p.loss)) continue;
      step = step ? Range{std::min(step->lo, p.step), std::max(step->hi, p.step)}
                  : Range{p.step, p.step};
      value = value ? Range{std::min(value->lo, p.loss), std::max(value->hi, p.loss)}
                    : Range{p.loss, p.loss};
    }
  }
  ChartAxes axes;
  axes.x_name = x_name;
  axes.y_name = y_name;
  if (step) {
    axes.x = padded(step->lo, step->hi, 0.02, 1.0);
    axes.y = padded(value->lo, value->hi, 0.06, 0.05);
  }
  if (fixed_y != nullptr) axes.y = *fixed_y;
  axes.x_ticks = nice_ticks(axes.x.lo, axes.x.hi, kMaxXTicks, whole_steps(series) ? 1.0 : 0.0);
  axes.y_ticks = nice_ticks(axes.y.lo, axes.y.hi, kMaxYTicks);
  return axes;
}

int y_label_width(const AxisTicks& ticks) {
  int width = 0;
  for (const double v : ticks.values) {
    width = std::max(width, text_size(format_tick(v, ticks.step), style::kTextScale).width);
  }
  return width;
}

PixelRect draw_line_chart(Canvas& canvas, const PixelRect& box,
                          const std::vector<ChartSeries>& series, const ChartAxes& axes,
                          int label_width) {
  // Margins fit the text around the plot: tick labels and the y name at the left; tick labels
  // and the x name below; half the last x label at the right. (The x ticks are never empty:
  // with whole steps, the data's own steps are multiples of 1 inside the range.)
  const int line = text_line_height(style::kTextScale);
  const int last_x_label_width =
      text_size(format_tick(axes.x_ticks.values.back(), axes.x_ticks.step), style::kTextScale).width;
  PlotArea area{};
  area.xr = axes.x;
  area.yr = axes.y;
  area.x = box.x + line + 2 * style::kGap + label_width + style::kGap + kTickLength;
  area.y = box.y;
  area.width = box.x + box.width - area.x - last_x_label_width / 2;
  const int x_name_y = box.y + box.height - line;
  area.height = x_name_y - 2 * style::kGap - line - style::kGap - kTickLength - area.y;

  const int center_x = area.x + area.width / 2;
  draw_axes(canvas, area, axes.x_ticks, axes.y_ticks);
  draw_text_centered(canvas, center_x, x_name_y, axes.x_name, style::kSoftInk, style::kTextScale);
  draw_vertical_text_centered(canvas, box.x, area.y + area.height / 2, axes.y_name,
                              style::kSoftInk, style::kTextScale);
  bool any = false;
  for (const ChartSeries& s : series) {
    draw_series(canvas, area, s.points, s.color);
    any = any || !s.points.empty();
  }
  if (!any) {
    draw_text_centered(canvas, center_x, area.y + area.height / 2, "no data", style::kSoftInk,
                       style::kTextScale);
  }
  draw_legend(canvas, area, series, axes.legend_left);
  return {area.x, area.y, area.width, area.height};
}

void save_two_charts(const std::string& path, int width, int height,
                     const std::vector<ChartSeries>& upper, ChartAxes upper_axes,
                     const std::vector<ChartSeries>& lower, ChartAxes lower_axes,
                     const std::string& x_name, const std::string& title) {
  std::vector<ChartSeries> all = upper;
  all.insert(all.end(), lower.begin(), lower.end());
  const ChartAxes shared = axes_for(all, x_name, "");
  for (ChartAxes* a : {&upper_axes, &lower_axes}) {
    a->x = shared.x;
    a->x_ticks = shared.x_ticks;
  }
  const int label_width = std::max(y_label_width(upper_axes.y_ticks), y_label_width(lower_axes.y_ticks));
  const int top = style::kMargin + text_line_height(style::kTextScale) + 2 * style::kGap;  // title
  const int panel = (height - style::kMargin - top - style::kGap) / 2;
  Canvas canvas(width, height, style::kBackground);
  const PixelRect plot = draw_line_chart(canvas, {style::kMargin, top, width - 2 * style::kMargin, panel},
                                         upper, upper_axes, label_width);
  draw_line_chart(canvas, {style::kMargin, top + panel + style::kGap, width - 2 * style::kMargin, panel},
                  lower, lower_axes, label_width);
  const FittedText heading = fit_text(title, width - 2 * style::kMargin, style::kTextScale);
  draw_text_centered(canvas, plot.x + plot.width / 2, style::kMargin, heading.text, style::kInk,
                     heading.scale);
  canvas.save_png(path);
}

}  // namespace tinygpt::plot
