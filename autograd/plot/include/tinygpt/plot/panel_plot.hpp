#pragma once
// Two line charts stacked on one x axis (e.g. the loss and the in-context ratio against the
// number of heads removed, one line per removal order). Knows no model: it takes series.
#include <string>
#include <vector>

#include "tinygpt/plot/formation_plot.hpp"

namespace tinygpt::plot {

struct ChartPanel {
  std::string y_name;
  std::vector<NamedSeries> series;  // coloured as score_color(i), the same i in both panels
};

// Throws Error when the PNG cannot be written.
void save_stacked_charts(const std::string& path, const ChartPanel& top, const ChartPanel& bottom,
                         const std::string& x_name, const std::string& title);

}  // namespace tinygpt::plot
