#include "encoder_commands.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "command_errors.hpp"
#include "explorer_page.hpp"
#include "run_probes.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/data/data_source.hpp"
#include "tinygpt/heads/encoder_heads.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/plot/token_label.hpp"
#include "tinygpt/plot/value_grid.hpp"
#include "tinygpt/train/bert_files.hpp"
#include "tinygpt/train/masked_lm_eval.hpp"

namespace tinygpt::analysis {
namespace {

// The fixed masking an evaluation scores, so that two evaluations of one model agree.
constexpr uint64_t kEvalMaskingSeed = 0;
// The windows pseudo-perplexity reads: each costs a pass of its length rows, so a whole held-out
// split of a large text would take minutes.
constexpr int64_t kPseudoWindows = 256;

void print_encoder_heads(std::FILE* out, const heads::EncoderProbes& probes,
                         const std::vector<heads::EncoderHeadScores>& scores,
                         const heads::CopyAblation* ablation, bool each) {
  fmt::print(out, "{} text windows and {} echo documents\n  head  role            score  prev   next   "
             "self   sink   copy   local  entropy{}\n", probes.texts.size(), probes.echoes.size(),
             each ? "  second-copy accuracy without it" : "");
  for (size_t k = 0; k < scores.size(); ++k) {
    const heads::EncoderHeadScores& h = scores[k];
    fmt::print(out, "  {}.{:<3} {:<15} {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}", h.layer,
               h.head, h.role, h.role_score, h.previous_token, h.next_token, h.self, h.sink, h.copy,
               h.local, h.entropy);
    if (each) fmt::print(out, "     {:.3f}", ablation->without_head[k]);
    fmt::print(out, "\n");
  }
  if (ablation == nullptr) {
    fmt::print(out, "copy heads: the model's context holds no echo document of two characters or more\n");
    return;
  }
  fmt::print(out, "second-copy masked accuracy {:.3f}; without the copy heads {} together {:.3f}, without "
             "as many others ({}) {:.3f}\n", ablation->accuracy, heads::head_list_str(ablation->copy_heads),
             ablation->without_copy_heads, heads::head_list_str(ablation->other_heads),
             ablation->without_other_heads);
}

// The guesses the [MASK] view shows at each mask, as tinygpt fill's default.
constexpr int64_t kMaskGuesses = 5;

// What the [MASK] view shows of a framed picture: every head's row from each of its masks, and
// the model's guesses there (the same masks, in the same order).
struct MaskView {
  std::vector<heads::MaskRows> rows;
  std::vector<train::MaskFill> fills;
};

MaskView mask_view(nn::BertForMaskedLM& model, const std::vector<int64_t>& picture, const std::vector<Tensor>& maps) {
  const std::vector<int64_t> text(picture.begin() + 1, picture.end() - 1);  // without [CLS] and [SEP]
  return {heads::mask_rows(maps, picture), train::fill_masks(model, text, kMaskGuesses)};
}

nlohmann::json top_json(const train::MaskFill& fill, const data::Tokenizer& tokenizer) {
  nlohmann::json top = nlohmann::json::array();
  for (const auto& [id, prob] : fill.top) top.push_back({{"token", tokenizer.token(id)}, {"prob", prob}});
  return top;
}

// {"tokens": the framed picture's, "masks": [{"position" (in the text, as fill counts it), "query"
// (in "tokens"), "top", "heads": [{"layer", "head", "row": its weights over "tokens"}]}]}
nlohmann::json mask_view_json(const MaskView& view, const std::vector<int64_t>& picture,
                              const data::Tokenizer& tokenizer, int64_t heads) {
  nlohmann::json tokens = nlohmann::json::array(), masks = nlohmann::json::array();
  for (const int64_t id : picture) tokens.push_back(tokenizer.token(id));
  for (size_t k = 0; k < view.rows.size(); ++k) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < view.rows[k].rows.size(); ++i) {
      const auto index = static_cast<int64_t>(i);
      rows.push_back({{"layer", index / heads}, {"head", index % heads}, {"row", view.rows[k].rows[i]}});
    }
    masks.push_back({{"position", view.fills[k].position}, {"query", view.rows[k].query},
                     {"top", top_json(view.fills[k], tokenizer)}, {"heads", rows}});
  }
  return {{"tokens", tokens}, {"masks", masks}};
}

