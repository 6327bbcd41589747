#pragma once
// Text placement helpers for the plots, on top of Canvas::draw_text.
#include <string>
#include <string_view>

#include "tinygpt/plot/canvas.hpp"

namespace tinygpt::plot {

// Text shrunk to fit a width: the largest scale up to `max_scale` at which it fits, and at scale 1
// the text cut short with ".." when even that is too wide.
struct FittedText {
  std::string text;
  int scale = 1;
};
FittedText fit_text(std::string_view text, int max_width, int max_scale);

// A figure's title: fitted to the figure's content width, or to kMinHeadingWidth when that is
// wider, in which case the figure widens to hold it.
struct Heading {
  FittedText fitted;
  int figure_width = 0;
};
Heading fit_heading(std::string_view title, int content_width, int max_scale);

// Horizontal text whose box is centred on x (y is the top of the box), moved sideways as far as
// needed to keep it inside the figure's margins.
void draw_text_centered(Canvas& canvas, int center_x, int y, std::string_view text, Rgb color,
                        int scale);

// Vertical text (reading upwards, as an axis name) whose box is centred on center_y; x is the left
// of the box.
void draw_vertical_text_centered(Canvas& canvas, int x, int center_y, std::string_view text,
                                 Rgb color, int scale);

}  // namespace tinygpt::plot
