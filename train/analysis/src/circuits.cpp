#include "tinygpt/analysis/circuits.hpp"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "tinygpt/heads/composition.hpp"
#include "tinygpt/heads/importance.hpp"
#include "tinygpt/heads/patching.hpp"
#include "tinygpt/heads/prune_curve.hpp"
#include "tinygpt/plot/panel_plot.hpp"
#include "tinygpt/plot/value_grid.hpp"

namespace tinygpt::analysis {
namespace {

namespace fs = std::filesystem;

std::string head_label(const heads::HeadRef& h) { return fmt::format("{}.{}", h.layer, h.head); }

// The role the head report gives `h` ("" when the report does not have it).
std::string role_of(const heads::HeadReport& report, const heads::HeadRef& h) {
  for (const heads::HeadScores& s : report.heads) {
    if (s.layer == h.layer && s.head == h.head) return s.role;
  }
  return "";
}

// Where to draw `name` in the set, "" when no pictures are drawn.
std::string picture_path(HeatmapSet* pictures, const char* name) {
  return pictures != nullptr ? pictures->path(name) : "";
}

// Where `name` lands once the set is committed.
std::string final_path(const HeatmapSet& pictures, const char* name) {
  return (fs::path(pictures.dir()) / name).string();
}

// Writers (every head of layers 0..L-2) down the side, readers (layers 1..L-1) along the top.
void draw_composition(const std::string& path, const heads::CompositionReport& report) {
  const int64_t h = report.n_head;
  const auto writers = static_cast<size_t>((report.n_layer - 1) * h);
  std::vector<std::string> rows, cols;
  for (int64_t i = 0; i < (report.n_layer - 1) * h; ++i) {
    rows.push_back(head_label({i / h, i % h}));
    cols.push_back(head_label({1 + i / h, i % h}));
  }
  std::vector<plot::ValuePanel> panels = {{"Q", {}}, {"K", {}}, {"V", {}}};
  for (plot::ValuePanel& panel : panels) {
    panel.rows.assign(writers, std::vector<double>(writers, 0.0));
  }
  double top = 0.0;
  for (const heads::CompositionPair& p : report.pairs) {
    const auto r = static_cast<size_t>(p.from.layer * h + p.from.head);
    const auto c = static_cast<size_t>((p.to.layer - 1) * h + p.to.head);
    panels[0].rows[r][c] = p.score.q;
    panels[1].rows[r][c] = p.score.k;
    panels[2].rows[r][c] = p.score.v;
    top = std::max({top, p.score.q, p.score.k, p.score.v});
  }
  plot::save_value_grid(path, panels, rows, cols,
                        fmt::format("composition: writer head (rows) into reader head (columns); "
                                    "random baseline K {:.2f}", report.mean_baseline.k),
                        0.0, std::max(top, 1e-9));
}

// A recovery scale that holds 0 and 1 and every value drawn.
std::pair<double, double> recovery_scale(const std::vector<std::vector<double>>& rows) {
  double low = 0.0, high = 1.0;
  for (const auto& row : rows) {
    for (double v : row) {
      low = std::min(low, v);
      high = std::max(high, v);
    }
  }
  return {low, high};
}

void draw_patching(const std::string& heads_path, const std::string& residual_path,
                   const heads::PatchingReport& report, int64_t n_layer, int64_t n_head) {
  std::vector<std::vector<double>> rows(static_cast<size_t>(n_layer), std::vector<double>(static_cast<size_t>(n_head)));
  for (const heads::PatchRecovery& x : report.heads) {
    rows[static_cast<size_t>(x.head.layer)][static_cast<size_t>(x.head.head)] = x.recovery;
  }
  std::vector<std::string> layers, head_names;
  for (int64_t l = 0; l < n_layer; ++l) layers.push_back(fmt::format("layer {}", l));
  for (int64_t h = 0; h < n_head; ++h) head_names.push_back(fmt::format("head {}", h));
  auto [low, high] = recovery_scale(rows);
  plot::save_value_grid(heads_path, {{"recovery", rows}}, layers, head_names,
                        "activation patching: each head's output from the clean run", low, high);
  std::vector<std::string> bands;
  std::vector<std::vector<double>> residual(static_cast<size_t>(n_layer + 1));
  for (const heads::ResidualRecovery& x : report.residual) {
    if (x.layer == 0) bands.push_back(fmt::format("{}-{}", x.first, x.last - 1));
    residual[static_cast<size_t>(x.layer)].push_back(x.recovery);
  }
  layers.push_back("end");
  std::tie(low, high) = recovery_scale(residual);
  plot::save_value_grid(residual_path, {{"recovery", residual}}, layers, bands,
                        "activation patching: the residual stream at these positions", low, high);
}

void draw_prune_curves(const std::string& path, const std::vector<heads::PruneCurve>& curves) {
  plot::ChartPanel loss{"held-out loss", {}}, ratio{"second / first copy loss", {}};
  for (const heads::PruneCurve& c : curves) {
    plot::NamedSeries l{c.order, {}}, r{c.order, {}};
    for (size_t k = 0; k < c.loss.size(); ++k) {
      l.points.push_back({static_cast<double>(k), c.loss[k]});
      r.points.push_back({static_cast<double>(k), c.second_copy_ratio[k]});
    }
    loss.series.push_back(l);
    ratio.series.push_back(r);
  }
  plot::save_stacked_charts(path, loss, ratio, "heads removed",
                            "pruning: heads removed least important first, least ablation effect first, at random");
}

}  // namespace

MethodOutput composition_output(const heads::CompositionReport& report, HeatmapSet* pictures) {
  MethodOutput out{report.json(), "\n" + report.table()};
  if (report.pairs.empty()) return out;  // one layer: no head reads another
  const std::string path = picture_path(pictures, "composition.png");
  if (!path.empty()) {
    draw_composition(path, report);
    out.text += fmt::format("composition picture: {}\n", final_path(*pictures, "composition.png"));
  }
  return out;
}

MethodOutput importance_output(nn::GPT& model, const heads::HeadProbes& probes,
                               const heads::HeadReport& report) {
  const std::vector<heads::HeadImportance> text = heads::head_importance(model, probes.texts);
  const std::vector<heads::HeadImportance> copying = heads::in_context_importance(model, probes);
  std::string table = fmt::format(
      "\nimportance: mean |dL/dgate| of each head's output over {} probe windows and over {} random "
      "sequences said twice (normalised: divided by its layer's l2 norm)\n{:>5} {:>4}  {:<15} {:>9} "
      "{:>10} {:>12} {:>10}\n",
      probes.texts.size(), probes.num_random, "layer", "head", "role", "text raw", "normalised",
      "in-context", "normalised");
  for (size_t i = 0; i < text.size(); ++i) {
    const heads::HeadImportance& h = text[i];
    table += fmt::format("{:>5} {:>4}  {:<15} {:>9.4f} {:>10.3f} {:>12.4f} {:>10.3f}\n", h.head.layer,
                         h.head.head, role_of(report, h.head), h.raw, h.normalised, copying[i].raw,
                         copying[i].normalised);
  }
  return {{{"importance", heads::importance_json(text)}, {"importance_in_context", heads::importance_json(copying)}},
          table};
}

MethodOutput patching_output(nn::GPT& model, const heads::HeadProbes& probes,
                             const heads::HeadReport& report, HeatmapSet* pictures) {
  const heads::PatchingReport patching = heads::patch_heads(model, probes, report);
  MethodOutput out{patching.json(), "\n" + patching.table()};
  const std::string path = picture_path(pictures, "patching.png");
  if (!path.empty()) {
    draw_patching(path, picture_path(pictures, "patching_residual.png"), patching,
                  model.config().n_layer, model.config().n_head);
    out.text += fmt::format("patching pictures: {} and {}\n", final_path(*pictures, "patching.png"),
                            final_path(*pictures, "patching_residual.png"));
  }
  return out;
}

MethodOutput counterfactual_output(nn::GPT& model, const heads::HeadProbes& probes,
                                   const heads::HeadReport& report,
                                   const heads::CounterfactualOptions& options) {
  const std::vector<heads::HeadCounterfactual> heads =
      heads::attention_counterfactuals(model, probes.texts, options);
  std::string text = fmt::format(
      "\ncounterfactual attention: each head's pattern replaced on {} windows; mean total variation "
      "of the next-token distribution with a uniform and with a permuted pattern, and the largest "
      "Jensen-Shannon divergence from the pattern found that moves no prediction by more than {}\n"
      "{:>5} {:>4}  {:<15} {:>12} {:>13} {:>16}\n",
      probes.texts.size(), options.epsilon, "layer", "head", "role", "uniform tvd", "permuted tvd",
      "adversarial jsd");
  for (const heads::HeadCounterfactual& h : heads) {
    text += fmt::format("{:>5} {:>4}  {:<15} {:>12.3f} {:>13.3f} {:>16.3f}\n", h.head.layer,
                        h.head.head, role_of(report, h.head), h.uniform_tvd, h.permuted_tvd,
                        h.adversarial_jsd);
  }
  nlohmann::json json = {{"counterfactual", heads::counterfactual_json(heads)},
                         {"counterfactual_epsilon", options.epsilon}};
  return {json, text};
}

MethodOutput prune_curve_output(nn::GPT& model, const heads::HeadProbes& probes,
                                HeatmapSet* pictures) {
  const std::vector<heads::HeadImportance> importance = heads::head_importance(model, probes.texts);
  heads::HeadAblation ablation(model, probes, heads::AblationMode::zero);
  const std::vector<heads::PruneCurve> curves = heads::prune_curves(ablation, importance, ablation.each_head());
  std::string text = fmt::format("\npruning curve: held-out loss and second/first copy loss with the "
                                 "first k heads removed, in each order\n{:>3}", "k");
  for (const heads::PruneCurve& c : curves) text += fmt::format(" {:>20}", c.order);
  for (size_t k = 0; k < curves[0].loss.size(); ++k) {
    text += fmt::format("\n{:>3}", k);
    for (const heads::PruneCurve& c : curves) {
      text += fmt::format(" {:>12.3f} {:>6.0f}%", c.loss[k], 100.0 * c.second_copy_ratio[k]);
    }
  }
  const std::vector<heads::OutputChange> changes = heads::output_change_per_head(model, probes.texts);
  text += "\nl2 change of the logits per position when one head is pruned:";
  for (size_t i = 0; i < changes.size(); ++i) {
    const heads::OutputChange& c = changes[i];
    if (i == 0 || changes[i - 1].head.layer != c.head.layer) text += fmt::format("\nlayer {}:", c.head.layer);
    text += fmt::format(" {}:{:.2f}", c.head.head, c.l2);
  }
  text += "\n";
  nlohmann::json json = heads::prune_curves_json(curves);
  json["output_change"] = heads::output_change_json(changes);
  MethodOutput out{json, text};
  const std::string path = picture_path(pictures, "prune_curve.png");
  if (!path.empty()) {
    draw_prune_curves(path, curves);
    out.text += fmt::format("pruning picture: {}\n", final_path(*pictures, "prune_curve.png"));
  }
  return out;
}

}  // namespace tinygpt::analysis
