#include "pair_commands.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "command_errors.hpp"
#include "tinygpt/analysis/fit_observers.hpp"
#include "tinygpt/analysis/pair_pictures.hpp"
#include "tinygpt/analysis/run_report.hpp"
#include "tinygpt/autograd/memory.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/seq2seq/pair_eval.hpp"
#include "tinygpt/seq2seq/pair_heads.hpp"
#include "tinygpt/train/memory_estimate.hpp"

namespace tinygpt::analysis {
namespace {

namespace fs = std::filesystem;

// The loss of the split's targets given their sources (teacher forcing, mean over every
// predicted token, end token included), and the tokens it is over.
std::pair<double, int64_t> teacher_forced_loss(nn::EncoderDecoder& model, const data::PairDataset& pairs,
                                               data::Split split, int64_t batch) {
  double total = 0.0;
  int64_t tokens = 0;
  NoGradGuard no_grad;
  model.eval();
  const int64_t n = pairs.size(split);
  for (int64_t first = 0; first < n; first += batch) {
    const int64_t count = std::min(batch, n - first);
    if (count != batch) empty_cache();  // the cache of full batches' sizes, before a shorter one
    const data::PairBatch b = pairs.batch(split, first, count);
    int64_t predicted = 0;
    for (const double t : b.targets.to_vector()) predicted += t != nn::EncoderDecoder::kIgnoreIndex;
    total += model.loss(b.source, b.source_lengths, b.inputs, b.targets).item() * static_cast<double>(predicted);
    tokens += predicted;
  }
  return {total / static_cast<double>(tokens), tokens};
}

// "held-out: exact match 0.998, character accuracy 0.999 on 2000 pairs", the best-aligned
// cross-attention head, and a few misses.
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

nlohmann::json self_heads_json(const std::vector<seq2seq::SelfHeadScores>& heads) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& h : heads) {
    nlohmann::json head = {{"layer", h.layer}, {"head", h.head}, {"role", h.role}};
    for (const auto& [name, value] : seq2seq::named_scores(h)) head[name] = value;
    out.push_back(std::move(head));
  }
  return out;
}

void print_self_heads(std::FILE* out, const char* stack, const std::vector<seq2seq::SelfHeadScores>& heads) {
  fmt::print(out, "{} self-attention\n  head  role            score  prev   next   cur    first  local  entropy\n", stack);
  for (const auto& h : heads) {
    fmt::print(out, "  {}.{:<3} {:<15} {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}   {:.2f}\n", h.layer,
               h.head, h.role, h.role_score, h.previous_token, h.next_token, h.current_token,
               h.first_token, h.local, h.entropy);
  }
}

// What heads measured on an encoder-decoder, and where it was measured.
struct PairHeadsReport {
  std::string data_source;
  data::Split split;
  seq2seq::PairHeads heads;
  std::optional<seq2seq::CrossAblation> ablation;
  std::vector<std::string> pictures;
};

nlohmann::json pair_heads_json(const PairHeadsReport& r, const std::string& model_dir) {
  nlohmann::json cross = nlohmann::json::array();
  for (size_t i = 0; i < r.heads.cross.size(); ++i) {
    const auto& h = r.heads.cross[i];
    nlohmann::json entry = {{"layer", h.layer}, {"head", h.head}, {"alignment", h.alignment}};
    if (r.ablation) entry["ablated_exact_match_drop"] = r.ablation->exact_match - r.ablation->without_head[i];
    cross.push_back(entry);
  }
  nlohmann::json report = {{"model", model_dir}, {"data", r.data_source},
                           {"split", data::split_name(r.split)}, {"pairs", r.heads.pairs},
                           {"encoder", self_heads_json(r.heads.encoder)},
                           {"decoder", self_heads_json(r.heads.decoder)}, {"cross_attention", cross},
                           {"heatmaps", r.pictures}};
  if (r.ablation) {
    nlohmann::json aligned = nlohmann::json::array();
    for (const auto& h : r.ablation->aligned) aligned.push_back(fmt::format("{}.{}", h.layer, h.head));
    report["exact_match"] = r.ablation->exact_match;
    report["ablated_aligned_heads"] = aligned;
    report["ablated_aligned_exact_match"] = r.ablation->without_aligned;
  }
  return report;
}

