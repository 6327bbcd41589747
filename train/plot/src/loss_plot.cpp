#include "tinygpt/plot/loss_plot.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "plot_style.hpp"
#include "plot_text.hpp"
#include "tinygpt/plot/axis_ticks.hpp"

namespace tinygpt::plot {
namespace {

constexpr int kWidth = 960;
constexpr int kHeight = 600;
constexpr int kTextScale = 2;
constexpr int kMaxXTicks = 8;
constexpr int kMaxYTicks = 7;
constexpr int kTickLength = 5;
constexpr int kLineThickness = 2;
constexpr int kMarkerSize = 7;
// Beyond this many points markers would merge into a thick smear, so only the line is drawn.
constexpr std::size_t kMaxMarkedPoints = 60;

struct Range {
  double lo = 0.0, hi = 1.0;
};

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

// The finite points of a series in step order; a non-finite loss stays as a gap in the line.
std::vector<LossPoint> plottable(const std::vector<LossPoint>& series) {
  std::vector<LossPoint> out;
  for (const LossPoint& p : series) {
    if (std::isfinite(p.step)) out.push_back(p);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const LossPoint& a, const LossPoint& b) { return a.step < b.step; });
  return out;
}

struct Bounds {
  Range step, loss;
};

// The ranges the axes show: the data's (padded), or [0, 1] on both axes when there is none.
Bounds axis_bounds(const std::vector<LossPoint>& train, const std::vector<LossPoint>& val) {
  std::optional<Range> step, loss;
  for (const auto* series : {&train, &val}) {
    for (const LossPoint& p : *series) {
      if (!std::isfinite(p.loss)) continue;
      step = step ? Range{std::min(step->lo, p.step), std::max(step->hi, p.step)}
                  : Range{p.step, p.step};
      loss = loss ? Range{std::min(loss->lo, p.loss), std::max(loss->hi, p.loss)}
                  : Range{p.loss, p.loss};
    }
  }
  if (!step) return {};
  return {padded(step->lo, step->hi, 0.02, 1.0), padded(loss->lo, loss->hi, 0.06, 0.05)};
}

// Whether every step is a whole number, as optimiser steps are; the step axis then has no
// fractional ticks (a single point at step 0 gets -1, 0, 1 rather than -1, -0.5, ...).
bool whole_steps(const std::vector<LossPoint>& train, const std::vector<LossPoint>& val) {
  const auto whole = [](const LossPoint& p) { return p.step == std::floor(p.step); };
  return std::all_of(train.begin(), train.end(), whole) &&
         std::all_of(val.begin(), val.end(), whole);
}

// The plotting rectangle and the data-to-pixel mapping (loss grows upwards).
struct PlotArea {
  int x, y, width, height;
  Bounds bounds;

