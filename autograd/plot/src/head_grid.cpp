#include <fmt/format.h>

#include <algorithm>

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
constexpr int kMaxHeadCell = 16;
constexpr int kPanelSpacing = 28;
constexpr int kTitleScale = 3;  // above the head titles, which may take scale 2
constexpr int kBarScale = 2;
constexpr const char* kSelfNote = "rows: query positions, columns: key positions";
constexpr const char* kCrossNote = "rows: target positions (queries), columns: source positions (keys)";

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
  HeadGridFigure(const std::vector<std::string>& query_labels,
                 const std::vector<std::string>& key_labels,
                 const std::vector<std::string>& head_titles, const std::string& title,
                 const char* axes_note)
      : count(static_cast<int>(head_titles.size())),
        // Rows of at most kMaxColumns panels, as even as possible: 6 heads -> 3 + 3, not 4 + 2.
        rows((count + kMaxColumns - 1) / kMaxColumns),
        columns((count + rows - 1) / rows),
        panel(query_labels, key_labels,
              cell_size_for(static_cast<int>(std::max(query_labels.size(), key_labels.size())),
                            kRowTarget / columns, kMaxHeadCell)),
        head_title_scale(common_title_scale(head_titles, panel.grid_width())) {
    head_title_height = text_cap_height(head_title_scale) + 2 * style::kGap;
    slot_width = panel.width() + kPanelSpacing;
    slot_height = head_title_height + panel.height() + kPanelSpacing;
    title_line = text_line_height(kTitleScale);
    note = fit_text(axes_note, columns * slot_width - kPanelSpacing, 2);
    panels_y =
        style::kMargin + title_line + style::kGap + text_line_height(note.scale) + 2 * style::kGap;
    const int content_width = columns * slot_width + colorbar_width(kBarScale) + 2 * style::kMargin;
    heading = fit_heading(title, content_width, kTitleScale);
    // A title wider than the panels widens the figure; the panels stay in the middle.
    left = style::kMargin + (heading.figure_width - content_width) / 2;
    const int bar_x = left + columns * slot_width;
    height = panels_y + rows * slot_height - kPanelSpacing + style::kMargin;
    const int bar_top = grid(0).y;
    colorbar = {bar_x, bar_top, kColorbarBarWidth, grid(count - 1).y + panel.grid_height() - bar_top};
  }

  // The top-left corner of head h's panel, its title included.
  int slot_x(int h) const { return left + (h % columns) * slot_width; }
  int slot_y(int h) const { return panels_y + (h / columns) * slot_height; }
  PixelRect grid(int h) const {
    return {slot_x(h) + panel.grid_x(), slot_y(h) + head_title_height + panel.grid_y(),
            panel.grid_width(), panel.grid_height()};
  }

  int count, rows, columns;
  AttentionPanel panel;
  int head_title_scale;
  int head_title_height = 0, slot_width = 0, slot_height = 0, title_line = 0, panels_y = 0;
  FittedText note;  // which axis is which
  Heading heading;
  int left = 0;  // where the first column of panels starts
  int height = 0;
  PixelRect colorbar;
};

void check_heads(const char* fn, const std::vector<std::vector<float>>& heads, size_t queries,
                 size_t keys, const std::vector<std::string>& head_titles) {
  if (heads.size() != head_titles.size()) {
    throw ShapeError(Operation(fn), fmt::format("{} titles for {} heads", head_titles.size(), heads.size()));
  }
  for (std::size_t h = 0; h < heads.size(); ++h) {
    if (heads[h].size() != queries * keys) {
      throw ShapeError(Operation(fn), fmt::format("head {} has {} weights; {} queries x {} keys need {}", h,
                                   heads[h].size(), queries, keys, queries * keys));
    }
  }
}

void draw_head_grid(const std::string& path, const std::vector<std::vector<float>>& heads,
                    const HeadGridFigure& figure, const std::vector<std::string>& head_titles) {
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
        fit_text(head_titles[index], figure.panel.grid_width(), figure.head_title_scale);
    const PixelRect grid = figure.grid(h);
    draw_text_centered(canvas, grid.x + grid.width / 2, figure.slot_y(h), head_title.text,
                       style::kInk, head_title.scale);
    figure.panel.draw(canvas, figure.slot_x(h), figure.slot_y(h) + figure.head_title_height,
                      heads[index].data());
  }
  draw_colorbar(canvas, figure.colorbar, kBarScale);
  canvas.save_png(path);
}

void check_head_titles(const char* fn, const std::vector<std::string>& head_titles) {
  if (head_titles.empty()) throw ShapeError(Operation(fn), "no heads to draw");
}


AttentionFigureLayout layout_of(const HeadGridFigure& figure) {
  AttentionFigureLayout layout{
      figure.heading.figure_width, figure.height, figure.panel.cell(), {}, figure.colorbar};
  for (int h = 0; h < figure.count; ++h) layout.grids.push_back(figure.grid(h));
  return layout;
}

}  // namespace

AttentionFigureLayout head_grid_layout(int seq_len, const std::vector<std::string>& labels,
                                       const std::vector<std::string>& head_titles,
                                       const std::string& title) {
  check_positions("head_grid_layout", seq_len, labels, kMaxPlotPositions);
  check_head_titles("head_grid_layout", head_titles);
  return layout_of(HeadGridFigure(labels, labels, head_titles, title, kSelfNote));
}

AttentionFigureLayout cross_attention_grid_layout(const std::vector<std::string>& query_labels,
                                                  const std::vector<std::string>& key_labels,
                                                  const std::vector<std::string>& head_titles,
                                                  const std::string& title) {
  const char* fn = "cross_attention_grid_layout";
  check_positions(fn, static_cast<int>(query_labels.size()), query_labels, kMaxPlotPositions);
  check_positions(fn, static_cast<int>(key_labels.size()), key_labels, kMaxPlotPositions);
  check_head_titles(fn, head_titles);
  return layout_of(HeadGridFigure(query_labels, key_labels, head_titles, title, kCrossNote));
}

void save_head_grid(const std::string& path, const std::vector<std::vector<float>>& heads,
                    int seq_len, const std::vector<std::string>& labels,
                    const std::vector<std::string>& head_titles, const std::string& title) {
  check_positions("save_head_grid", seq_len, labels, kMaxPlotPositions);
  check_heads("save_head_grid", heads, labels.size(), labels.size(), head_titles);
  check_head_titles("save_head_grid", head_titles);
  draw_head_grid(path, heads, HeadGridFigure(labels, labels, head_titles, title, kSelfNote), head_titles);
}

void save_cross_attention_grid(const std::string& path, const std::vector<std::vector<float>>& heads,
                               const std::vector<std::string>& query_labels,
                               const std::vector<std::string>& key_labels,
                               const std::vector<std::string>& head_titles, const std::string& title) {
  const char* fn = "save_cross_attention_grid";
  check_positions(fn, static_cast<int>(query_labels.size()), query_labels, kMaxPlotPositions);
  check_positions(fn, static_cast<int>(key_labels.size()), key_labels, kMaxPlotPositions);
  check_heads(fn, heads, query_labels.size(), key_labels.size(), head_titles);
  check_head_titles(fn, head_titles);
  draw_head_grid(path, heads, HeadGridFigure(query_labels, key_labels, head_titles, title, kCrossNote),
                 head_titles);
}

}  // namespace tinygpt::plot
