#include "pair_report.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "commands.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/plot/attention_plot.hpp"
#include "tinygpt/seq2seq/pair_heads.hpp"

namespace tinygpt::cli {

nlohmann::json pair_record(nn::EncoderDecoder& model, const data::PairDataset& data,
                           const data::CharTokenizer& tokenizer, const std::string& task,
                           data::Split split, int64_t max_pairs) {
  const seq2seq::PairAccuracy accuracy = seq2seq::pair_accuracy(model, data, tokenizer, split, max_pairs);
  nlohmann::json heads = nlohmann::json::array();
  for (const auto& h : seq2seq::cross_attention_alignment(model, data, tokenizer, task, split, max_pairs)) {
    heads.push_back({{"layer", h.layer}, {"head", h.head}, {"alignment", h.alignment}});
  }
  return {{"exact_match", accuracy.exact_match},
          {"char_accuracy", accuracy.char_accuracy},
          {"pairs", accuracy.pairs},
          {"cross_attention", heads}};
}

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
    out.push_back({{"layer", h.layer}, {"head", h.head}, {"role", h.role}, {"role_score", h.role_score},
                   {"previous_token", h.previous_token}, {"next_token", h.next_token},
                   {"current_token", h.current_token}, {"first_token", h.first_token},
                   {"local", h.local}, {"entropy", h.entropy}});
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

// Head h of a kept (1,H,Tq,Tk) weight tensor as Tq x Tk floats.
std::vector<std::vector<float>> heads_of(const Tensor& weights) {
  const Tensor w = weights.dtype() == DType::f32 ? weights : weights.to(DType::f32);
  const int64_t h_n = w.size(1), cells = w.size(2) * w.size(3);
  std::vector<std::vector<float>> out;
  for (int64_t h = 0; h < h_n; ++h) out.emplace_back(w.data<float>() + h * cells, w.data<float>() + (h + 1) * cells);
  return out;
}

// The first pair of `split`: every layer's self-attention and cross-attention as grids in `dir`;
// returns the files written.
std::vector<std::string> draw_pair_heatmaps(nn::EncoderDecoder& model, const data::PairDataset& data,
                                            const data::CharTokenizer& tokenizer, data::Split split,
                                            const std::string& dir) {
  const data::PairBatch b = data.batch(split, 0, 1);
  {
    NoGradGuard no_grad;
    model.eval();
    model.set_keep_attention_weights(true);
    model.forward(b.source, b.source_lengths, b.inputs);
    model.set_keep_attention_weights(false);
  }
  std::vector<std::string> source, target{"<s>"};
  for (const int64_t id : data.source(split, 0)) source.push_back(tokenizer.token(id));
  for (const int64_t id : data.target(split, 0)) target.push_back(tokenizer.token(id));
  const std::string pair = fmt::format("\"{}\" -> \"{}\"", tokenizer.decode(data.source(split, 0)),
                                       tokenizer.decode(data.target(split, 0)));
  std::filesystem::create_directories(dir);
  std::vector<std::string> files;
  const auto titles = [](size_t n) {
    std::vector<std::string> t;
    for (size_t h = 0; h < n; ++h) t.push_back(fmt::format("head {}", h));
    return t;
  };
  const auto self_grids = [&](const char* stack, const std::vector<Tensor>& weights,
                              const std::vector<std::string>& labels) {
    for (size_t l = 0; l < weights.size(); ++l) {
      const auto heads = heads_of(weights[l]);
      files.push_back((std::filesystem::path(dir) / fmt::format("{}_layer{}.png", stack, l)).string());
      plot::save_head_grid(files.back(), heads, static_cast<int>(labels.size()), labels, titles(heads.size()),
                           fmt::format("{} self-attention, layer {}: {}", stack, l, pair));
    }
  };
  self_grids("encoder", model.encoder_attention_weights(), source);
  self_grids("decoder", model.decoder_attention_weights(), target);
  const std::vector<Tensor> cross = model.cross_attention_weights();
  for (size_t l = 0; l < cross.size(); ++l) {
    const auto heads = heads_of(cross[l]);
    files.push_back((std::filesystem::path(dir) / fmt::format("cross_layer{}.png", l)).string());
    plot::save_cross_attention_grid(files.back(), heads, target, source, titles(heads.size()),
                                    fmt::format("cross-attention, layer {}: {}", l, pair));
  }
  return files;
}

}  // namespace

void report_pair_heads(const std::string& model_dir, train::LoadedModel& loaded, int64_t pairs,
                       bool ablate, bool json, const std::string& heatmap_dir) {
  const std::optional<train::RunState> run = train::trained_on(model_dir);
  if (!run) throw UsageError(fmt::format("{} does not say what it was trained on", model_dir));
  const std::string text = with_data_hint("--data", [&] { return train::load_run_text(*run); });
  nn::EncoderDecoder& model = *loaded.seq2seq;
  const data::PairDataset data(data::parse_pairs(text, run->data_source), loaded.tokenizer,
                               model.config().max_position_embeddings, run->val_fraction, run->data_source);
  const data::Split split = data.size(data::Split::val) > 0 ? data::Split::val : data::Split::train;
  const seq2seq::PairHeads heads =
      seq2seq::score_pair_heads(model, data, loaded.tokenizer, run->data_source, split, pairs);
  std::optional<seq2seq::CrossAblation> ablation;
  if (ablate) ablation = seq2seq::ablate_cross_heads(model, data, loaded.tokenizer, split, pairs, heads.cross);
  const std::vector<std::string> pictures =
      heatmap_dir.empty() ? std::vector<std::string>{}
                          : draw_pair_heatmaps(model, data, loaded.tokenizer, split, heatmap_dir);
  nlohmann::json cross = nlohmann::json::array();
  for (size_t i = 0; i < heads.cross.size(); ++i) {
    const auto& h = heads.cross[i];
    nlohmann::json entry = {{"layer", h.layer}, {"head", h.head}, {"alignment", h.alignment}};
    if (ablation) entry["ablated_exact_match_drop"] = ablation->exact_match - ablation->without_head[i];
    cross.push_back(entry);
  }
  if (json) {
    nlohmann::json out = {{"model", model_dir}, {"data", run->data_source},
                          {"split", data::split_name(split)}, {"pairs", heads.pairs},
                          {"encoder", self_heads_json(heads.encoder)},
                          {"decoder", self_heads_json(heads.decoder)}, {"cross_attention", cross},
                          {"heatmaps", pictures}};
    if (ablation) {
      nlohmann::json aligned = nlohmann::json::array();
      for (const auto& h : ablation->aligned) aligned.push_back(fmt::format("{}.{}", h.layer, h.head));
      out["exact_match"] = ablation->exact_match;
      out["ablated_aligned_heads"] = aligned;
      out["ablated_aligned_exact_match"] = ablation->without_aligned;
    }
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("{} pairs of the {} split of {}\n", heads.pairs, data::split_name(split), run->data_source);
  print_self_heads("encoder", heads.encoder);
  print_self_heads("decoder", heads.decoder);
  for (const std::string& file : pictures) fmt::print("heatmap: {}\n", file);
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