void print_pair_heads(const PairHeadsReport& r, const std::string& html, std::FILE* out) {
  fmt::print(out, "{} pairs of the {} split of {}\n", r.heads.pairs, data::split_name(r.split), r.data_source);
  print_self_heads(out, "encoder", r.heads.encoder);
  print_self_heads(out, "decoder", r.heads.decoder);
  for (const std::string& file : r.pictures) fmt::print(out, "heatmap: {}\n", file);
  if (!html.empty()) fmt::print(out, "attention explorer: {}\n", html);
  if (r.heads.cross.empty()) {
    fmt::print(out, "cross-attention: {} has no known alignment to score against\n", r.data_source);
    return;
  }
  fmt::print(out, "cross-attention (alignment: mean weight on the aligned source characters)\n");
  for (size_t i = 0; i < r.heads.cross.size(); ++i) {
    const auto& h = r.heads.cross[i];
    fmt::print(out, "  {}.{:<3} alignment {:.3f}", h.layer, h.head, h.alignment);
    if (r.ablation) fmt::print(out, "   exact match without it {:.3f}", r.ablation->without_head[i]);
    fmt::print(out, "\n");
  }
  if (r.ablation) {
    std::string names;
    for (const auto& h : r.ablation->aligned) names += fmt::format("{}{}.{}", names.empty() ? "" : ",", h.layer, h.head);
    fmt::print(out, "exact match {:.3f}; without the aligned heads {} together: {:.3f} ({:+.3f})\n",
               r.ablation->exact_match, names, r.ablation->without_aligned,
               r.ablation->without_aligned - r.ablation->exact_match);
  }
}

}  // namespace

PairCommands::PairCommands(train::PairTask& task, std::string model_dir)
    : task_(task), model_dir_(std::move(model_dir)) {}

