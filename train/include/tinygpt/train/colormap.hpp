#pragma once
// The colour map of every attention plot: viridis, perceptually uniform and readable in grey,
// dark purple at 0 rising to bright yellow at 1.
#include "tinygpt/train/canvas.hpp"

namespace tinygpt::train {

// The viridis colour of t, clamped to [0, 1]; NaN maps to 0.
Rgb viridis(float t);

}  // namespace tinygpt::train
