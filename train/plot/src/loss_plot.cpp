#include "tinygpt/plot/loss_plot.hpp"

#include "line_chart.hpp"
#include "plot_style.hpp"
#include "plot_text.hpp"

namespace tinygpt::plot {
namespace {

constexpr int kWidth = 960;
constexpr int kHeight = 600;
constexpr int kTextScale = 2;

}  // namespace

void save_loss_curve(const std::string& path, const std::vector<LossPoint>& train,
                     const std::vector<LossPoint>& val, const std::string& title) {
  const std::vector<ChartSeries> series = {{"train", kTrainLossColor, plottable(train)},
                                           {"val", kValLossColor, plottable(val)}};
  const ChartAxes axes = axes_for(series, "step", "loss");
  const int top = style::kMargin + text_line_height(kTextScale) + 2 * style::kGap;  // title
  const PixelRect box{style::kMargin, top, kWidth - 2 * style::kMargin,
                      kHeight - style::kMargin - top};
  Canvas canvas(kWidth, kHeight, style::kBackground);
  const PixelRect plot = draw_line_chart(canvas, box, series, axes, y_label_width(axes.y_ticks));
  const FittedText heading = fit_text(title, kWidth - 2 * style::kMargin, kTextScale);
  draw_text_centered(canvas, plot.x + plot.width / 2, style::kMargin, heading.text, style::kInk,
                     heading.scale);
  canvas.save_png(path);
}

}  // namespace tinygpt::plot
