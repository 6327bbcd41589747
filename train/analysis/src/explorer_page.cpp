// The attention explorer page of a run (tinygpt::report draws it): this file gathers its data —
// the probe text (or an encoder-decoder's pair), the attention maps, the head report, and the
// run's log.jsonl (loss per step, evaluations, and the head scores or cross-attention alignment
// of each evaluation when training recorded them).
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "explorer_page.hpp"
#include "tinygpt/analysis/pair_pictures.hpp"
#include "tinygpt/heads/formation.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/report/explorer.hpp"
#include "tinygpt/train/log_records.hpp"
#include "tinygpt/train/progress.hpp"

namespace tinygpt::analysis {
namespace {

using nlohmann::json;

// A head object as `heads --json` prints it and log.jsonl eval records hold it: every number
// but the position is a score (role scores, and the ablation results when measured).
report::HeadEntry head_entry(const json& object) {
  report::HeadEntry entry;
  entry.layer = object.value("layer", int64_t{0});
  entry.head = object.value("head", int64_t{0});
  entry.role = object.value("role", std::string());
  for (const auto& [name, value] : object.items()) {
    if (name != "layer" && name != "head" && value.is_number()) {
      entry.scores.emplace_back(name, value.get<double>());
    }
  }
  return entry;
}

std::optional<report::InContext> in_context_of(const json& object) {
  if (!object.is_object() || !object.contains("first_copy_loss") || !object.contains("second_copy_loss")) {
    return std::nullopt;
  }
  report::InContext c;
  c.first_copy_loss = heads::number_or(object, "first_copy_loss", NAN);
  c.second_copy_loss = heads::number_or(object, "second_copy_loss", NAN);
  c.ratio = heads::number_or(object, "ratio",
                             c.first_copy_loss > 0 ? c.second_copy_loss / c.first_copy_loss : 0.0);
  return c;
}

// The loss series and each evaluation's head scores (an encoder-decoder's exact match and
// cross-attention alignment), from train::LogRecords.
void add_log(const train::LogRecords& log, report::ExplorerData& d) {
  const auto points = [](const std::vector<train::LogPoint>& series) {
    std::vector<report::Point> out;
    for (const auto& p : series) out.push_back({p.step, p.value});
    return out;
  };
  d.step_loss = points(log.step_losses());
  d.eval_train_loss = points(log.eval_train_losses());
  d.eval_val_loss = points(log.val_losses());
  for (const json& record : log.head_records()) {
    report::Snapshot snapshot;
    snapshot.step = record["step"].get<int64_t>();
    for (const json& head : record["heads"]) {
      if (head.is_object()) snapshot.heads.push_back(head_entry(head));
    }
    if (record.contains("in_context")) snapshot.in_context = in_context_of(record["in_context"]);
    d.formation.push_back(std::move(snapshot));
  }
  if (!d.cross) return;
  d.cross->exact_match = points(log.series("exact_match"));
  for (const json& record : log.records()) {
    if (!record.contains("cross_attention") || !record["cross_attention"].is_array()) continue;
    report::Snapshot snapshot;
    snapshot.step = record["step"].get<int64_t>();
    for (const json& head : record["cross_attention"]) {
      if (head.is_object()) snapshot.heads.push_back(head_entry(head));
    }
    d.cross->formation.push_back(std::move(snapshot));
  }
}

// Each head's role and scores, the role's score first (as the page ranks heads by it).
report::HeadEntry self_head_entry(const seq2seq::SelfHeadScores& h) {
  return {h.layer, h.head, h.role, seq2seq::named_scores(h)};
}

// The (L,H,Tq,Tk) weights of per-layer (H,Tq,Tk) tensors.
std::vector<float> flatten(const std::vector<Tensor>& layers) {
  std::vector<float> out;
  for (const Tensor& w : layers) out.insert(out.end(), w.data<float>(), w.data<float>() + w.numel());
  return out;
}

// The pairs with the highest K-composition (the score that names a previous-token head feeding
// induction heads), as many as the model has heads in a layer.
std::vector<report::HeadLink> top_links(const heads::CompositionReport& composition) {
  std::vector<const heads::CompositionPair*> order;
  for (const heads::CompositionPair& p : composition.pairs) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const heads::CompositionPair* a, const heads::CompositionPair* b) {
    return a->score.k > b->score.k;
  });
  order.resize(std::min(order.size(), static_cast<size_t>(composition.n_head)));
  std::vector<report::HeadLink> links;
  for (const heads::CompositionPair* p : order) {
    links.push_back({p->from.layer, p->from.head, p->to.layer, p->to.head, p->score.k, p->baseline.k});
  }
  return links;
}

