// The pictures of a run's log.jsonl: the loss curve, and the head formation (heads_over_time.png,
// and when each head reached its role; an encoder-decoder's alignment_over_time.png).
#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>

#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/heads/formation.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/plot/formation_plot.hpp"
#include "tinygpt/plot/loss_plot.hpp"
#include "tinygpt/train/progress.hpp"

namespace tinygpt::analysis {
namespace {

std::vector<plot::LossPoint> loss_points(const std::vector<train::LogPoint>& series) {
  std::vector<plot::LossPoint> out;
  for (const auto& p : series) out.push_back({p.step, p.value});
  return out;
}

std::vector<plot::LossPoint> score_points(const std::vector<heads::StepValue>& series) {
  std::vector<plot::LossPoint> out;
  for (const auto& p : series) out.push_back({p.step, p.value});
  return out;
}

// An encoder-decoder's evaluations: held-out exact match and character accuracy, and each
// decoder layer's best cross-attention alignment, over training (alignment_over_time.png).
void draw_alignment_over_time(const train::LogRecords& log, const std::string& run_dir,
                              const std::vector<plot::LossPoint>& train,
                              const std::vector<plot::LossPoint>& val, const std::string& title,
                              std::FILE* text) {
  const std::vector<plot::LossPoint> exact = loss_points(log.series("exact_match"));
  if (exact.empty()) return;  // not an encoder-decoder's log
  std::vector<plot::NamedSeries> scores{{"held-out exact match", exact},
                                        {"held-out character accuracy", loss_points(log.series("char_accuracy"))}};
  std::vector<std::vector<plot::LossPoint>> best;  // per decoder layer
  for (const nlohmann::json& r : log.records()) {
    if (!r.contains("cross_attention")) continue;
    std::vector<double> layer_best;
    for (const nlohmann::json& h : r["cross_attention"]) {
      const auto layer = h.value("layer", int64_t{0});
      if (static_cast<size_t>(layer) >= layer_best.size()) layer_best.resize(static_cast<size_t>(layer) + 1, 0.0);
      layer_best[static_cast<size_t>(layer)] =
          std::max(layer_best[static_cast<size_t>(layer)], heads::number_or(h, "alignment", 0.0));
    }
    if (layer_best.size() > best.size()) best.resize(layer_best.size());
    for (size_t l = 0; l < layer_best.size(); ++l) best[l].push_back({r["step"].get<double>(), layer_best[l]});
  }
  for (size_t l = 0; l < best.size(); ++l) {
    scores.push_back({fmt::format("layer {} best cross-attention alignment", l), best[l]});
  }
  const std::string path = (std::filesystem::path(run_dir) / "alignment_over_time.png").string();
  plot::save_formation_plot(path, train, val, scores, title);
  if (text != nullptr) fmt::print(text, "alignment over time: {}\n", path);
}

}  // namespace

void draw_training_curves(const train::LogRecords& log, const std::string& run_dir,
                          const std::string& title, std::FILE* text) {
  const std::vector<plot::LossPoint> train = loss_points(log.step_losses());
  const std::vector<plot::LossPoint> val = loss_points(log.val_losses());
  const std::string curve = (std::filesystem::path(run_dir) / "loss.png").string();
  plot::save_loss_curve(curve, train, val, title);
  if (text != nullptr) fmt::print(text, "loss curve: {}\n", curve);

  draw_alignment_over_time(log, run_dir, train, val, title, text);
  const heads::FormationSeries series = heads::formation_series(log.head_records());
  if (series.induction.empty()) return;  // no evaluation tracked the heads
  std::vector<plot::NamedSeries> scores;
  for (size_t layer = 0; layer < series.previous_token.size(); ++layer) {
    scores.push_back({fmt::format("layer {} best previous-token", layer), score_points(series.previous_token[layer])});
  }
  if (series.second_copy_accuracy.empty()) {
    scores.push_back({"best induction", score_points(series.induction)});
    scores.push_back({"second/first copy loss", score_points(series.in_context_ratio)});
  } else {  // an encoder's
    scores.push_back({"best copy", score_points(series.copy)});
    scores.push_back({"second-copy masked accuracy", score_points(series.second_copy_accuracy)});
  }
  const std::string path = (std::filesystem::path(run_dir) / "heads_over_time.png").string();
  plot::save_formation_plot(path, train, val, scores, title);
  if (text != nullptr) fmt::print(text, "heads over time: {}\n{}\n", path, heads::formation_summary(series));
}

void remove_report(const std::string& run_dir) {
  const std::filesystem::path page = std::filesystem::path(run_dir) / "report.html";
  std::error_code ec;
  if (std::filesystem::is_regular_file(std::filesystem::symlink_status(page, ec))) std::filesystem::remove(page, ec);
  remove_heatmaps((std::filesystem::path(run_dir) / kHeatmapDir).string());
}

void check_report_paths(const std::string& run_dir) {
  const std::filesystem::path dir(run_dir);
  io::refuse_in_the_way((dir / kHeatmapDir).string(), io::EntryKind::folder, "the run's heatmaps");
  for (const char* name : {"report.html", "loss.png", "heads_over_time.png", "alignment_over_time.png"}) {
    io::refuse_in_the_way((dir / name).string(), io::EntryKind::file, "the run's report");
  }
}

void draw_run_curves(train::Run& run, std::FILE* text) {
  draw_training_curves(run.log().records(), run.dir(),
                       fmt::format("{}: {}", run.data_source(), run.task().shape_title()), text);
}

void report_run(train::Run& run, const heads::ProbeSet* probes, std::FILE* text) {
  draw_run_curves(run, text);
  if (probes == nullptr) return;
  ReportOptions out;
  out.heatmap_dir = (std::filesystem::path(run.dir()) / kHeatmapDir).string();
  out.html = (std::filesystem::path(run.dir()) / "report.html").string();
  out.run_dir = run.dir();
  out.text = text;
  // Each head removed in turn (a second on the demo): the page and the table show which heads
  // the model's copying depends on, not only where they look.
  train::LanguageModelTask& task = run.task().as<train::LanguageModelTask>();
  std::optional<heads::EachHeadAblation> each;
  if (nn::GPT* gpt = task.gpt()) {
    heads::HeadAblation ablation(*gpt, probes->probes, heads::AblationMode::zero);
    each = heads::ablate_each_head(ablation);
    out.ablation = &*each;
  }
  report_heads(task.causal_lm(), run.tokenizer(), *probes, out);
}

}  // namespace tinygpt::analysis
