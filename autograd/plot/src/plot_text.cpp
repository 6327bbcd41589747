#include "plot_text.hpp"

#include <algorithm>

#include "plot_style.hpp"

namespace tinygpt::plot {

FittedText fit_text(std::string_view text, int max_width, int max_scale) {
  for (int scale = max_scale; scale > 1; --scale) {
    if (text_size(text, scale).width <= max_width) return {std::string(text), scale};
  }
  std::string cut(text);
  if (text_size(cut).width <= max_width) return {cut, 1};
  while (!cut.empty() && text_size(cut + "..").width > max_width) cut.pop_back();
  return {cut + "..", 1};
}

Heading fit_heading(std::string_view title, int content_width, int max_scale) {
  // Short titles over a small grid stay readable rather than shrink to the grid's width.
  constexpr int kMinHeadingWidth = 600;
  Heading heading;
  heading.fitted =
      fit_text(title, std::max(content_width, kMinHeadingWidth) - 2 * style::kMargin, max_scale);
  heading.figure_width =
      std::max(content_width,
               text_size(heading.fitted.text, heading.fitted.scale).width + 2 * style::kMargin);
  return heading;
}

void draw_text_centered(Canvas& canvas, int center_x, int y, std::string_view text, Rgb color,
                        int scale) {
  const int width = text_size(text, scale).width;
  const int right_most = canvas.width() - style::kMargin - width;
  const int x = std::max(style::kMargin, std::min(center_x - width / 2, right_most));
  canvas.draw_text(x, y, text, color, scale);
}

void draw_vertical_text_centered(Canvas& canvas, int x, int center_y, std::string_view text,
                                 Rgb color, int scale) {
  canvas.draw_text(x, center_y - text_size(text, scale).width / 2, text, color, scale,
                   TextDirection::vertical);
}

}  // namespace tinygpt::plot
