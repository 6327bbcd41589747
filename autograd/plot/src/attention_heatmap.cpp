#include "attention_input.hpp"
#include "attention_panel.hpp"
#include "plot_style.hpp"
#include "plot_text.hpp"
#include "tinygpt/plot/attention_plot.hpp"

namespace tinygpt::plot {
namespace {

// Cells span about this many pixels in all, at most kMaxHeatmapCell each: 28 px cells up to 41 positions,
// 9 px (still labelled) at 128.
constexpr int kHeatmapGridTarget = 1152;
constexpr int kMaxHeatmapCell = 28;

// Left to right: axis name "query" (turned), the panel (query labels, grid), the colour bar.
// Top to bottom: title, axis name "key", the panel (key labels, grid).
struct HeatmapFigure {
  HeatmapFigure(int seq_len, const std::vector<std::string>& labels, const std::string& title)
      : panel(labels, labels, cell_size_for(seq_len, kHeatmapGridTarget, kMaxHeatmapCell)) {
    const int line = text_line_height(style::kTextScale);
    const int panel_offset = line + style::kGap;
    const int bar_offset = panel_offset + panel.width() + 3 * style::kGap;
    const int content_width = bar_offset + colorbar_width(style::kTextScale) + 2 * style::kMargin;
    heading = fit_heading(title, content_width, style::kTextScale);
    // A title wider than the plot widens the figure; the plot stays in the middle.
    left = style::kMargin + (heading.figure_width - content_width) / 2;
    panel_x = left + panel_offset;
    const int bar_x = left + bar_offset;
    key_name_y = style::kMargin + line + 2 * style::kGap;
    panel_y = key_name_y + line + style::kGap;
    height = panel_y + panel.height() + style::kMargin;
    const PixelRect grid_rect = grid();
    colorbar = {bar_x, grid_rect.y, kColorbarBarWidth, grid_rect.height};
  }

  PixelRect grid() const {
    return {panel_x + panel.grid_x(), panel_y + panel.grid_y(), panel.grid_width(),
            panel.grid_height()};
  }

  AttentionPanel panel;
  Heading heading;
  int left = 0;  // where the axis name "query" stands
  int panel_x = 0, panel_y = 0, key_name_y = 0, height = 0;
  PixelRect colorbar;
};

}  // namespace

AttentionFigureLayout attention_heatmap_layout(int seq_len, const std::vector<std::string>& labels,
                                               const std::string& title) {
  check_positions("attention_heatmap_layout", seq_len, labels, kMaxPlotPositions);
  const HeatmapFigure figure(seq_len, labels, title);
  return {figure.heading.figure_width,
          figure.height,
          figure.panel.cell(),
          {figure.grid()},
          figure.colorbar};
}

void save_attention_heatmap(const std::string& path, const float* weights, int seq_len,
                            const std::vector<std::string>& labels, const std::string& title) {
  check_positions("save_attention_heatmap", seq_len, labels, kMaxPlotPositions);
  check_weights("save_attention_heatmap", weights);
  const HeatmapFigure figure(seq_len, labels, title);
  const PixelRect grid = figure.grid();
  const int grid_center_x = grid.x + grid.width / 2;

  Canvas canvas(figure.heading.figure_width, figure.height, style::kBackground);
  draw_text_centered(canvas, grid_center_x, style::kMargin, figure.heading.fitted.text, style::kInk,
                     figure.heading.fitted.scale);
  draw_text_centered(canvas, grid_center_x, figure.key_name_y, "key", style::kSoftInk, style::kTextScale);
  draw_vertical_text_centered(canvas, figure.left, grid.y + grid.height / 2, "query",
                              style::kSoftInk, style::kTextScale);
  figure.panel.draw(canvas, figure.panel_x, figure.panel_y, weights);
  draw_colorbar(canvas, figure.colorbar, style::kTextScale);
  canvas.save_png(path);
}

}  // namespace tinygpt::plot
