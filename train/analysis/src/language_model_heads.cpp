// tinygpt heads on a language model: the head table and pictures (report_heads), with what the
// request adds: heads removed together, one prediction's attribution, the circuit methods.
#include <cmath>
#include <filesystem>

#include "command_errors.hpp"
#include "language_model_commands.hpp"
#include "run_probes.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/heads/attribution.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/plot/attribution_plot.hpp"

namespace tinygpt::analysis {
namespace {

namespace fs = std::filesystem;

// The mean rank correlation with gradient x input over every query position with at least two
// earlier tokens: per layer's raw attention, then rollout.
std::vector<double> mean_spearman(nn::GPT& model, const std::vector<int64_t>& ids) {
  std::vector<double> total;
  std::vector<int64_t> counts;
  for (int64_t pos = 2; pos < static_cast<int64_t>(ids.size()); ++pos) {
    const heads::Attribution a = heads::attribute(model, ids, pos);
    std::vector<double> values = a.attention_spearman;
    values.push_back(a.rollout_spearman);
    total.resize(values.size(), 0.0);
    counts.resize(values.size(), 0);
    for (size_t i = 0; i < values.size(); ++i) {
      if (std::isnan(values[i])) continue;
      total[i] += values[i];
      ++counts[i];
    }
  }
  for (size_t i = 0; i < total.size(); ++i) total[i] = counts[i] > 0 ? total[i] / counts[i] : NAN;
  return total;
}

// The tokens of `ids` up to `pos`.
std::vector<std::string> token_labels(const data::Tokenizer& tokenizer,
                                      const std::vector<int64_t>& ids, int64_t pos) {
  std::vector<std::string> labels;
  for (int64_t j = 0; j <= pos; ++j) labels.push_back(tokenizer.token(ids[static_cast<size_t>(j)]));
  return labels;
}

// The attribution's picture at `png`: each layer's raw attention, the rollout and gradient x
// input of each earlier token.
void draw_attribution(const heads::Attribution& a, const data::Tokenizer& tokenizer,
                      const std::vector<int64_t>& ids, int64_t pos, const std::string& png) {
  std::vector<std::vector<double>> rows = a.attention;
  std::vector<std::string> names;
  for (size_t l = 0; l < a.attention.size(); ++l) names.push_back(fmt::format("attention L{}", l));
  rows.push_back(a.rollout);
  names.push_back("rollout");
  rows.push_back(a.grad_x_input);
  names.push_back("grad x input");
  plot::save_attribution_plot(
      png, rows, names, token_labels(tokenizer, ids, pos),
      fmt::format("position {} ('{}') predicting '{}'", pos, tokenizer.token(ids[static_cast<size_t>(pos)]),
                  tokenizer.token(a.target)));
}

// The attribution of position `pos`: its table, and the agreement over all positions of the
// text (`png`: where draw_attribution drew it, or ""), printed to `out` unless it is null.
nlohmann::json show_attribution(nn::GPT& model, const data::Tokenizer& tokenizer,
                                const std::vector<int64_t>& ids, int64_t pos,
                                const heads::Attribution& a, const std::string& png, std::FILE* out) {
  const std::vector<std::string> labels = token_labels(tokenizer, ids, pos);
  const std::vector<double> mean = mean_spearman(model, ids);
  nlohmann::json result = {{"position", pos},
                           {"target", tokenizer.token(a.target)},
                           {"attention", a.attention},
                           {"rollout", a.rollout},
                           {"grad_x_input", a.grad_x_input},
                           {"attention_spearman", a.attention_spearman},
                           {"rollout_spearman", a.rollout_spearman},
                           {"mean_attention_spearman", std::vector<double>(mean.begin(), mean.end() - 1)},
                           {"mean_rollout_spearman", mean.back()}};
  if (out == nullptr) return result;
  fmt::print(out, "\nattribution of the prediction at position {} of \"{}\" ({} '{}'):\n{}", pos,
             tokenizer.decode(ids), a.target_is_next ? "the next character" : "the model's top guess",
             tokenizer.token(a.target), heads::attribution_table(a, labels));
  std::string line = "mean over query positions 2.." + std::to_string(ids.size() - 1) + ":";
  for (size_t l = 0; l + 1 < mean.size(); ++l) line += fmt::format(" attention layer {} {:.2f},", l, mean[l]);
  fmt::print(out, "{} rollout {:.2f}\n", line, mean.back());
  if (!png.empty()) fmt::print(out, "attribution picture: {}\n", png);
  return result;
}

// The heads removed together: both losses and the in-context ratio, beside the intact model's.
nlohmann::json show_removed(heads::HeadAblation& ablation, const std::vector<heads::HeadRef>& removed,
                            heads::AblationMode mode, std::FILE* out) {
  const heads::AblationResult r = ablation.run(removed);
  const heads::AblationResult& base = ablation.baseline();
  if (out != nullptr) {
    fmt::print(out, "\nremoving heads {} together ({}): second/first copy loss {:.0f}% -> {:.0f}%, "
               "text loss {:.3f} -> {:.3f} ({:+.3f})\n",
               heads::head_list_str(removed), heads::ablation_mode_name(mode),
               100.0 * base.second_copy_ratio, 100.0 * r.second_copy_ratio, base.text_loss,
               r.text_loss, r.text_loss - base.text_loss);
  }
  return {{"ablated_heads", heads::head_list_str(removed)},
          {"ablation", heads::ablation_mode_name(mode)},
          {"second_copy_ratio", base.second_copy_ratio},
          {"ablated_second_copy_ratio", r.second_copy_ratio},
          {"loss", base.text_loss},
          {"ablated_loss_delta", r.text_loss - base.text_loss}};
}

}  // namespace

// The head list of the request, checked against the model's heads (a head it does not have is
// the request's mistake).
std::vector<heads::HeadRef> LanguageModelCommands::removed_heads(const HeadsRequest& r) {
  const nn::GPTConfig& c = gpt("heads").config();
  if (r.ablate_heads.empty()) return {};
  try {
    return heads::parse_head_list(r.ablate_heads, c.n_layer, c.n_head);
  } catch (const ValueError& e) {
    std::vector<MessagePart> parts = {setting("ablate_heads"), ": "};
    parts.insert(parts.end(), e.parts().begin(), e.parts().end());
    throw SettingError(Operation("TaskCommands"), std::move(parts));
  }
}

nlohmann::json LanguageModelCommands::heads(const HeadsRequest& r) {
  if (r.given.count("pairs") > 0) refuse("pairs", {fmt::format("{} is {}; it takes ", model_dir_, what()), setting("text")});
  if (!r.mask_view_dir.empty()) refuse("mask_view", {fmt::format("{} is {}; the [MASK] view is an encoder's", model_dir_, what())});
  nn::GPT& model = gpt("heads");
  const std::string obstacle = heads::probe_obstacle(model.config());
  if (!obstacle.empty()) throw ValueError(fmt::format("{}: {}", model_dir_, obstacle));
  const heads::AblationMode mode = heads::parse_ablation_mode(r.ablate);
  const std::vector<heads::HeadRef> removed = removed_heads(r);
  const heads::ProbeSet set = request_probes(r, model_dir_, task_.tokenizer(), task_.causal_lm().shape().block_size);
  const int64_t picture = static_cast<int64_t>(set.picture.size());
  if (r.attribute >= picture) {  // before any work or output
    throw SettingError(Operation("TaskCommands"),
                       {named("attribute", r.attribute),
                        fmt::format(": the probe text has {} characters; a position from 1 to {} "
                                    "has earlier tokens to attribute to", picture, picture - 1)});
  }
  std::FILE* out = r.json ? nullptr : r.out;
  ReportOptions report_options;
  report_options.heatmap_dir = r.heatmap_dir;
  report_options.json = r.json;
  report_options.html = r.html;
  report_options.run_dir = model_dir_;
  report_options.text = r.out;
  std::optional<heads::HeadAblation> ablation;
  std::optional<heads::EachHeadAblation> each;
  if (r.ablate_each || !removed.empty()) ablation.emplace(model, set.probes, mode);
  if (r.ablate_each) each = heads::ablate_each_head(*ablation);
  report_options.ablation = each ? &*each : nullptr;
  // The attribution and circuit pictures are of the set, replaced with it.
  std::optional<heads::Attribution> attribution;
  std::string attribution_png;
  if (r.attribute >= 0) attribution = heads::attribute(model, set.picture, r.attribute);
  std::optional<heads::CompositionReport> composition;
  if (r.composition) composition = heads::composition_scores(model);
  report_options.composition = composition ? &*composition : nullptr;
  std::vector<CircuitOutput> circuits;
  report_options.also = [&](const heads::HeadReport& scored, HeatmapSet* pictures) {
    if (attribution && pictures != nullptr) {
      const std::string name = fmt::format("attribution_pos{}.png", r.attribute);
      draw_attribution(*attribution, task_.tokenizer(), set.picture, r.attribute, pictures->path(name));
      attribution_png = (fs::path(pictures->dir()) / name).string();
    }
    circuits = circuit_methods(r, set.probes, scored, composition, pictures);
  };
  heads::HeadReport report;
  r.draw([&] { report = report_heads(model, task_.tokenizer(), set, report_options); });
  nlohmann::json result = nlohmann::json::object();
  if (!removed.empty()) result.update(show_removed(*ablation, removed, mode, out));
  if (r.attribute >= 0) {
    result["attribution"] = show_attribution(model, task_.tokenizer(), set.picture, r.attribute,
                                             *attribution, attribution_png, out);
  }
  for (const CircuitOutput& c : circuits) {
    if (c.key.empty()) {
      result.update(c.out.json);
    } else {
      result[c.key] = c.out.json;
    }
    if (out != nullptr) fmt::print(out, "{}", c.out.text);
  }
  // What the table says, and what the in-context line under it says.
  result["heads"] = each ? each->heads_json(report) : report.heads_json();
  result["in_context"] = report.in_context_json();
  return result;
}

// The circuit methods the request asks for, on the report's probes; their pictures go into
// `pictures` (may be null), the set of the head report's heatmaps.
std::vector<CircuitOutput> LanguageModelCommands::circuit_methods(
    const HeadsRequest& r, const heads::HeadProbes& probes, const heads::HeadReport& report,
    const std::optional<heads::CompositionReport>& composition, HeatmapSet* pictures) {
  nn::GPT& model = gpt("heads");
  std::vector<CircuitOutput> out;
  // A stop signal is held off while the set is drawn: each method first drops the set if one came.
  const auto run = [&](const char* key, const std::function<MethodOutput()>& method) {
    if (pictures != nullptr && io::interrupt_signal() != 0) throw DrawingInterrupted(io::interrupt_signal());
    out.push_back({key, method()});
  };
  if (composition) run("composition", [&] { return composition_output(*composition, pictures); });
  if (r.importance) run("", [&] { return importance_output(model, probes, report); });
  if (r.patch) run("", [&] { return patching_output(model, probes, report, pictures); });
  if (r.counterfactual) {
    heads::CounterfactualOptions options;
    options.epsilon = r.epsilon;
    run("", [&] { return counterfactual_output(model, probes, report, options); });
  }
  if (r.prune_curve) run("prune_curve", [&] { return prune_curve_output(model, probes, pictures); });
  return out;
}

}  // namespace tinygpt::analysis
