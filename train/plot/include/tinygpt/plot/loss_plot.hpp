#pragma once
// The training curve as a PNG: train and validation loss against the step.
#include <string>
#include <vector>

#include "tinygpt/plot/canvas.hpp"

namespace tinygpt::plot {

struct LossPoint {
  double step = 0.0;
  double loss = 0.0;
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

}  // namespace tinygpt::plot
