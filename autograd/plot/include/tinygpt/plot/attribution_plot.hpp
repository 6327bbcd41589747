#pragma once
// Attributions of one prediction to the tokens before it, several methods as rows of cells over
// the same tokens (e.g. raw attention per layer, attention rollout, gradient x input), so their
// disagreements show at a glance. Knows no model: it takes rows of numbers.
#include <string>
#include <vector>

namespace tinygpt::plot {

// rows[r][j] is method r's share for token j (labels[j]); each row is coloured on its own scale,
// viridis from 0 to the row's largest value, and named row_names[r] at the left. Throws
// ShapeError when a row's length differs from labels.size() or row_names.size() != rows.size(),
// ValueError when there are no rows or more than kMaxAttributionTokens tokens, Error when the
// PNG cannot be written.
constexpr int kMaxAttributionTokens = 1024;
void save_attribution_plot(const std::string& path, const std::vector<std::vector<double>>& rows,
                           const std::vector<std::string>& row_names,
                           const std::vector<std::string>& labels, const std::string& title);

}  // namespace tinygpt::plot
