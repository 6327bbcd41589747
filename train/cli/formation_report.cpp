// The pictures `tinygpt train` draws from its log.jsonl records: the loss series, and the head
// formation (heads_over_time.png, and when each head reached its role).
#include <filesystem>

#include "commands.hpp"
#include "tinygpt/heads/formation.hpp"
#include "tinygpt/plot/formation_plot.hpp"
#include "tinygpt/plot/loss_plot.hpp"

namespace tinygpt::cli {
namespace {

std::vector<plot::LossPoint> points(const std::vector<heads::StepValue>& series) {
  std::vector<plot::LossPoint> out;
  for (const auto& p : series) out.push_back({p.step, p.value});
  return out;
}

}  // namespace

LossSeries loss_series(const std::vector<nlohmann::json>& log) {
  LossSeries out;
  for (const auto& e : log) {
    const double step = e.value("step", 0.0);
    if (e.contains("loss")) out.train.push_back({step, e["loss"].get<double>()});
    if (e.contains("val_loss") && e["val_loss"].is_number()) out.val.push_back({step, e["val_loss"].get<double>()});
  }
  return out;
}

void report_formation(const std::vector<nlohmann::json>& log, const std::string& out_dir,
                      const std::string& title) {
  const heads::FormationSeries series = heads::formation_series(log);
  if (series.induction.empty()) return;  // no evaluation tracked the heads
  std::vector<plot::NamedSeries> scores;
  for (size_t layer = 0; layer < series.previous_token.size(); ++layer) {
    scores.push_back({fmt::format("layer {} best previous-token", layer), points(series.previous_token[layer])});
  }
  scores.push_back({"best induction", points(series.induction)});
  scores.push_back({"second/first copy loss", points(series.in_context_ratio)});
  const std::string path = (std::filesystem::path(out_dir) / "heads_over_time.png").string();
  const LossSeries losses = loss_series(log);
  plot::save_formation_plot(path, losses.train, losses.val, scores, title);
  fmt::print("heads over time: {}\n{}\n", path, heads::formation_summary(series));
}

}  // namespace tinygpt::cli
