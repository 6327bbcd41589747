#include "tinygpt/train/loss_log.hpp"

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tinygpt/plot/loss_plot.hpp"

namespace tinygpt::train {
using nlohmann::json;

LossLog LossLog::parse(const std::string& text, int64_t step) {
  LossLog log;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const json entry = json::parse(line, nullptr, false);
    if (!entry.is_discarded() && entry.is_object() && entry.value("step", int64_t{0}) <= step) {
      log.lines_.push_back(line);
    }
  }
  return log;
}

void LossLog::add(const StepStats& s) {
  const json entry = {{"step", s.step}, {"loss", s.loss}, {"lr", s.lr}, {"grad_norm", s.grad_norm},
                      {"tokens_per_s", s.seconds > 0 ? s.tokens / s.seconds : 0.0}};
  lines_.push_back(entry.dump());
}

void LossLog::add(const EvalStats& e, const std::string& extra_fields) {
  json entry = {{"step", e.step}, {"train_loss", e.train_loss},
                {"val_loss", std::isnan(e.val_loss) ? json(nullptr) : json(e.val_loss)}};
  if (!extra_fields.empty()) entry.update(json::parse(extra_fields));
  lines_.push_back(entry.dump());
}

std::string LossLog::text() const {
  std::string out;
  for (const auto& line : lines_) out += line + "\n";
  return out;
}

void LossLog::save_curve(const std::string& path, const std::string& title) const {
  std::vector<plot::LossPoint> steps, val;
  for (const auto& line : lines_) {
    const json e = json::parse(line);
    const double step = e.value("step", 0.0);
    if (e.contains("loss")) steps.push_back({step, e["loss"].get<double>()});
    if (e.contains("val_loss") && e["val_loss"].is_number()) val.push_back({step, e["val_loss"].get<double>()});
  }
  plot::save_loss_curve(path, steps, val, title);
}

}  // namespace tinygpt::train
