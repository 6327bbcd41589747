#include "attention_panel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "plot_style.hpp"
#include "tinygpt/plot/colormap.hpp"
#include "tinygpt/plot/token_label.hpp"

namespace tinygpt::plot {
namespace {

// Longer tokens (from a subword tokenizer) are cut so the label column stays narrow.
constexpr std::size_t kMaxLabelChars = 8;
constexpr int kLabelGap = 4;
constexpr int kTickLength = 4;

// The largest font scale (up to 2) at which a glyph with its descent fits in a cell, so labels of
// neighbouring rows do not touch ('_' for a space sits below the baseline); 0 for no labels.
int label_scale_for(int cell) {
  for (int scale = 2; scale >= 1; --scale) {
    if (text_line_height(scale) <= cell) return scale;
  }
  return 0;
}

Rgb weight_color(float w) { return std::isfinite(w) ? viridis(w) : style::kInvalid; }

}  // namespace

int cell_size_for(int seq_len, int target, int max_cell) {
  return std::clamp(target / seq_len, 1, max_cell);
}

AttentionPanel::AttentionPanel(const std::vector<std::string>& query_labels,
                               const std::vector<std::string>& key_labels, int cell)
    : cell_(cell), label_scale_(label_scale_for(cell)) {
  const auto shown = [](const std::vector<std::string>& labels) {
    std::vector<std::string> out;
    out.reserve(labels.size());
    for (const std::string& label : labels) out.push_back(visible_token(label).substr(0, kMaxLabelChars));
    return out;
  };
  query_labels_ = shown(query_labels);
  key_labels_ = shown(key_labels);
  if (label_scale_ == 0) return;
  // One width for both axes (the widest label of either), so a self-attention panel's labels
  // line up the same way down and across.
  int widest = 0;
  for (const auto* labels : {&query_labels_, &key_labels_}) {
    for (const std::string& label : *labels) widest = std::max(widest, text_size(label, label_scale_).width);
  }
  const int line_height = text_line_height(label_scale_);
  // A label may overhang its cell by a pixel a side into the blank margins of its neighbours'
  // single characters: enough for "\n" over 9-pixel cells.
  vertical_keys_ = widest > cell_ + 2;
  query_label_width_ = widest + kLabelGap;
  key_label_height_ = (vertical_keys_ ? widest : line_height) + kLabelGap;
}

void AttentionPanel::draw(Canvas& canvas, int x, int y, const float* weights) const {
  const int queries = static_cast<int>(query_labels_.size()), keys = static_cast<int>(key_labels_.size());
  const int left = x + grid_x(), top = y + grid_y();
  for (int q = 0; q < queries; ++q) {
    for (int k = 0; k < keys; ++k) {
      canvas.fill_rect(left + k * cell_, top + q * cell_, cell_, cell_,
                       weight_color(weights[static_cast<std::size_t>(q) * keys + k]));
    }
  }
  if (label_scale_ == 0) return;
  draw_query_labels(canvas, left, top);
  draw_key_labels(canvas, left, top);
}

void AttentionPanel::draw_query_labels(Canvas& canvas, int grid_left, int grid_top) const {
  const int cap = text_cap_height(label_scale_);
  for (std::size_t i = 0; i < query_labels_.size(); ++i) {
    const int width = text_size(query_labels_[i], label_scale_).width;
    const int cell_top = grid_top + static_cast<int>(i) * cell_;
    canvas.draw_text(grid_left - kLabelGap - width, cell_top + (cell_ - cap) / 2, query_labels_[i],
                     style::kInk, label_scale_);
  }
}

void AttentionPanel::draw_key_labels(Canvas& canvas, int grid_left, int grid_top) const {
  const int cap = text_cap_height(label_scale_);
  const int descent = text_descent(label_scale_);
  for (std::size_t i = 0; i < key_labels_.size(); ++i) {
    const std::string& label = key_labels_[i];
    const int width = text_size(label, label_scale_).width;
    const int cell_left = grid_left + static_cast<int>(i) * cell_;
    if (vertical_keys_) {
      // Turned text ends just above the grid; its capitals are centred on the column.
      canvas.draw_text(cell_left + (cell_ - cap) / 2, grid_top - kLabelGap - width, label,
                       style::kInk, label_scale_, TextDirection::vertical);
    } else {
      canvas.draw_text(cell_left + (cell_ - width) / 2, grid_top - kLabelGap - descent - cap,
                       label, style::kInk, label_scale_);
    }
  }
}

int colorbar_width(int scale) {
  return kColorbarBarWidth + kTickLength + kLabelGap + text_size("0.0", scale).width;
}

void draw_colorbar(Canvas& canvas, const PixelRect& bar, int scale) {
  for (int row = 0; row < bar.height; ++row) {
    const float t =
        1.0f - static_cast<float>(row) / static_cast<float>(std::max(bar.height - 1, 1));
    canvas.fill_rect(bar.x, bar.y + row, bar.width, 1, viridis(t));
  }
  canvas.stroke_rect(bar.x - 1, bar.y - 1, bar.width + 2, bar.height + 2, style::kInk);
  // Ticks every 0.2, or every 0.5 or only at the ends when the bar is too short for their labels.
  const int cap = text_cap_height(scale);
  int ticks = 2;
  for (const int candidate : {6, 3}) {
    if ((bar.height - 1) / (candidate - 1) >= cap + kLabelGap) {
      ticks = candidate;
      break;
    }
  }
  for (int i = 0; i < ticks; ++i) {
    const double value = static_cast<double>(i) / (ticks - 1);
    const int tick_y = bar.y + static_cast<int>(std::lround((1.0 - value) * (bar.height - 1)));
    canvas.fill_rect(bar.x + bar.width, tick_y, kTickLength, 1, style::kInk);
    canvas.draw_text(bar.x + bar.width + kTickLength + kLabelGap, tick_y - cap / 2,
                     fmt::format("{:.1f}", value), style::kSoftInk, scale);
  }
}

}  // namespace tinygpt::plot
