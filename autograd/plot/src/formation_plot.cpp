#include "tinygpt/plot/formation_plot.hpp"

#include <algorithm>

#include "line_chart.hpp"

namespace tinygpt::plot {
namespace {

constexpr int kFormationWidth = 960;
constexpr int kFormationHeight = 960;

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
  save_two_charts(path, kFormationWidth, kFormationHeight, losses, loss_axes, score_series, score_axes, "step", title);
}

}  // namespace tinygpt::plot
