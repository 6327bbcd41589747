#include <unistd.h>

#include <optional>

#include "explorer_page.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/plot/attention_plot.hpp"
#include "tinygpt/plot/terminal_heatmap.hpp"

namespace tinygpt::analysis {

heads::HeadReport report_heads(nn::CausalLM& model, const data::Tokenizer& tokenizer,
                               const heads::ProbeSet& set, const ReportOptions& out) {
  const std::string& out_dir = out.heatmap_dir;
  const heads::HeadReport report = heads::analyze_heads(model, set.probes);
  const std::vector<Tensor> maps = heads::attention_maps(model, set.picture);  // per layer (H,T,T)
  std::vector<std::string> labels;
  for (int64_t id : set.picture) labels.push_back(tokenizer.token(id));
  const int t = static_cast<int>(set.picture.size());

  const bool draw = !out_dir.empty();
  std::optional<HeatmapSet> pictures;
  if (draw) pictures.emplace(out_dir);
  const heads::HeadScores* strongest = nullptr;
  for (size_t layer = 0; layer < maps.size(); ++layer) {
    const int64_t heads = maps[layer].size(0);
    std::vector<std::vector<float>> grid;
    std::vector<std::string> titles;
    for (int64_t h = 0; h < heads; ++h) {
      const float* a = maps[layer].data<float>() + h * t * t;
      const auto& s = report.heads[static_cast<size_t>(static_cast<int64_t>(layer) * heads + h)];
      const std::string title = fmt::format("layer {} head {}: {} {:.2f}", layer, h, s.role, s.role_score);
      if (draw) {
        plot::save_attention_heatmap(pictures->path(fmt::format("layer{}_head{}.png", layer, h)), a, t,
                                     labels, title);
      }
      grid.emplace_back(a, a + t * t);
      titles.push_back(fmt::format("head {}: {} {:.2f}", h, s.role, s.role_score));
      if (strongest == nullptr || s.role_score > strongest->role_score) strongest = &s;
    }
    if (draw) {
      plot::save_head_grid(pictures->path(fmt::format("layer{}.png", layer)), grid, t, labels, titles,
                           fmt::format("layer {}", layer));
    }
  }
  if (!out.html.empty()) {
    save_explorer_page(out.html, out.run_dir, model, tokenizer, set.picture, maps, report, out.ablation);
  }
  if (draw && out.draw_also) out.draw_also(*pictures);
  if (draw) pictures->commit();  // once the page is written too: a failure leaves the earlier set
  if (out.json) return report;  // the caller prints the JSON
  std::FILE* text = out.text;
  fmt::print(text, "{}", report.table());
  if (out.ablation != nullptr) fmt::print(text, "\n{}\n", out.ablation->table(report));
  if (draw) {
    fmt::print(text, "heatmaps: {}/layer<L>_head<H>.png, one grid per layer in {}/layer<L>.png\n", out_dir, out_dir);
  }
  if (!out.html.empty()) fmt::print(text, "attention explorer: {}\n", out.html);
  if (isatty(fileno(text)) && strongest != nullptr) {
    fmt::print(text, "\nlayer {} head {} ({}) on \"{}\":\n", strongest->layer, strongest->head,
               strongest->role, tokenizer.decode(set.picture));
    const float* a = maps[static_cast<size_t>(strongest->layer)].data<float>() + strongest->head * t * t;
    fmt::print(text, "{}", plot::terminal_heatmap(a, t, labels, true, plot::terminal_columns(fileno(text))));
  }
  return report;
}

}  // namespace tinygpt::analysis