// The page's folder is made when missing, as --out's heatmap folder is. A run's log gives the
// page its last fact: the steps trained.
void write_page(const std::string& path, report::ExplorerData& d) {
  if (!d.step_loss.empty()) {
    d.facts.emplace_back("trained", train::count_of(static_cast<int64_t>(d.step_loss.back().x), "step"));
  }
  const std::string folder = std::filesystem::path(path).parent_path().string();
  try {
    if (!folder.empty()) io::create_directory(folder, "its directory");
  } catch (const io::IOError& e) {
    throw io::IOError(fmt::format("cannot write page {}: {}", path, e.what()));
  }
  io::write_file_atomic(path, report::explorer_html(d));
}

// The cross-attention view of `pair`: each decoder layer's heads with their alignment and, with
// `ablation`, the exact-match drop without each.
report::CrossView cross_view(const nn::EncoderDecoderConfig& config, const seq2seq::PairAttention& pair,
                             const seq2seq::PairHeads& heads, const seq2seq::CrossAblation* ablation) {
  report::CrossView cross;
  cross.output_tokens = pair.outputs;
  cross.aligned = pair.aligned;
  cross.layers = config.decoder_layers;
  cross.heads = config.decoder_attention_heads;
  cross.attention = flatten(pair.cross);
  for (int64_t l = 0; l < cross.layers; ++l) {
    for (int64_t h = 0; h < cross.heads; ++h) {
      const auto i = static_cast<size_t>(l * cross.heads + h);
      report::HeadEntry entry{l, h, "", {}};
      if (!heads.cross.empty()) entry.scores.emplace_back("alignment", heads.cross[i].alignment);
      if (ablation != nullptr) {
        entry.scores.emplace_back("ablated_exact_match_drop", ablation->exact_match - ablation->without_head[i]);
      }
      if (!entry.scores.empty()) cross.head_entries.push_back(std::move(entry));
    }
  }
  return cross;
}

}  // namespace

void save_explorer_page(const std::string& path, const std::string& run_dir, const nn::CausalLM& model,
                        const data::Tokenizer& tokenizer, const std::vector<int64_t>& picture,
                        const std::vector<Tensor>& maps, const heads::HeadReport& report,
                        const heads::EachHeadAblation* ablation, const heads::CompositionReport* composition) {
  const nn::CausalLMShape config = model.shape();
  report::ExplorerData d;
  d.title = run_dir;
  for (int64_t id : picture) d.tokens.push_back(tokenizer.token(id));
  d.layers = config.n_layer;
  d.heads = config.n_head;
  d.attention = flatten(maps);

  const json heads = ablation != nullptr ? ablation->heads_json(report) : report.heads_json();
  for (size_t i = 0; i < heads.size(); ++i) {
    report::HeadEntry entry = head_entry(heads[i]);
    entry.scores.emplace(entry.scores.begin(), "role_score", report.heads[i].role_score);
    d.head_entries.push_back(std::move(entry));
  }
  d.in_context = report::InContext{report.first_copy_loss, report.second_copy_loss,
                                   report.first_copy_loss > 0 ? report.second_copy_loss / report.first_copy_loss : 0.0};
  if (composition != nullptr) d.composition = top_links(*composition);
  add_log(train::LogRecords::read((std::filesystem::path(run_dir) / "log.jsonl").string()), d);

  // A GPT says its width too; the interface of a causal LM does not have one.
  const auto* gpt = dynamic_cast<const nn::GPT*>(&model);
  const std::string width = gpt != nullptr ? fmt::format(", d_model {}", gpt->config().n_embd) : "";
  d.facts = {{"model", fmt::format("{} x {}{}, context {}",
                                   train::count_of(config.n_layer, "layer"),
                                   train::count_of(config.n_head, "head"), width,
                                   config.block_size)},
             {"parameters", std::to_string(model.num_parameters())},
             {"vocabulary", std::to_string(tokenizer.vocab_size())},
             {"probe text", fmt::format("{} tokens", picture.size())}};
  write_page(path, d);
}

