#include "tinygpt/plot/formation_plot.hpp"

#include <algorithm>

#include "line_chart.hpp"
#include "plot_style.hpp"
#include "plot_text.hpp"

namespace tinygpt::plot {
namespace {

constexpr int kWidth = 960;
constexpr int kHeight = 960;
constexpr int kTextScale = 2;

}  // namespace

Rgb score_color(std::size_t i) {
  // matplotlib's tab10 from its third colour: the first two are the loss curves'.
  static constexpr Rgb palette[] = {{44, 160, 44},   {214, 39, 40},  {148, 103, 189},
                                    {140, 86, 75},   {227, 119, 194}, {127, 127, 127},
                                    {188, 189, 34},  {23, 190, 207}};
  return palette[i % std::size(palette)];
}

void save_formation_plot(const std::string& path, const std::vector<LossPoint>& train,
                         const std::vector<LossPoint>& val, const std::vector<NamedSeries>& scores,
                         const std::string& title) {
  const std::vector<ChartSeries> losses = {{"train", kTrainLossColor, plottable(train)},
                                           {"val", kValLossColor, plottable(val)}};
  std::vector<ChartSeries> score_series;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    score_series.push_back({scores[i].name, score_color(i), plottable(scores[i].points)});
  }
  ChartAxes loss_axes = axes_for(losses, "step", "loss");
  const Range unit{-0.02, 1.02};
  ChartAxes score_axes = axes_for(score_series, "step", "score", &unit);
  // Scores rise and the copy ratio falls late in training: the top-left is where lines are not.
  score_axes.legend_left = true;
  // One step axis for both: the union of their data's.
  std::vector<ChartSeries> all = losses;
  all.insert(all.end(), score_series.begin(), score_series.end());
  const ChartAxes shared = axes_for(all, "step", "");
  for (ChartAxes* a : {&loss_axes, &score_axes}) {
    a->x = shared.x;
    a->x_ticks = shared.x_ticks;
  }
  const int label_width =
      std::max(y_label_width(loss_axes.y_ticks), y_label_width(score_axes.y_ticks));

  const int top = style::kMargin + text_line_height(kTextScale) + 2 * style::kGap;  // title
  const int panel = (kHeight - style::kMargin - top - style::kGap) / 2;
  Canvas canvas(kWidth, kHeight, style::kBackground);
  const PixelRect plot = draw_line_chart(
      canvas, {style::kMargin, top, kWidth - 2 * style::kMargin, panel}, losses, loss_axes,
      label_width);
  draw_line_chart(canvas,
                  {style::kMargin, top + panel + style::kGap, kWidth - 2 * style::kMargin, panel},
                  score_series, score_axes, label_width);
  const FittedText heading = fit_text(title, kWidth - 2 * style::kMargin, kTextScale);
  draw_text_centered(canvas, plot.x + plot.width / 2, style::kMargin, heading.text, style::kInk,
                     heading.scale);
  canvas.save_png(path);
}

}  // namespace tinygpt::plot
