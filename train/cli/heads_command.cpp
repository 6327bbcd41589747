// tinygpt heads: score every attention head's role and draw its attention pattern; optionally
// remove heads (ablation) and attribute one prediction to the tokens before it.
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <regex>

#include "commands.hpp"
#include "pair_report.hpp"
#include "tinygpt/analysis/circuits.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/autograd/threads.hpp"
#include "tinygpt/data/dataset.hpp"
#include "tinygpt/heads/attribution.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/io/commit.hpp"
#include "tinygpt/plot/attribution_plot.hpp"
#include "tinygpt/train/checkpoint.hpp"
#include "tinygpt/train/run.hpp"

namespace tinygpt::cli {
namespace {

namespace fs = std::filesystem;

struct HeadsFlags {
  std::string model;
  std::string text;
  std::string out;
  std::string html;
  bool json = false;
  int threads = 0;
  std::string ablate = "zero";  // also when given without a mode
  std::string ablate_heads;     // "L.H,L.H"
  int64_t attribute = -1;       // query position, -1 = none
  int64_t pairs = 500;          // an encoder-decoder's held-out pairs to score on
  bool composition = false;
  bool importance = false;
  bool patch = false;
  bool counterfactual = false;
  bool prune_curve = false;
  double epsilon = heads::CounterfactualOptions{}.epsilon;
};

// The dataset's refusal of the run's own text (it shrank since training) in the run's terms: its
// context and validation share were set when it trained, not by a flag of this command, so the
// advice to change them goes too.
std::string in_run_terms(const Error& e) {
  static const SettingNames kRun = {{"block_size", "the model's context of"},
                                    {"val_fraction", "the run's validation share"}};
  return std::regex_replace(in_terms_of(e, kRun), std::regex("; use a longer text.*$"), "");
}

// The probes of a checkpoint: --text if given, else the run's own validation windows (its data
// and split as trainer_state.json records them, as training probed them).
heads::ProbeSet checkpoint_probes(const std::string& dir, const train::LoadedModel& loaded,
                                  const std::string& text) {
  if (!text.empty()) {
    return heads::text_probes(encode_flag("--text", text, *loaded.tokenizer), *loaded.tokenizer,
                              loaded.config.block_size);
  }
  const std::optional<train::RunState> run = train::trained_on(dir);
  if (!run) throw UsageError(fmt::format("{} does not say what it was trained on; pass --text", dir));
  const train::RunState& state = *run;
  const std::string text_now = read_run_text(state, "--text");
  const data::TextDataset dataset = [&] {
    try {
      return data::make_dataset(text_now, state.data_source, *loaded.tokenizer,
                                loaded.config.block_size, state.val_fraction);
    } catch (const ValueError& e) {
      throw ValueError(in_run_terms(e));
    }
  }();
  return heads::dataset_probes(dataset, *loaded.tokenizer, state.data_source);
}

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

// --attribute's picture at `png`: each layer's raw attention, the rollout and gradient x input
// of each earlier token.
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

// --attribute POS: the table, and the agreement over all positions of the text (`png`: where
// draw_attribution drew it, or "").
nlohmann::json show_attribution(nn::GPT& model, const data::Tokenizer& tokenizer,
                                const std::vector<int64_t>& ids, int64_t pos,
                                const heads::Attribution& a, const std::string& png, bool print) {
  const std::vector<std::string> labels = token_labels(tokenizer, ids, pos);
  const std::vector<double> mean = mean_spearman(model, ids);
  nlohmann::json out = {{"position", pos},
                        {"target", tokenizer.token(a.target)},
                        {"attention", a.attention},
                        {"rollout", a.rollout},
                        {"grad_x_input", a.grad_x_input},
                        {"attention_spearman", a.attention_spearman},
                        {"rollout_spearman", a.rollout_spearman},
                        {"mean_attention_spearman", std::vector<double>(mean.begin(), mean.end() - 1)},
                        {"mean_rollout_spearman", mean.back()}};
  if (!print) return out;
  fmt::print("\nattribution of the prediction at position {} of \"{}\" ({} '{}'):\n{}",
             pos, tokenizer.decode(ids), a.target_is_next ? "the next character" : "the model's top guess",
             tokenizer.token(a.target), heads::attribution_table(a, labels));
  std::string line = "mean over query positions 2.." + std::to_string(ids.size() - 1) + ":";
  for (size_t l = 0; l + 1 < mean.size(); ++l) line += fmt::format(" attention layer {} {:.2f},", l, mean[l]);
  fmt::print("{} rollout {:.2f}\n", line, mean.back());
  if (!png.empty()) fmt::print("attribution picture: {}\n", png);
  return out;
}

// --html names the page's file, which the page replaces: never a file of a checkpoint, by its
// name or through a link to it.
void check_page_target(const std::string& html) {
  std::error_code ec;
  const fs::path target = fs::is_symlink(html, ec) ? fs::canonical(html, ec) : fs::path(html);
  if (train::is_checkpoint_file(html) || (!ec && train::is_checkpoint_file(target.string()))) {
    throw UsageError(fmt::format("--html {} is a file of the checkpoint in {}; name another file",
                                 html, target.parent_path().string()));
  }
}

// Nor the text the model trained on (by any path or link to it, or another name of its bytes):
// the run could never be resumed or probed on it again. A path through a folder that does not
// exist ("x/../text.txt") is compared as the system would resolve it once written.
void check_page_not_data(const std::string& html, const std::string& model) {
  const std::optional<train::RunState> run = train::trained_on(model);
  std::error_code ec;
  if (!run || !fs::is_regular_file(run->data_source, ec)) return;
  if (fs::equivalent(html, run->data_source, ec) ||
      fs::weakly_canonical(html, ec) == fs::weakly_canonical(run->data_source, ec)) {
    throw UsageError(fmt::format("--html {} is the text the model in {} trained on ({}); name "
                                 "another file", html, model, run->data_source));
  }
}

// --ablate-heads as heads::parse_head_list reads it, refused while parsing when no model could
// have those heads ("x", "1.", "0.1,0.1"); which heads the model has is checked once it is loaded.
CLI::Validator head_list_syntax() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        constexpr int64_t kAny = std::numeric_limits<int64_t>::max();
        try {
          heads::parse_head_list(text, kAny, kAny);
        } catch (const ValueError& e) {
          return e.in_terms();
        }
        return "";
      },
      "");
}