void save_encoder_explorer_page(const std::string& path, const std::string& run_dir,
                                const nn::BertForMaskedLM& model, const data::Tokenizer& tokenizer,
                                const std::vector<int64_t>& picture, const std::vector<Tensor>& maps,
                                const std::vector<heads::EncoderHeadScores>& scores,
                                const heads::CopyAblation* ablation,
                                const std::vector<train::MaskFill>& fills) {
  const nn::BertConfig& config = model.config();
  report::ExplorerData d;
  d.title = run_dir;
  for (int64_t id : picture) d.tokens.push_back(tokenizer.token(id));
  d.causal = false;
  d.layers = config.num_hidden_layers;
  d.heads = config.num_attention_heads;
  d.attention = flatten(maps);
  for (const json& head : heads::encoder_heads_json(scores, ablation)) d.head_entries.push_back(head_entry(head));
  for (const train::MaskFill& fill : fills) {
    report::MaskedPosition mask{fill.position + 1, {}};  // + 1: [CLS]
    for (const auto& [id, prob] : fill.top) mask.top.emplace_back(tokenizer.token(id), prob);
    d.masks.push_back(std::move(mask));
  }
  add_log(train::LogRecords::read((std::filesystem::path(run_dir) / "log.jsonl").string()), d);

  d.facts = {{"model", fmt::format("encoder, {} x {}, d_model {}, context {}",
                                   train::count_of(config.num_hidden_layers, "layer"),
                                   train::count_of(config.num_attention_heads, "head"), config.hidden_size,
                                   config.max_position_embeddings)},
             {"parameters", std::to_string(model.num_parameters())},
             {"vocabulary", std::to_string(tokenizer.vocab_size())},
             {"probe text", fmt::format("{} tokens, {} masked", picture.size(), fills.size())}};
  if (ablation != nullptr) d.facts.emplace_back("second-copy masked accuracy", fmt::format("{:.3f}", ablation->accuracy));
  write_page(path, d);
}

void save_pair_explorer_page(const std::string& path, const std::string& run_dir,
                             const nn::EncoderDecoder& model, const data::Tokenizer& tokenizer,
                             const seq2seq::PairAttention& pair, const seq2seq::PairHeads& heads,
                             const seq2seq::CrossAblation* ablation) {
  const nn::EncoderDecoderConfig& config = model.config();
  report::ExplorerData d;
  d.title = run_dir;
  d.tokens = pair.source;
  d.causal = false;
  d.layers = config.encoder_layers;
  d.heads = config.encoder_attention_heads;
  d.attention = flatten(pair.encoder);
  for (const auto& h : heads.encoder) d.head_entries.push_back(self_head_entry(h));

  if (config.cross_attention) d.cross = cross_view(config, pair, heads, ablation);
  add_log(train::LogRecords::read((std::filesystem::path(run_dir) / "log.jsonl").string()), d);

  d.facts = {{"model", fmt::format("encoder {}, decoder {}, d_model {}, {} positions",
                                   train::count_of(config.encoder_layers, "layer") + " x " +
                                       train::count_of(config.encoder_attention_heads, "head"),
                                   train::count_of(config.decoder_layers, "layer") + " x " +
                                       train::count_of(config.decoder_attention_heads, "head"),
                                   config.d_model, config.max_position_embeddings)},
             {"parameters", std::to_string(model.num_parameters())},
             {"vocabulary", std::to_string(tokenizer.vocab_size())},
             {"pair", fmt::format("{} \u2192 {}", pair.source_text, pair.target_text)}};
  if (ablation != nullptr) d.facts.emplace_back("held-out exact match", fmt::format("{:.3f}", ablation->exact_match));
  write_page(path, d);
}

}  // namespace tinygpt::analysis
