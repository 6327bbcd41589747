#include "tinygpt/plot/attribution_plot.hpp"

#include <algorithm>
#include <cmath>

#include "plot_style.hpp"
#include "plot_text.hpp"
#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/plot/colormap.hpp"
#include "tinygpt/plot/token_label.hpp"

namespace tinygpt::plot {
namespace {

constexpr int kAttributionGridTarget = 1100;  // pixels the token cells span in all, about
constexpr int kMaxCellWidth = 40;
constexpr int kRowHeight = 36;

}  // namespace

void save_attribution_plot(const std::string& path, const std::vector<std::vector<double>>& rows,
                           const std::vector<std::string>& row_names,
                           const std::vector<std::string>& labels, const std::string& title) {
  const auto n = static_cast<int>(labels.size());
  if (rows.empty() || n == 0 || n > kMaxAttributionTokens) {
    throw ValueError(Operation("save_attribution_plot"), fmt::format("needs at least one row and 1 to {} "
                                 "tokens, got {} rows of {}",
                                 kMaxAttributionTokens, rows.size(), n));
  }
  if (row_names.size() != rows.size()) {
    throw ShapeError(Operation("save_attribution_plot"), fmt::format("{} row names for {} rows",
                                 row_names.size(), rows.size()));
  }
  for (const auto& row : rows) {
    if (row.size() != labels.size()) {
      throw ShapeError(Operation("save_attribution_plot"), fmt::format("a row of {} values for {} tokens",
                                   row.size(), labels.size()));
    }
  }
  const int cell = std::clamp(kAttributionGridTarget / n, 1, kMaxCellWidth);
  const int line = text_line_height(style::kTextScale);
  int name_width = 0;
  for (const auto& name : row_names) name_width = std::max(name_width, text_size(name, style::kTextScale).width);
  // Token labels above the cells: horizontal at scale 2 when a cell holds a character, scale 1
  // when it holds a small one, none below that.
  const int label_scale = cell >= 14 ? 2 : (cell >= 7 ? 1 : 0);
  const int grid_x = style::kMargin + name_width + style::kGap;
  const int grid_w = cell * n;
  const int content_width = grid_x + grid_w + style::kMargin;
  const Heading heading = fit_heading(title, content_width, style::kTextScale);
  const int width = std::max(content_width, heading.figure_width);
  const int note_y = style::kMargin + line + style::kGap;
  const int labels_y = note_y + line + 2 * style::kGap;
  const int grid_y = labels_y + (label_scale > 0 ? text_line_height(label_scale) + style::kGap : 0);
  const int height = grid_y + kRowHeight * static_cast<int>(rows.size()) + style::kMargin;

  Canvas canvas(width, height, style::kBackground);
  const int center = grid_x + grid_w / 2;
  draw_text_centered(canvas, center, style::kMargin, heading.fitted.text, style::kInk,
                     heading.fitted.scale);
  draw_text_centered(canvas, center, note_y, "each row coloured from 0 to its own largest value",
                     style::kSoftInk, style::kTextScale);
  if (label_scale > 0) {
    for (int j = 0; j < n; ++j) {
      const std::string shown = visible_token(labels[static_cast<size_t>(j)]);
      draw_text_centered(canvas, grid_x + j * cell + cell / 2, labels_y, shown.substr(0, 2),
                         style::kInk, label_scale);
    }
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    const int y = grid_y + static_cast<int>(r) * kRowHeight;
    canvas.draw_text(style::kMargin + name_width - text_size(row_names[r], style::kTextScale).width,
                     y + (kRowHeight - text_cap_height(style::kTextScale)) / 2, row_names[r], style::kInk,
                     style::kTextScale);
    double top = 0.0;
    for (double v : rows[r]) {
      if (std::isfinite(v)) top = std::max(top, v);
    }
    for (int j = 0; j < n; ++j) {
      const double v = rows[r][static_cast<size_t>(j)];
      const Rgb color = std::isfinite(v) ? viridis(top > 0 ? static_cast<float>(v / top) : 0.0f)
                                         : style::kInvalid;
      canvas.fill_rect(grid_x + j * cell, y + 2, cell, kRowHeight - 4, color);
    }
  }
  canvas.save_png(path);
}

}  // namespace tinygpt::plot
