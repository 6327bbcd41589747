#include "tinygpt/plot/loss_plot.hpp"

#include "line_chart.hpp"
#include "plot_style.hpp"
#include "plot_text.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/plot/formation_plot.hpp"

namespace tinygpt::plot {
namespace {

constexpr int kLossWidth = 960;
constexpr int kLossHeight = 600;

void save_one_chart(const std::string& path, const std::vector<ChartSeries>& series,
                    const ChartAxes& axes, const std::string& title) {
  const int top = style::kMargin + text_line_height(style::kTextScale) + 2 * style::kGap;  // title
  const PixelRect box{style::kMargin, top, kLossWidth - 2 * style::kMargin,
                      kLossHeight - style::kMargin - top};
  Canvas canvas(kLossWidth, kLossHeight, style::kBackground);
  const PixelRect plot = draw_line_chart(canvas, box, series, axes, y_label_width(axes.y_ticks));
  const FittedText heading = fit_text(title, kLossWidth - 2 * style::kMargin, style::kTextScale);
  draw_text_centered(canvas, plot.x + plot.width / 2, style::kMargin, heading.text, style::kInk,
                     heading.scale);
  canvas.save_png(path);
}

}  // namespace

void save_loss_curve(const std::string& path, const std::vector<LossPoint>& train,
                     const std::vector<LossPoint>& val, const std::string& title) {
  const std::vector<ChartSeries> series = {{"train", kTrainLossColor, plottable(train)},
                                           {"val", kValLossColor, plottable(val)}};
  save_one_chart(path, series, axes_for(series, "step", "loss"), title);
}

Rgb series_color(std::size_t i) {
  const std::size_t k = i % 10;
  if (k == 0) return kTrainLossColor;
  return k == 1 ? kValLossColor : score_color(k - 2);
}

void save_series_chart(const std::string& path, const std::vector<NamedSeries>& series,
                       const std::string& x_name, const std::string& y_name, const std::string& title) {
  if (series.empty()) throw ValueError(Operation("save_series_chart"), "no series to draw");
  std::vector<ChartSeries> lines;
  for (std::size_t i = 0; i < series.size(); ++i) {
    lines.push_back({series[i].name, series_color(i), plottable(series[i].points)});
  }
  save_one_chart(path, lines, axes_for(lines, x_name, y_name), title);
}

}  // namespace tinygpt::plot
