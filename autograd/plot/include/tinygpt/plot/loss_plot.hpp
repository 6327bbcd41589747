#pragma once
// Line charts as PNGs: the training curve (train and validation loss against the step), and any
// named series over one x axis (e.g. held-out exact match against source length, one line per
// model).
#include <cstddef>
#include <string>
#include <vector>

#include "tinygpt/plot/canvas.hpp"

namespace tinygpt::plot {

struct LossPoint {
  double step = 0.0;
  double loss = 0.0;
};

struct NamedSeries {
  std::string name;
  std::vector<LossPoint> points;  // (step, value); non-finite values break the line
};

// The colours of the two curves (matplotlib's first two), for readers of the PNG and for tests.
constexpr Rgb kTrainLossColor{31, 119, 180};
constexpr Rgb kValLossColor{255, 127, 14};

// Both series are drawn as lines in step order, with a marker on each point when a series has few
// enough points to tell them apart; a legend names the series that have points. Axes span the
// data (a little padded) with round tick values; "step" below, "loss" at the left, `title` above.
// Either series may be empty, a single point shows as its marker, and points with a non-finite
// step or loss are left out (they break the line). Throws Error when the PNG cannot be written.
void save_loss_curve(const std::string& path, const std::vector<LossPoint>& train,
                     const std::vector<LossPoint>& val, const std::string& title);

// series[i] in series_color(i), drawn as save_loss_curve draws its two, with `x_name` below and
// `y_name` at the left. Throws ValueError when there are no series, Error when the PNG cannot be
// written.
void save_series_chart(const std::string& path, const std::vector<NamedSeries>& series,
                       const std::string& x_name, const std::string& y_name, const std::string& title);
// matplotlib's ten default colours in order (the loss curves' two first), then again.
Rgb series_color(std::size_t i);

}  // namespace tinygpt::plot
