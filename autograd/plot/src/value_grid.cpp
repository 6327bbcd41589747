#include "tinygpt/plot/value_grid.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "plot_style.hpp"
#include "plot_text.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/plot/colormap.hpp"

namespace tinygpt::plot {
namespace {

constexpr int kMaxValueCell = 44;
constexpr int kPanelTarget = 520;  // pixels a panel's cells span, about

void check_shapes(const std::vector<ValuePanel>& panels, size_t rows, size_t columns, double low,
                  double high) {
  if (panels.empty() || rows == 0 || columns == 0) {
    throw ValueError(fmt::format("save_value_grid: needs panels, rows and columns, got {} panels "
                                 "of {} x {}", panels.size(), rows, columns));
  }
  for (const ValuePanel& panel : panels) {
    bool ok = panel.rows.size() == rows;
    for (const auto& row : panel.rows) ok = ok && row.size() == columns;
    if (!ok) {
      throw ShapeError(fmt::format("save_value_grid: panel '{}' is not {} x {} as its labels",
                                   panel.title, rows, columns));
    }
  }
  if (!(low < high)) throw ValueError(fmt::format("save_value_grid: scale [{}, {}] is empty", low, high));
}

Rgb ink_on(Rgb cell) { return cell.r + cell.g + cell.b > 3 * 140 ? style::kInk : style::kBackground; }

}  // namespace

void save_value_grid(const std::string& path, const std::vector<ValuePanel>& panels,
                     const std::vector<std::string>& row_labels,
                     const std::vector<std::string>& column_labels, const std::string& title,
                     double low, double high) {
  check_shapes(panels, row_labels.size(), column_labels.size(), low, high);
  const auto rows = static_cast<int>(row_labels.size());
  const auto cols = static_cast<int>(column_labels.size());
  const int cell = std::clamp(kPanelTarget / std::max(rows, cols), 4, kMaxValueCell);
  const int line = text_line_height(style::kTextScale);
  int label_width = 0;
  for (const auto& label : row_labels) label_width = std::max(label_width, text_size(label, 1).width);
  const int grid_x = style::kMargin + label_width + style::kGap;
  const int panel_w = cell * cols + 3 * style::kGap;
  const int content_width = grid_x + panel_w * static_cast<int>(panels.size()) + style::kMargin;
  const Heading heading = fit_heading(title, content_width, style::kTextScale);
  const int width = std::max(content_width, heading.figure_width);
  const int panel_title_y = style::kMargin + line + style::kGap;
  const int labels_y = panel_title_y + line + style::kGap;
  const int grid_y = labels_y + text_line_height(1) + style::kGap;
  const int height = grid_y + cell * rows + style::kGap + line + style::kMargin;

  Canvas canvas(width, height, style::kBackground);
  draw_text_centered(canvas, width / 2, style::kMargin, heading.fitted.text, style::kInk,
                     heading.fitted.scale);
  for (int r = 0; r < rows; ++r) {
    const std::string& label = row_labels[static_cast<size_t>(r)];
    canvas.draw_text(grid_x - style::kGap - text_size(label, 1).width,
                     grid_y + r * cell + (cell - text_cap_height(1)) / 2, label, style::kInk, 1);
  }
  const bool numbers = cell >= 30;
  for (size_t p = 0; p < panels.size(); ++p) {
    const int x0 = grid_x + static_cast<int>(p) * panel_w;
    draw_text_centered(canvas, x0 + cell * cols / 2, panel_title_y, panels[p].title, style::kInk, style::kTextScale);
    for (int c = 0; c < cols; ++c) {
      draw_text_centered(canvas, x0 + c * cell + cell / 2, labels_y,
                         column_labels[static_cast<size_t>(c)], style::kInk, 1);
    }
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        const double v = panels[p].rows[static_cast<size_t>(r)][static_cast<size_t>(c)];
        const Rgb color = std::isfinite(v) ? viridis(static_cast<float>((v - low) / (high - low)))
                                           : style::kInvalid;
        canvas.fill_rect(x0 + c * cell, grid_y + r * cell, cell - 1, cell - 1, color);
        if (numbers && std::isfinite(v)) {
          draw_text_centered(canvas, x0 + c * cell + cell / 2, grid_y + r * cell + (cell - 7) / 2,
                             fmt::format("{:.2f}", v), ink_on(color), 1);
        }
      }
    }
  }
  draw_text_centered(canvas, width / 2, grid_y + cell * rows + style::kGap,
                     fmt::format("colour scale {:.2f} (dark) to {:.2f} (bright)", low, high),
                     style::kSoftInk, style::kTextScale);
  canvas.save_png(path);
}

}  // namespace tinygpt::plot
