#pragma once
// The colour map of every attention plot: viridis, perceptually uniform and readable in grey,
// dark purple at 0 rising to bright yellow at 1.
#include "tinygpt/plot/canvas.hpp"

namespace tinygpt::plot {

// The viridis colour of t, clamped to [0, 1]; NaN maps to 0.
Rgb viridis(float t);

}  // namespace tinygpt::plot
