#pragma once
// PNG pictures of attention weights: one head as a large heatmap, or all heads of a layer side by
// side. Weights are probabilities, so the colour scale is fixed to [0, 1] (viridis: dark at 0,
// bright at 1) and pictures of different heads and steps compare directly. A NaN or infinite
// weight is drawn red.
#include <string>
#include <vector>

#include "tinygpt/plot/canvas.hpp"

namespace tinygpt::plot {

// The longest sequence the plots accept; beyond it a cell would be under a pixel.
constexpr int kMaxPlotPositions = 1024;

// `weights` is seq_len x seq_len row-major: row i holds query position i's weights over the key
// positions. `labels` holds one token per position (see visible_token for how they are shown);
// queries are labelled down the left, keys along the top. A colour bar with ticks stands at the
// right, `title` above. Throws ShapeError when labels.size() != seq_len, ValueError for a null
// `weights` or a seq_len outside [1, kMaxPlotPositions], Error when the PNG cannot be written.
void save_attention_heatmap(const std::string& path, const float* weights, int seq_len,
                            const std::vector<std::string>& labels, const std::string& title);

// All heads of one layer: heads[h] is head h's seq_len x seq_len matrix, drawn as a small heatmap
// titled head_titles[h], in rows of at most four, with one colour bar for all and `title` above.
// Throws as save_attention_heatmap does, and ShapeError when there are no heads, a matrix is not
// seq_len * seq_len, or head_titles.size() != heads.size().
void save_head_grid(const std::string& path, const std::vector<std::vector<float>>& heads,
                    int seq_len, const std::vector<std::string>& labels,
                    const std::vector<std::string>& head_titles, const std::string& title);

// Cross-attention heads of one layer: heads[h] is queries x keys (query_labels.size() rows, the
// target's positions; key_labels.size() columns, the source's), laid out as save_head_grid does.
// Throws as save_head_grid does for either axis.
void save_cross_attention_grid(const std::string& path, const std::vector<std::vector<float>>& heads,
                               const std::vector<std::string>& query_labels,
                               const std::vector<std::string>& key_labels,
                               const std::vector<std::string>& head_titles, const std::string& title);

// Where the functions above put things, in pixels of the PNG they write for the same arguments:
// for callers that annotate the image, and for tests.
struct AttentionFigureLayout {
  int width = 0, height = 0;     // of the image
  int cell = 0;                  // side of one weight's square
  std::vector<PixelRect> grids;  // one per head: cell (q, k) is at x + k * cell, y + q * cell
  PixelRect colorbar;            // the bar alone: 1 along its top row, 0 along its bottom row
};
AttentionFigureLayout attention_heatmap_layout(int seq_len, const std::vector<std::string>& labels,
                                               const std::string& title);
AttentionFigureLayout head_grid_layout(int seq_len, const std::vector<std::string>& labels,
                                       const std::vector<std::string>& head_titles,
                                       const std::string& title);
AttentionFigureLayout cross_attention_grid_layout(const std::vector<std::string>& query_labels,
                                                  const std::vector<std::string>& key_labels,
                                                  const std::vector<std::string>& head_titles,
                                                  const std::string& title);

}  // namespace tinygpt::plot
