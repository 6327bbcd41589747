#pragma once
// Tables of numbers drawn as coloured cells: one or more panels of the same rows and columns
// side by side (e.g. Q-, K- and V-composition between heads, or recovery per layer and head),
// on one viridis scale from `low` to `high`, each cell's value written in it when it fits.
// Knows no model: it takes rows of numbers.
#include <string>
#include <vector>

namespace tinygpt::plot {

struct ValuePanel {
  std::string title;
  std::vector<std::vector<double>> rows;  // rows[r][c]
};

// Throws ValueError without panels, rows or columns, ShapeError when a panel's shape differs from
// the labels', ValueError unless low < high, Error when the PNG cannot be written. A NaN or
// infinite value is drawn red.
void save_value_grid(const std::string& path, const std::vector<ValuePanel>& panels,
                     const std::vector<std::string>& row_labels,
                     const std::vector<std::string>& column_labels, const std::string& title,
                     double low, double high);

}  // namespace tinygpt::plot
