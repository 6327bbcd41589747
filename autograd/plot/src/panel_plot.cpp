#include "tinygpt/plot/panel_plot.hpp"

#include "line_chart.hpp"

namespace tinygpt::plot {
namespace {

constexpr int kPanelsWidth = 960;
constexpr int kPanelsHeight = 900;

std::vector<ChartSeries> chart_series(const ChartPanel& panel) {
  std::vector<ChartSeries> out;
  for (std::size_t i = 0; i < panel.series.size(); ++i) {
    out.push_back({panel.series[i].name, score_color(i), plottable(panel.series[i].points)});
  }
  return out;
}

}  // namespace

void save_stacked_charts(const std::string& path, const ChartPanel& top, const ChartPanel& bottom,
                         const std::string& x_name, const std::string& title) {
  const std::vector<ChartSeries> upper = chart_series(top), lower = chart_series(bottom);
  ChartAxes upper_axes = axes_for(upper, x_name, top.y_name);
  ChartAxes lower_axes = axes_for(lower, x_name, bottom.y_name);
  upper_axes.legend_left = lower_axes.legend_left = true;  // both rise as heads go: top-left is free
  save_two_charts(path, kPanelsWidth, kPanelsHeight, upper, upper_axes, lower, lower_axes, x_name, title);
}

}  // namespace tinygpt::plot
