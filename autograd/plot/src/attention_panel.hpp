#pragma once
// The building blocks shared by the single-head heatmap and the head grid: one attention matrix
// drawn as cells with its token labels, and the [0, 1] colour bar.
#include <string>
#include <vector>

#include "tinygpt/plot/canvas.hpp"

namespace tinygpt::plot {

// The side of a cell so that seq_len cells span about `target` pixels, within [1, max_cell].
int cell_size_for(int seq_len, int target, int max_cell);

// A queries x keys grid of cells (self-attention: one sequence both ways; cross-attention: the
// target's positions down, the source's across), query labels in a column at its left and key
// labels in a row above it. Labels are drawn only when cells are big enough to hold a character;
// key labels turn vertical when one of them is wider than a cell.
class AttentionPanel {
 public:
  AttentionPanel(const std::vector<std::string>& query_labels,
                 const std::vector<std::string>& key_labels, int cell);

  int width() const { return grid_x() + grid_width(); }
  int height() const { return grid_y() + grid_height(); }
  // Where the grid starts, relative to the panel's top-left corner.
  int grid_x() const { return query_label_width_; }
  int grid_y() const { return key_label_height_; }
  int grid_width() const { return cell_ * static_cast<int>(key_labels_.size()); }
  int grid_height() const { return cell_ * static_cast<int>(query_labels_.size()); }
  int cell() const { return cell_; }

  // weights: queries x keys, row-major.
  void draw(Canvas& canvas, int x, int y, const float* weights) const;

 private:
  void draw_query_labels(Canvas& canvas, int grid_left, int grid_top) const;
  void draw_key_labels(Canvas& canvas, int grid_left, int grid_top) const;

  // As shown: visible_token, cut to a few characters.
  std::vector<std::string> query_labels_, key_labels_;
  int cell_;
  int label_scale_;  // 0 when the cells are too small for labels
  bool vertical_keys_ = false;
  int query_label_width_ = 0;  // including the gap to the grid
  int key_label_height_ = 0;   // including the gap to the grid
};

// A vertical viridis bar from 1 at the top to 0 at the bottom, ticks (every 0.2 on a bar tall
// enough) labelled on its right. colorbar_width is the bar's width plus its tick labels.
constexpr int kColorbarBarWidth = 18;
int colorbar_width(int scale);
void draw_colorbar(Canvas& canvas, const PixelRect& bar, int scale);

}  // namespace tinygpt::plot