SampleOutput PairCommands::sample(const SampleRequest& r) {
  if (!r.prompt.empty()) {
    refuse("prompt", {fmt::format("{} is an encoder-decoder; give its input with ", model_dir_), setting("source")});
  }
  if (r.source.empty()) {
    throw SettingError(Operation("TaskCommands"),
                       {fmt::format("{} is an encoder-decoder: pass ", model_dir_), setting("source"), " TEXT"});
  }
  if (r.options.precision != Precision::f32) {
    refuse("precision", {fmt::format("{} is an encoder-decoder, which samples in f32 (bf16 generation keeps a GPT's "
                                     "weights in bf16)", model_dir_)});
  }
  const data::Tokenizer& tokenizer = task_.tokenizer();
  const std::vector<int64_t> source = encode_setting("source", r.source, tokenizer);
  const int64_t positions = task_.encoder_decoder().config().max_position_embeddings;
  if (static_cast<int64_t>(source.size()) > positions) {
    throw ValueError(std::vector<MessagePart>{
        setting("source"), fmt::format(" has {} characters; {} takes at most {}", source.size(), model_dir_, positions)});
  }
  nn::SampleOptions options = r.options;
  if (!r.temperature_given) options.temperature = 0.0;
  const auto start = std::chrono::steady_clock::now();
  std::vector<int64_t> ids;
  try {
    ids = nn::generate(task_.encoder_decoder(), source, options);
  } catch (const ValueError& e) {
    throw about(named("model", model_dir_), e);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string text = tokenizer.decode(ids);
  if (!r.json) r.on_text(text);
  SampleOutput out;
  out.json = {{"source", r.source},           {"text", text},
              {"tokens", ids.size()},         {"temperature", options.temperature},
              {"top_k", options.top_k},       {"seed", options.seed},
              {"seconds", seconds},           {"model", model_dir_}};
  out.speed = fmt::format("{} tokens in {:.3f} s; the encoder's keys and values projected once, the "
                          "decoder's self-attention cached\n", ids.size(), seconds);
  return out;
}

MethodOutput PairCommands::evaluate(const EvalRequest& r) {
  if (r.pseudo) refuse("pseudo", {fmt::format("{} is {}; pseudo-perplexity is a masked LM's", model_dir_, what())});
  if (r.block > 0) refuse("block", {fmt::format("{} is an encoder-decoder, which reads whole pairs", model_dir_)});
  nn::EncoderDecoder& model = task_.encoder_decoder();
  const data::PairDataset pairs(data::parse_pairs(r.text, r.data_source), task_.tokenizer(),
                                model.config().max_position_embeddings, r.val_fraction, r.data_source);
  const int64_t n = pairs.size(r.split);
  if (n == 0) throw ValueError(fmt::format("{}: the {} split holds no pairs", r.data_source, r.split_name));
  int64_t longest = 0;  // positions: a source, or a target with its start or end token
  for (int64_t i = 0; i < n; ++i) {
    longest = std::max({longest, static_cast<int64_t>(pairs.source(r.split, i).size()),
                        static_cast<int64_t>(pairs.target(r.split, i).size()) + 1});
  }
  // A batch the machine cannot hold is refused before its first pass, rather than growing until
  // the out-of-memory killer ends the process with no message.
  check_memory(train::estimate_eval_memory(model.config(), std::min(r.batch, n), longest));
  const auto [loss, tokens] = teacher_forced_loss(model, pairs, r.split, r.batch);
  const seq2seq::PairAccuracy accuracy = seq2seq::pair_accuracy(model, pairs, task_.tokenizer(), r.split, 0, r.batch);
  return {{{"loss", loss}, {"perplexity", std::exp(loss)}, {"tokens", tokens}, {"pairs", n},
           {"exact_match", accuracy.exact_match}, {"char_accuracy", accuracy.char_accuracy}},
          fmt::format("{} split of {}: loss {:.4f}, perplexity {:.3f} over {} predicted tokens; greedy "
                      "decoding: exact match {:.4f}, character accuracy {:.4f} on {} pairs\n",
                      r.split_name, r.data_source, loss, std::exp(loss), tokens, accuracy.exact_match,
                      accuracy.char_accuracy, n)};
}

void PairCommands::refuse_language_model_settings(const HeadsRequest& r) const {
  for (const char* name : {"text", "ablate_heads", "attribute", "composition", "importance", "patch",
                           "counterfactual", "prune_curve"}) {
    if (r.given.count(name) == 0) continue;
    refuse(name, {fmt::format("{} is an encoder-decoder; its heads are scored on the run's held-out "
                              "pairs (", model_dir_), setting("pairs"), ", ", setting("ablate"), ", ",
                  setting("json"), ", ", setting("heatmap_dir"), ", ", setting("html"), ")"});
  }
  if (r.ablate != "zero") {
    refuse("ablate", {"an encoder-decoder's cross-attention heads are removed by zeroing (zero)"});
  }
  if (!r.mask_view_dir.empty()) refuse("mask_view", {fmt::format("{} is an encoder-decoder; the [MASK] view is an encoder's", model_dir_)});
}

nlohmann::json PairCommands::heads(const HeadsRequest& r) {
  refuse_language_model_settings(r);
  const std::optional<train::RunState> run = train::trained_on(model_dir_);
  if (!run) throw SettingError(Operation("TaskCommands"), {model_dir_ + " does not say what it was trained on"});
  const std::string text = r.run_text(*run, "data");
  nn::EncoderDecoder& model = task_.encoder_decoder();
  const data::Tokenizer& tokenizer = task_.tokenizer();
  const data::PairDataset data(data::parse_pairs(text, run->data_source), tokenizer,
                               model.config().max_position_embeddings, run->val_fraction, run->data_source);
  PairHeadsReport report{run->data_source, data.size(data::Split::val) > 0 ? data::Split::val : data::Split::train,
                         {}, std::nullopt, {}};
  report.heads = seq2seq::score_pair_heads(model, data, tokenizer, run->data_source, report.split, r.pairs);
  if (r.ablate_each) {
    report.ablation = seq2seq::ablate_cross_heads(model, data, tokenizer, report.split, r.pairs, report.heads.cross);
  }
  if (!r.heatmap_dir.empty() || !r.html.empty()) {
    r.draw([&] {
      const seq2seq::PairAttention first =
          seq2seq::pair_attention(model, data, tokenizer, run->data_source, report.split, 0);
      std::optional<HeatmapSet> drawn;
      if (!r.heatmap_dir.empty()) {
        drawn.emplace(r.heatmap_dir);
        draw_pair_heatmaps(first, *drawn);
      }
      if (!r.html.empty()) {
        save_pair_explorer_page(r.html, model_dir_, model, tokenizer, first, report.heads,
                                report.ablation ? &*report.ablation : nullptr);
      }
      if (drawn) report.pictures = drawn->commit();  // once the page is written too
    });
  }
  if (!r.json) print_pair_heads(report, r.html, r.out);
  return pair_heads_json(report, model_dir_);
}

// The end of an encoder-decoder run: the training curves, held-out accuracy and alignment on
// every held-out pair, and for the first one the heatmaps and the explorer page, with the heads
// scored and each cross-attention head removed in turn on the pairs an evaluation scores.
void PairCommands::report_run(train::Run& run, const heads::ProbeSet*, std::FILE* out) {
  draw_run_curves(run, out);
  if (task_.pairs().size(data::Split::val) == 0) return;
  nn::EncoderDecoder& model = task_.encoder_decoder();
  const data::PairDataset& pairs = task_.pairs();
  const data::Split val = data::Split::val;
  print_pair_summary(
      seq2seq::pair_accuracy(model, pairs, run.tokenizer(), val),
      seq2seq::cross_attention_alignment(model, pairs, run.tokenizer(), run.data_source(), val), out);
  const seq2seq::PairHeads heads =
      seq2seq::score_pair_heads(model, pairs, run.tokenizer(), run.data_source(), val, kFormationPairs);
  const seq2seq::CrossAblation ablation =
      seq2seq::ablate_cross_heads(model, pairs, run.tokenizer(), val, kFormationPairs, heads.cross);
  const seq2seq::PairAttention first =
      seq2seq::pair_attention(model, pairs, run.tokenizer(), run.data_source(), val, 0);
  const fs::path dir(run.dir());
  HeatmapSet pictures((dir / kHeatmapDir).string());
  draw_pair_heatmaps(first, pictures);
  save_pair_explorer_page((dir / "report.html").string(), run.dir(), model, run.tokenizer(), first, heads,
                          &ablation);
  pictures.commit();  // once the page is written too
  fmt::print(out, "heatmaps: {}\n", (dir / kHeatmapDir).string());
  fmt::print(out, "attention explorer: {}\n", (dir / "report.html").string());
}

}  // namespace tinygpt::analysis