// <model>/heads, or "" (no pictures, said once on stderr) when the checkpoint's folder cannot
// be written: the scores and the page need no pictures.
std::string default_heatmap_dir(const std::string& model) {
  try {
    io::check_writable(model);
  } catch (const io::IOError&) {
    fmt::print(stderr, "tinygpt: note: {} is not writable, so no heatmaps are drawn; pass --out "
                       "DIR to draw them elsewhere\n", model);
    return "";
  }
  return (fs::path(model) / analysis::kHeatmapDir).string();
}

// draw(), ended by a stop signal while it draws the heatmaps into `dir`: none are written then.
// Without a `dir` nothing is drawn, and a signal ends the command at once as usual.
void draw_or_stop(const std::string& dir, const std::function<void()>& draw) {
  if (dir.empty()) return draw();
  if (const int signal = draw_unless_stopped(draw)) {
    fmt::print(stderr, "tinygpt: interrupted while drawing the heatmaps; none were written to {} "
                       "(an earlier set there is as it was)\n", dir);
    throw Interrupted{signal};
  }
}

// One circuit method's result: under `key` in the JSON, its table printed otherwise.
void add_method(nlohmann::json& extra, const char* key, const analysis::MethodOutput& out, bool json) {
  extra[key] = out.json;
  if (!json) fmt::print("{}", out.text);
}

}  // namespace

