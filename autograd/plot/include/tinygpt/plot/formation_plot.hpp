#pragma once
// How something forms during training, as a PNG: the loss curve on top and, below it on the same
// step axis, scores in [0, 1] (e.g. the best previous-token and induction scores of the heads and
// the in-context loss ratio), so a reader sees which moves first. Knows no model: it takes series.
#include <string>
#include <vector>

#include "tinygpt/plot/loss_plot.hpp"

namespace tinygpt::plot {

// The colour of scores[i] (tab10 after the two loss colours, cycling), for readers and tests.
Rgb score_color(std::size_t i);

// Loss panel as save_loss_curve draws it (train, val), score panel with y fixed to [0, 1] and a
// legend of `scores`' names; both panels span the same steps and their plots line up. Throws
// Error when the PNG cannot be written.
void save_formation_plot(const std::string& path, const std::vector<LossPoint>& train,
                         const std::vector<LossPoint>& val, const std::vector<NamedSeries>& scores,
                         const std::string& title);

}  // namespace tinygpt::plot