// One picture per mask in `dir`, mask_<position>.png: every head's row from it (a head a row,
// layer by layer), over the framed picture's tokens. Returns the files' paths.
std::vector<std::string> draw_mask_view(const std::string& dir, const MaskView& view, const std::vector<int64_t>& picture,
                                        const data::Tokenizer& tokenizer, const std::vector<heads::EncoderHeadScores>& scores) {
  io::create_directory(dir, "the [MASK] view's directory");
  std::vector<std::string> labels, head_names, paths;
  for (const int64_t id : picture) labels.push_back(plot::visible_token(tokenizer.token(id)));
  for (const heads::EncoderHeadScores& h : scores) head_names.push_back(fmt::format("L{} H{} {}", h.layer, h.head, h.role));
  for (size_t k = 0; k < view.rows.size(); ++k) {
    std::vector<std::vector<double>> rows;
    for (const auto& row : view.rows[k].rows) rows.emplace_back(row.begin(), row.end());
    std::vector<std::string> guesses;
    for (const auto& [id, prob] : view.fills[k].top) guesses.push_back(fmt::format("{} {:.2f}", plot::visible_token(tokenizer.token(id)), prob));
    const std::string path = (std::filesystem::path(dir) / fmt::format("mask_{}.png", view.fills[k].position)).string();
    plot::save_value_grid(path, {{"", rows}}, head_names, labels,
                          fmt::format("where [MASK] at position {} attends; guesses {}", view.fills[k].position,
                                      fmt::join(guesses, ", ")),
                          0.0, 1.0);
    paths.push_back(path);
  }
  return paths;
}

std::string score_line(const train::MaskedLMScore& s) {
  return fmt::format("masked loss {:.4f}, masked accuracy {:.4f} over {} masked positions in {} windows",
                     s.loss, s.accuracy, s.masked, s.windows);
}

}  // namespace

EncoderCommands::EncoderCommands(train::EncoderTask& task, std::string model_dir)
    : task_(task), model_dir_(std::move(model_dir)) {}

SampleOutput EncoderCommands::sample(const SampleRequest&) {
  refuse("prompt", {fmt::format("{} is an encoder (a masked LM), which generates no text; fill "
                                "its [MASK]s with tinygpt fill", model_dir_)});
}

MethodOutput EncoderCommands::evaluate(const EvalRequest& r) {
  if (r.block > 0) refuse("block", {fmt::format("{} is an encoder, which reads windows of its own context", model_dir_)});
  const data::TextDataset dataset = data::make_dataset(r.text, data::absolute_source(r.data_source),
                                                       task_.tokenizer(), task_.window(), r.val_fraction, r.split);
  if (dataset.num_windows(r.split) == 0) {
    throw ValueError(fmt::format("{}: the {} split is shorter than one window of {} characters",
                                 r.data_source, r.split_name, task_.window() + 1));
  }
  const train::MaskedLMScore s = train::score_masked_lm(task_.bert(), dataset, r.split, task_.masking(),
                                                        r.batch, kEvalMaskingSeed);
  MethodOutput out{{{"masked_loss", s.loss}, {"masked_accuracy", s.accuracy}, {"masked", s.masked},
                    {"windows", s.windows}},
                   fmt::format("{} split of {}: {}", r.split_name, r.data_source, score_line(s))};
  if (r.pseudo) {
    const double ppl = train::pseudo_perplexity(task_.bert(), dataset, r.split, kPseudoWindows);
    const int64_t windows = std::min(kPseudoWindows, s.windows);
    out.json["pseudo_perplexity"] = ppl;
    out.json["pseudo_windows"] = windows;
    out.text += fmt::format("; pseudo-perplexity {:.3f} over the first {} windows", ppl, windows);
  }
  out.text += "\n";
  return out;
}