  int px(double step) const {
    const double f = (step - bounds.step.lo) / (bounds.step.hi - bounds.step.lo);
    return x + static_cast<int>(std::lround(f * (width - 1)));
  }
  int py(double loss) const {
    const double f = (loss - bounds.loss.lo) / (bounds.loss.hi - bounds.loss.lo);
    return y + height - 1 - static_cast<int>(std::lround(f * (height - 1)));
  }
};

void draw_axes(Canvas& canvas, const PlotArea& area, const AxisTicks& x_ticks,
               const AxisTicks& y_ticks) {
  const int cap = text_cap_height(kTextScale);
  for (const double v : x_ticks.values) {
    const int x = area.px(v);
    canvas.fill_rect(x, area.y, 1, area.height, style::kGridLine);
    canvas.fill_rect(x, area.y + area.height, 1, kTickLength, style::kInk);
    draw_text_centered(canvas, x, area.y + area.height + kTickLength + style::kGap,
                       format_tick(v, x_ticks.step), style::kSoftInk, kTextScale);
  }
  for (const double v : y_ticks.values) {
    const int y = area.py(v);
    canvas.fill_rect(area.x, y, area.width, 1, style::kGridLine);
    canvas.fill_rect(area.x - kTickLength, y, kTickLength, 1, style::kInk);
    const std::string label = format_tick(v, y_ticks.step);
    canvas.draw_text(area.x - kTickLength - style::kGap - text_size(label, kTextScale).width,
                     y - cap / 2, label, style::kSoftInk, kTextScale);
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

struct LegendEntry {
  const char* name;
  Rgb color;
  bool marked;  // whether the series' points carry markers, as the sample then does
};

// A boxed key in the top-right corner of the plot, where a falling loss curve leaves room.
void draw_legend(Canvas& canvas, const PlotArea& area, const std::vector<LegendEntry>& entries) {
  if (entries.empty()) return;
  constexpr int kSample = 28, kPad = 10;
  const int cap = text_cap_height(kTextScale);
  const int row = cap + 2 * style::kGap;
  int name_width = 0;
  for (const LegendEntry& e : entries) {
    name_width = std::max(name_width, text_size(e.name, kTextScale).width);
  }
  const int box_w = kPad + kSample + style::kGap + name_width + kPad;
  const int box_h = 2 * kPad + static_cast<int>(entries.size()) * row - 2 * style::kGap;
  const int box_x = area.x + area.width - box_w - kPad, box_y = area.y + kPad;
  canvas.fill_rect(box_x, box_y, box_w, box_h, style::kBackground);
  canvas.stroke_rect(box_x, box_y, box_w, box_h, style::kGridLine);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const int top = box_y + kPad + static_cast<int>(i) * row;
    const int mid_y = top + cap / 2;
    canvas.draw_line(box_x + kPad, mid_y, box_x + kPad + kSample, mid_y, entries[i].color,
                     kLineThickness);
    if (entries[i].marked) draw_marker(canvas, box_x + kPad + kSample / 2, mid_y, entries[i].color);
    canvas.draw_text(box_x + kPad + kSample + style::kGap, top, entries[i].name, style::kInk,
                     kTextScale);
  }
}

}  // namespace

void save_loss_curve(const std::string& path, const std::vector<LossPoint>& train,
                     const std::vector<LossPoint>& val, const std::string& title) {
  const std::vector<LossPoint> train_points = plottable(train), val_points = plottable(val);
  const Bounds bounds = axis_bounds(train_points, val_points);
  const AxisTicks x_ticks = nice_ticks(bounds.step.lo, bounds.step.hi, kMaxXTicks,
                                       whole_steps(train_points, val_points) ? 1.0 : 0.0);
  const AxisTicks y_ticks = nice_ticks(bounds.loss.lo, bounds.loss.hi, kMaxYTicks);

  // Margins fit the text around the plot: title above; tick labels and "loss" at the left; tick
  // labels and "step" below; half the last step label at the right.
  const int line = text_line_height(kTextScale);
  int y_label_width = 0;
  for (const double v : y_ticks.values) {
    y_label_width =
        std::max(y_label_width, text_size(format_tick(v, y_ticks.step), kTextScale).width);
  }
  // (Never empty: with whole steps, the data's own steps are multiples of 1 inside the range.)
  const int last_x_label_width =
      text_size(format_tick(x_ticks.values.back(), x_ticks.step), kTextScale).width;
  PlotArea area{};
  area.bounds = bounds;
  area.x = style::kMargin + line + 2 * style::kGap + y_label_width + style::kGap + kTickLength;
  area.y = style::kMargin + line + 2 * style::kGap;
  area.width = kWidth - area.x - style::kMargin - last_x_label_width / 2;
  const int x_name_y = kHeight - style::kMargin - line;
  area.height = x_name_y - 2 * style::kGap - line - style::kGap - kTickLength - area.y;

  Canvas canvas(kWidth, kHeight, style::kBackground);
  const int plot_center_x = area.x + area.width / 2;
  const FittedText heading = fit_text(title, kWidth - 2 * style::kMargin, kTextScale);
  draw_text_centered(canvas, plot_center_x, style::kMargin, heading.text, style::kInk,
                     heading.scale);
  draw_axes(canvas, area, x_ticks, y_ticks);
  draw_text_centered(canvas, plot_center_x, x_name_y, "step", style::kSoftInk, kTextScale);
  draw_vertical_text_centered(canvas, style::kMargin, area.y + area.height / 2, "loss",
                              style::kSoftInk, kTextScale);

  std::vector<LegendEntry> legend;
  if (!train_points.empty()) {
    legend.push_back({"train", kTrainLossColor, has_markers(train_points)});
  }
  if (!val_points.empty()) legend.push_back({"val", kValLossColor, has_markers(val_points)});
  if (legend.empty()) {
    draw_text_centered(canvas, plot_center_x, area.y + area.height / 2, "no data", style::kSoftInk,
                       kTextScale);
  }
  draw_series(canvas, area, train_points, kTrainLossColor);
  draw_series(canvas, area, val_points, kValLossColor);
  draw_legend(canvas, area, legend);
  canvas.save_png(path);
}

}  // namespace tinygpt::plot
