#include "pair_report.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "commands.hpp"
#include "tinygpt/analysis/pair_pictures.hpp"
#include "tinygpt/seq2seq/pair_heads.hpp"

namespace tinygpt::cli {

void print_pair_summary(const seq2seq::PairAccuracy& accuracy,
                        const std::vector<seq2seq::CrossHeadScore>& alignment, std::FILE* out) {
  fmt::print(out, "held-out: exact match {:.4f}, character accuracy {:.4f} on {} pairs\n",
             accuracy.exact_match, accuracy.char_accuracy, accuracy.pairs);
  if (!alignment.empty()) {
    const auto best = std::max_element(alignment.begin(), alignment.end(),
                                       [](const auto& a, const auto& b) { return a.alignment < b.alignment; });
    fmt::print(out, "best-aligned cross-attention head: layer {} head {}, alignment {:.3f}\n",
               best->layer, best->head, best->alignment);
  }
  for (const auto& miss : accuracy.misses) {
    fmt::print(out, "  miss: {} -> {} (expected {})\n", miss.source, miss.output, miss.target);
  }
}

namespace {

nlohmann::json self_heads_json(const std::vector<seq2seq::SelfHeadScores>& heads) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& h : heads) {
    nlohmann::json head = {{"layer", h.layer}, {"head", h.head}, {"role", h.role}};
    for (const auto& [name, value] : seq2seq::named_scores(h)) head[name] = value;
    out.push_back(std::move(head));
  }
  return out;
}

void print_self_heads(const char* stack, const std::vector<seq2seq::SelfHeadScores>& heads) {
  fmt::print("{} self-attention\n  head  role            score  prev   next   cur    first  local  entropy\n", stack);
  for (const auto& h : heads) {
    fmt::print("  {}.{:<3} {:<15} {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}\n", h.layer, h.head,
               h.role, h.role_score, h.previous_token, h.next_token, h.current_token, h.first_token,
               h.local, h.entropy);
  }
}

}  // namespace

void report_pair_heads(const std::string& model_dir, train::LoadedModel& loaded, const PairHeadsOutput& out) {
  const std::optional<train::RunState> run = train::trained_on(model_dir);
  if (!run) throw UsageError(fmt::format("{} does not say what it was trained on", model_dir));
  const std::string text = read_run_text(*run, "--data");
  nn::EncoderDecoder& model = *loaded.seq2seq;
  const data::PairDataset data(data::parse_pairs(text, run->data_source), *loaded.tokenizer,
                               model.config().max_position_embeddings, run->val_fraction, run->data_source);
  const data::Split split = data.size(data::Split::val) > 0 ? data::Split::val : data::Split::train;
  const seq2seq::PairHeads heads =
      seq2seq::score_pair_heads(model, data, *loaded.tokenizer, run->data_source, split, out.pairs);
  std::optional<seq2seq::CrossAblation> ablation;
  if (out.ablate) ablation = seq2seq::ablate_cross_heads(model, data, *loaded.tokenizer, split, out.pairs, heads.cross);
  std::vector<std::string> pictures;
  if (!out.heatmap_dir.empty() || !out.html.empty()) {
    const seq2seq::PairAttention first =
        seq2seq::pair_attention(model, data, *loaded.tokenizer, run->data_source, split, 0);
    std::optional<analysis::HeatmapSet> drawn;
    if (!out.heatmap_dir.empty()) {
      drawn.emplace(out.heatmap_dir);
      analysis::draw_pair_heatmaps(first, *drawn);
    }
    if (!out.html.empty()) {
      analysis::save_pair_explorer_page(out.html, model_dir, model, *loaded.tokenizer, first, heads,
                                        ablation ? &*ablation : nullptr);
    }
    if (drawn) pictures = drawn->commit();  // once the page is written too
  }
  nlohmann::json cross = nlohmann::json::array();
  for (size_t i = 0; i < heads.cross.size(); ++i) {
    const auto& h = heads.cross[i];
    nlohmann::json entry = {{"layer", h.layer}, {"head", h.head}, {"alignment", h.alignment}};
    if (ablation) entry["ablated_exact_match_drop"] = ablation->exact_match - ablation->without_head[i];
    cross.push_back(entry);
  }
  if (out.json) {
    nlohmann::json report = {{"model", model_dir}, {"data", run->data_source},
                             {"split", data::split_name(split)}, {"pairs", heads.pairs},
                             {"encoder", self_heads_json(heads.encoder)},
                             {"decoder", self_heads_json(heads.decoder)}, {"cross_attention", cross},
                             {"heatmaps", pictures}};
    if (ablation) {
      nlohmann::json aligned = nlohmann::json::array();
      for (const auto& h : ablation->aligned) aligned.push_back(fmt::format("{}.{}", h.layer, h.head));
      report["exact_match"] = ablation->exact_match;
      report["ablated_aligned_heads"] = aligned;
      report["ablated_aligned_exact_match"] = ablation->without_aligned;
    }
    fmt::print("{}\n", json_text(report, 2));
    return;
  }
  fmt::print("{} pairs of the {} split of {}\n", heads.pairs, data::split_name(split), run->data_source);
  print_self_heads("encoder", heads.encoder);
  print_self_heads("decoder", heads.decoder);
  for (const std::string& file : pictures) fmt::print("heatmap: {}\n", file);
  if (!out.html.empty()) fmt::print("attention explorer: {}\n", out.html);
  if (heads.cross.empty()) {
    fmt::print("cross-attention: {} has no known alignment to score against\n", run->data_source);
    return;
  }
  fmt::print("cross-attention (alignment: mean weight on the aligned source characters)\n");
  for (size_t i = 0; i < heads.cross.size(); ++i) {
    const auto& h = heads.cross[i];
    fmt::print("  {}.{:<3} alignment {:.3f}", h.layer, h.head, h.alignment);
    if (ablation) fmt::print("   exact match without it {:.3f}", ablation->without_head[i]);
    fmt::print("\n");
  }
  if (ablation) {
    std::string names;
    for (const auto& h : ablation->aligned) names += fmt::format("{}{}.{}", names.empty() ? "" : ",", h.layer, h.head);
    fmt::print("exact match {:.3f}; without the aligned heads {} together: {:.3f} ({:+.3f})\n",
               ablation->exact_match, names, ablation->without_aligned,
               ablation->without_aligned - ablation->exact_match);
  }
}

}  // namespace tinygpt::cli
