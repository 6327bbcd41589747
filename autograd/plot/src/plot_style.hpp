#pragma once
// Colours and spacing shared by the PNG plots, so they look like one family.
#include "tinygpt/plot/canvas.hpp"

namespace tinygpt::plot::style {

constexpr Rgb kBackground{255, 255, 255};
constexpr Rgb kInk{33, 33, 33};          // titles, axes, frames
constexpr Rgb kSoftInk{90, 90, 90};      // tick labels, axis names
constexpr Rgb kGridLine{232, 232, 232};  // loss plot grid
constexpr Rgb kInvalid{220, 30, 30};     // a NaN or infinite attention weight: a bug to see
constexpr int kMargin = 20;              // around the whole figure
constexpr int kGap = 8;                  // between a label and what it labels
constexpr int kTextScale = 2;            // titles, axis names, colour bars

}  // namespace tinygpt::plot::style
