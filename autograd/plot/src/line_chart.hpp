#pragma once
// A line chart drawn into a rectangle of a canvas: round ticks with a light grid, named axes,
// each series as a line (with markers when it has few points) and a legend. The loss curve and
// the head-formation figure are made of it.
#include <string>
#include <vector>

#include "tinygpt/plot/axis_ticks.hpp"
#include "tinygpt/plot/loss_plot.hpp"

namespace tinygpt::plot {

struct ChartSeries {
  std::string name;
  Rgb color;
  std::vector<LossPoint> points;  // (step, value)
};

struct Range {
  double lo = 0.0, hi = 1.0;
};

struct ChartAxes {
  Range x, y;
  AxisTicks x_ticks, y_ticks;
  std::string x_name, y_name;
  bool legend_left = false;  // the legend's corner: top-right (a falling loss leaves it free) or top-left
};

// The series' points in step order without non-finite steps (a non-finite value stays: it
// breaks the line).
std::vector<LossPoint> plottable(const std::vector<LossPoint>& series);
// Axes spanning the data (padded a little) with round ticks, or [0, 1] on both when there is
// none; `y` fixed instead when given (e.g. [0, 1] for scores).
ChartAxes axes_for(const std::vector<ChartSeries>& series, const std::string& x_name,
                   const std::string& y_name, const Range* fixed_y = nullptr);
// The width the y tick labels take; charts stacked one above the other reserve the largest so
// that their plots line up.
int y_label_width(const AxisTicks& ticks);
// Draws the chart into `box` (all of it: y name, tick labels, plot, x tick labels, x name),
// reserving `label_width` (>= y_label_width(axes.y_ticks)) for the y tick labels. Writes "no
// data" when no series has a point. Returns the plot's rectangle.
PixelRect draw_line_chart(Canvas& canvas, const PixelRect& box,
                          const std::vector<ChartSeries>& series, const ChartAxes& axes,
                          int label_width);

// Two charts one above the other in a width x height PNG at `path`, `title` above: both take the
// x range and ticks spanning all their series (named `x_name`), and their plots line up.
void save_two_charts(const std::string& path, int width, int height,
                     const std::vector<ChartSeries>& upper, ChartAxes upper_axes,
                     const std::vector<ChartSeries>& lower, ChartAxes lower_axes,
                     const std::string& x_name, const std::string& title);

}  // namespace tinygpt::plot