void add_heads_command(CLI::App& app) {
  auto flags = std::make_shared<HeadsFlags>();
  CLI::App* cmd = app.add_subcommand("heads", "Score each attention head's role and draw its attention");
  set_memory_advice(*cmd, "lower --pairs (an encoder-decoder's) or pass a shorter --text, or "
                          "look at a smaller model than --model's");
  cmd->add_option("--model", flags->model, "checkpoint directory written by tinygpt train")->type_name("DIR")->required();
  cmd->add_option("--text", flags->text, "probe text (default: windows of the run's own data)");
  cmd->add_option("--out", flags->out, "directory for the heatmaps (default: <model>/heads)")->type_name("DIR");
  cmd->add_flag("--json", flags->json, "print the report as one JSON object instead of the table: heads (scores and role of each), in_context (first/second copy loss), and what --ablate-heads or --attribute add");
  cmd->add_option("--html", flags->html,
                  "also write the attention explorer, one self-contained HTML page, to this file (an "
                  "encoder-decoder's shows the first held-out pair with its cross-attention)")
      ->type_name("FILE");
  cmd->add_option("--ablate", flags->ablate,
                  "remove each head in turn (zero: its output set to 0; mean: to its mean output "
                  "on the text) and report the in-context ratio and text loss without it")
      ->expected(0, 1)->type_name("[zero|mean]")
      ->check(CLI::IsMember({"zero", "mean"}).description(""))->capture_default_str();
  cmd->add_option("--ablate-heads", flags->ablate_heads,
                  "remove these heads together (LAYER.HEAD,...; mode from --ablate, default zero)")
      ->type_name("L.H,L.H")->check(head_list_syntax());
  cmd->add_option("--attribute", flags->attribute,
                  "for this query position of the picture text (from 1): raw attention per layer, "
                  "attention rollout and gradient x input of each earlier token (printed and drawn)")
      ->check(integer_in(1, std::numeric_limits<int64_t>::max()));
  cmd->add_option("--pairs", flags->pairs,
                  "an encoder-decoder: score its heads (and --ablate its cross-attention heads) on "
                  "this many held-out pairs of its run's data")
      ->check(integer_in(1, int64_t{1} << 30))->capture_default_str();
  cmd->add_flag("--composition", flags->composition,
                "Q-, K- and V-composition of every head pair from the weights, beside random "
                "matrices of the same shapes (JSON \"composition\", picture composition.png)");
  cmd->add_flag("--importance", flags->importance,
                "each head's importance: mean |dL/dgate| of a gate on its output over the probe "
                "windows, raw and normalised per layer (JSON \"importance\")");
  cmd->add_flag("--patch", flags->patch,
                "activation patching from random sequences said twice into the same second copies "
                "after other first copies: recovery per head, per residual layer and position band, "
                "and along the previous-token -> induction paths (JSON \"patching\", "
                "\"residual_patching\", \"path_patching\"; pictures patching*.png)");
  cmd->add_flag("--counterfactual", flags->counterfactual,
                "replace each head's attention by a uniform, a permuted and an adversarial pattern "
                "(the farthest in Jensen-Shannon divergence that moves no prediction by more than "
                "--epsilon in total variation) (JSON \"counterfactual\")");
  cmd->add_option("--epsilon", flags->epsilon,
                  "--counterfactual: how far in total variation the adversarial pattern may move a prediction")
      ->check(CLI::Range(1e-6, 1.0))->capture_default_str();
  cmd->add_flag("--prune-curve", flags->prune_curve,
                "held-out loss and in-context ratio against the number of heads removed, least "
                "important first, least ablation effect first and at random (JSON \"prune_curve\", "
                "picture prune_curve.png)");
  add_threads_flag(*cmd, flags->threads);
  cmd->callback([flags, cmd] {
    set_num_threads(flags->threads);
    if (!flags->html.empty()) check_page_target(flags->html);
    train::LoadedModel loaded = train::load_any_model(flags->model);
    if (!flags->html.empty()) check_page_not_data(flags->html, flags->model);
    if (loaded.is_encoder_decoder()) {
      for (const char* flag : {"--text", "--ablate-heads", "--attribute", "--composition",
                               "--importance", "--patch", "--counterfactual",
                               "--prune-curve"}) {
        if (cmd->count(flag) > 0) {
          throw UsageError(fmt::format("{}: {} is an encoder-decoder; its heads are scored on the "
                                       "run's held-out pairs (--pairs, --ablate, --json, --out, --html)",
                                       flag, flags->model));
        }
      }
      if (flags->ablate != "zero") {
        throw UsageError("--ablate: an encoder-decoder's cross-attention heads are removed by zeroing (zero)");
      }
      PairHeadsOutput out;
      out.pairs = flags->pairs;
      out.ablate = cmd->count("--ablate") > 0;
      out.json = flags->json;
      out.heatmap_dir = flags->out.empty() ? default_heatmap_dir(flags->model) : flags->out;
      out.html = flags->html;
      return draw_or_stop(out.heatmap_dir, [&] { report_pair_heads(flags->model, loaded, out); });
    }
    if (cmd->count("--pairs") > 0) throw UsageError(fmt::format("--pairs: {} is a GPT; it takes --text", flags->model));
    const std::string obstacle = heads::probe_obstacle(loaded.config);
    if (!obstacle.empty()) throw ValueError(fmt::format("{}: {}", flags->model, obstacle));
    const bool ablate_each = cmd->count("--ablate") > 0;
    const heads::AblationMode mode = heads::parse_ablation_mode(flags->ablate);
    std::vector<heads::HeadRef> removed;
    if (!flags->ablate_heads.empty()) {
      try {  // a head the model does not have: the command line's mistake, as --attribute's
        removed = heads::parse_head_list(flags->ablate_heads, loaded.config.n_layer, loaded.config.n_head);
      } catch (const ValueError& e) {
        throw UsageError("--ablate-heads: ", e);
      }
    }
    const heads::ProbeSet set = checkpoint_probes(flags->model, loaded, flags->text);
    const int64_t picture = static_cast<int64_t>(set.picture.size());
    if (flags->attribute >= picture) {  // before any work or output
      throw UsageError(fmt::format("--attribute {}: the probe text has {} characters; a position "
                                   "from 1 to {} has earlier tokens to attribute to",
                                   flags->attribute, picture, picture - 1));
    }
    analysis::ReportOptions out;
    out.heatmap_dir = flags->out.empty() ? default_heatmap_dir(flags->model) : flags->out;
    out.json = flags->json;
    out.html = flags->html;
    out.run_dir = flags->model;
    nn::GPT& model = *loaded.model;

    std::optional<heads::HeadAblation> ablation;
    std::optional<heads::EachHeadAblation> each;
    if (ablate_each || !removed.empty()) ablation.emplace(model, set.probes, mode);
    if (ablate_each) each = heads::ablate_each_head(*ablation);
    out.ablation = each ? &*each : nullptr;
    // The attribution picture is one of the set, replaced with it.
    std::optional<heads::Attribution> attribution;
    std::string attribution_png;
    if (flags->attribute >= 0) {
      attribution = heads::attribute(model, set.picture, flags->attribute);
      out.draw_also = [&](analysis::HeatmapSet& pictures) {
        const std::string name = fmt::format("attribution_pos{}.png", flags->attribute);
        draw_attribution(*attribution, *loaded.tokenizer, set.picture, flags->attribute, pictures.path(name));
        attribution_png = (fs::path(out.heatmap_dir) / name).string();
      };
    }
    heads::HeadReport report;
    draw_or_stop(out.heatmap_dir, [&] { report = analysis::report_heads(model, *loaded.tokenizer, set, out); });

    nlohmann::json extra = nlohmann::json::object();
    if (!removed.empty()) {
      const heads::AblationResult r = ablation->run(removed);
      const heads::AblationResult& base = ablation->baseline();
      extra["ablated_heads"] = heads::head_list_str(removed);
      extra["ablation"] = heads::ablation_mode_name(mode);
      extra["second_copy_ratio"] = base.second_copy_ratio;
      extra["ablated_second_copy_ratio"] = r.second_copy_ratio;
      extra["loss"] = base.text_loss;
      extra["ablated_loss_delta"] = r.text_loss - base.text_loss;
      if (!flags->json) {
        fmt::print("\nremoving heads {} together ({}): second/first copy loss {:.0f}% -> {:.0f}%, "
                   "text loss {:.3f} -> {:.3f} ({:+.3f})\n",
                   heads::head_list_str(removed), heads::ablation_mode_name(mode),
                   100.0 * base.second_copy_ratio, 100.0 * r.second_copy_ratio, base.text_loss,
                   r.text_loss, r.text_loss - base.text_loss);
      }
    }
    if (flags->attribute >= 0) {
      extra["attribution"] =
          show_attribution(model, *loaded.tokenizer, set.picture, flags->attribute, *attribution,
                           attribution_png, !flags->json);
    }
    if (flags->composition) add_method(extra, "composition", analysis::composition_output(model, out.heatmap_dir), flags->json);
    if (flags->importance) {
      add_method(extra, "importance", analysis::importance_output(model, set.probes, report), flags->json);
    }
    if (flags->patch) {
      const analysis::MethodOutput patching = analysis::patching_output(model, set.probes, report, out.heatmap_dir);
      if (!flags->json) fmt::print("{}", patching.text);
      extra.update(patching.json);
    }
    if (flags->counterfactual) {
      heads::CounterfactualOptions options;
      options.epsilon = flags->epsilon;
      const analysis::MethodOutput counterfactual =
          analysis::counterfactual_output(model, set.probes, report, options);
      if (!flags->json) fmt::print("{}", counterfactual.text);
      extra.update(counterfactual.json);
    }
    if (flags->prune_curve) {
      add_method(extra, "prune_curve", analysis::prune_curve_output(model, set.probes, out.heatmap_dir), flags->json);
    }
    if (flags->json) {  // what the table says, and what the in-context line under it says
      extra["heads"] = each ? each->heads_json(report) : report.heads_json();
      extra["in_context"] = report.in_context_json();
      fmt::print("{}\n", json_text(extra, 2));
    }
  });
}

}  // namespace tinygpt::cli