nlohmann::json EncoderCommands::heads(const HeadsRequest& r) {
  for (const char* name : {"pairs", "ablate_heads", "attribute", "composition", "importance", "patch",
                           "counterfactual", "prune_curve"}) {
    if (r.given.count(name) > 0) refuse(name, {fmt::format("{} is {}; its heads take ", model_dir_, what()), setting("text"), " and ", setting("ablate")});
  }
  if (r.ablate_each && r.ablate != "zero") refuse("ablate", {fmt::format("{} is {}; its heads are ablated by zeroing them", model_dir_, what())});
  if (!r.mask_view_dir.empty() && r.text.empty()) {
    refuse("mask_view", {"draws where the [MASK]s of a text attend: give it with ", setting("text")});
  }
  nn::BertForMaskedLM& model = task_.bert();
  const heads::EncoderProbes probes = heads::encoder_probes(
      request_probes(r, model_dir_, task_.tokenizer(), task_.window()), task_.tokenizer(),
      model.config().max_position_embeddings);
  const auto masks_in_picture = std::count(probes.picture.begin(), probes.picture.end(), data::MaskedLMTokenizer::kMask);
  if (!r.mask_view_dir.empty() && masks_in_picture == 0) {
    refuse("text", {fmt::format("has no [MASK] within the model's {} characters for ", task_.window()), setting("mask_view"),
                    " to show (write one, as in \"the c[MASK]t\")"});
  }
  const std::vector<heads::EncoderHeadScores> scores = heads::score_encoder_heads(model, probes);
  std::optional<heads::CopyAblation> ablation;
  if (!probes.echoes.empty()) ablation = heads::ablate_copy_heads(model, probes.echoes, scores, r.ablate_each);
  const heads::CopyAblation* each = r.ablate_each && ablation ? &*ablation : nullptr;
  if (!r.json) print_encoder_heads(r.out, probes, scores, ablation ? &*ablation : nullptr, each != nullptr);
  nlohmann::json result = {{"model", model_dir_},
                           {"text_probes", probes.texts.size()},
                           {"echo_probes", probes.echoes.size()},
                           {"heads", heads::encoder_heads_json(scores, each)}};
  if (ablation) result["copy"] = heads::copy_ablation_json(*ablation);
  if (!r.html.empty() || !r.mask_view_dir.empty()) {
    const nlohmann::json view = write_views(r, heads::with_masks(probes.picture), scores, each);
    if (!r.mask_view_dir.empty()) result["mask_view"] = view;
  }
  return result;
}

nlohmann::json EncoderCommands::write_views(const HeadsRequest& r, const std::vector<int64_t>& picture,
                                            const std::vector<heads::EncoderHeadScores>& scores,
                                            const heads::CopyAblation* each) {
  nn::BertForMaskedLM& model = task_.bert();
  const std::vector<Tensor> maps = heads::encoder_attention(model, picture);
  const MaskView view = mask_view(model, picture, maps);
  r.draw([&] {
    if (!r.html.empty()) {
      save_encoder_explorer_page(r.html, model_dir_, model, task_.tokenizer(), picture, maps, scores, each, view.fills);
      if (!r.json) fmt::print(r.out, "attention explorer: {}\n", r.html);
    }
    if (r.mask_view_dir.empty()) return;
    const std::vector<std::string> paths = draw_mask_view(r.mask_view_dir, view, picture, task_.tokenizer(), scores);
    if (!r.json) fmt::print(r.out, "[MASK] view: {}\n", fmt::join(paths, ", "));
  });
  return mask_view_json(view, picture, task_.tokenizer(), model.config().num_attention_heads);
}

// The end of an encoder run: the training curves and the held-out masked accuracy.
void EncoderCommands::report_run(train::Run& run, const heads::ProbeSet*, std::FILE* out) {
  draw_run_curves(run, out);
  const data::TextDataset& data = task_.dataset();
  const data::Split split = data.num_windows(data::Split::val) > 0 ? data::Split::val : data::Split::train;
  const train::MaskedLMScore s = train::score_masked_lm(task_.bert(), data, split, task_.masking(), 32, kEvalMaskingSeed);
  fmt::print(out, "{}: {}\n", split == data::Split::val ? "held out" : "training split", score_line(s));
}

}  // namespace tinygpt::analysis
