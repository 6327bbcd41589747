#include <fmt/format.h>

#include "attention_input.hpp"
#include "attention_panel.hpp"
#include "plot_style.hpp"
#include "plot_text.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/plot/attention_plot.hpp"

namespace tinygpt::plot {
namespace {

constexpr int kMaxColumns = 4;
constexpr int kRowTarget = 1400;  // pixels the grids of one row of panels span, about
constexpr int kMaxCell = 16;
constexpr int kPanelSpacing = 28;
constexpr int kTitleScale = 3;  // above the head titles, which may take scale 2
constexpr int kBarScale = 2;
constexpr const char* kAxesNote = "rows: query positions, columns: key positions";

// Head titles share one size: 2 when all of them fit over a grid at that size, else 1.
int common_title_scale(const std::vector<std::string>& titles, int max_width) {
  for (const std::string& title : titles) {
    if (text_size(title, 2).width > max_width) return 1;
  }
  return 2;
}

// Top to bottom: title, a note on the axes, rows of panels each under its head's title.
// The colour bar stands right of the panels, from the first grid's top to the last one's bottom.
struct HeadGridFigure {
  HeadGridFigure(int seq_len, const std::vector<std::string>& labels,
                 const std::vector<std::string>& head_titles, const std::string& title)
      : count(static_cast<int>(head_titles.size())),
        // Rows of at most kMaxColumns panels, as even as possible: 6 heads -> 3 + 3, not 4 + 2.
        rows((count + kMaxColumns - 1) / kMaxColumns),
        columns((count + rows - 1) / rows),
        panel(labels, cell_size_for(seq_len, kRowTarget / columns, kMaxCell)),
        head_title_scale(common_title_scale(head_titles, panel.grid_size())) {
    head_title_height = text_cap_height(head_title_scale) + 2 * style::kGap;
    slot_width = panel.width() + kPanelSpacing;
    slot_height = head_title_height + panel.height() + kPanelSpacing;
    title_line = text_line_height(kTitleScale);
    note = fit_text(kAxesNote, columns * slot_width - kPanelSpacing, 2);
    panels_y =
        style::kMargin + title_line + style::kGap + text_line_height(note.scale) + 2 * style::kGap;
    const int content_width = columns * slot_width + colorbar_width(kBarScale) + 2 * style::kMargin;
    heading = fit_heading(title, content_width, kTitleScale);
    // A title wider than the panels widens the figure; the panels stay in the middle.
    left = style::kMargin + (heading.figure_width - content_width) / 2;
    const int bar_x = left + columns * slot_width;
    height = panels_y + rows * slot_height - kPanelSpacing + style::kMargin;
    const int bar_top = grid(0).y;
    colorbar = {bar_x, bar_top, kColorbarBarWidth, grid(count - 1).y + panel.grid_size() - bar_top};
  }

  // The top-left corner of head h's panel, its title included.
  int slot_x(int h) const { return left + (h % columns) * slot_width; }
  int slot_y(int h) const { return panels_y + (h / columns) * slot_height; }
  PixelRect grid(int h) const {
    return {slot_x(h) + panel.grid_x(), slot_y(h) + head_title_height + panel.grid_y(),
            panel.grid_size(), panel.grid_size()};
  }

  int count, rows, columns;
  AttentionPanel panel;
  int head_title_scale;
  int head_title_height = 0, slot_width = 0, slot_height = 0, title_line = 0, panels_y = 0;
  FittedText note;  // kAxesNote
  Heading heading;
  int left = 0;  // where the first column of panels starts
  int height = 0;
  PixelRect colorbar;
};

void check_heads(const std::vector<std::vector<float>>& heads, int seq_len,
                 const std::vector<std::string>& head_titles) {
  if (heads.size() != head_titles.size()) {
    throw ShapeError(
        fmt::format("save_head_grid: {} titles for {} heads", head_titles.size(), heads.size()));
  }
  const auto expected = static_cast<std::size_t>(seq_len) * static_cast<std::size_t>(seq_len);
  for (std::size_t h = 0; h < heads.size(); ++h) {
    if (heads[h].size() != expected) {
      throw ShapeError(fmt::format("save_head_grid: head {} has {} weights; seq_len {} needs {}", h,
                                   heads[h].size(), seq_len, expected));
    }
  }
}

void check_head_titles(const char* fn, const std::vector<std::string>& head_titles) {
  if (head_titles.empty()) throw ShapeError(fmt::format("{}: no heads to draw", fn));
}

}  // namespace

AttentionFigureLayout head_grid_layout(int seq_len, const std::vector<std::string>& labels,
                                       const std::vector<std::string>& head_titles,
                                       const std::string& title) {
  check_positions("head_grid_layout", seq_len, labels, kMaxPlotPositions);
  check_head_titles("head_grid_layout", head_titles);
  const HeadGridFigure figure(seq_len, labels, head_titles, title);
  AttentionFigureLayout layout{
      figure.heading.figure_width, figure.height, figure.panel.cell(), {}, figure.colorbar};
  for (int h = 0; h < figure.count; ++h) layout.grids.push_back(figure.grid(h));
  return layout;
}

void save_head_grid(const std::string& path, const std::vector<std::vector<float>>& heads,
                    int seq_len, const std::vector<std::string>& labels,
                    const std::vector<std::string>& head_titles, const std::string& title) {
  check_positions("save_head_grid", seq_len, labels, kMaxPlotPositions);
  check_heads(heads, seq_len, head_titles);
  check_head_titles("save_head_grid", head_titles);
  const HeadGridFigure figure(seq_len, labels, head_titles, title);

  Canvas canvas(figure.heading.figure_width, figure.height, style::kBackground);
  const int panels_center_x =
      figure.left + (figure.columns * figure.slot_width - kPanelSpacing) / 2;
  draw_text_centered(canvas, panels_center_x, style::kMargin, figure.heading.fitted.text,
                     style::kInk, figure.heading.fitted.scale);
  draw_text_centered(canvas, panels_center_x, style::kMargin + figure.title_line + style::kGap,
                     figure.note.text, style::kSoftInk, figure.note.scale);
  for (int h = 0; h < figure.count; ++h) {
    const auto index = static_cast<std::size_t>(h);
    const FittedText head_title =
        fit_text(head_titles[index], figure.panel.grid_size(), figure.head_title_scale);
    const PixelRect grid = figure.grid(h);
    draw_text_centered(canvas, grid.x + grid.width / 2, figure.slot_y(h), head_title.text,
                       style::kInk, head_title.scale);
    figure.panel.draw(canvas, figure.slot_x(h), figure.slot_y(h) + figure.head_title_height,
                      heads[index].data());
  }
  draw_colorbar(canvas, figure.colorbar, kBarScale);
  canvas.save_png(path);
}

}  // namespace tinygpt::plot
