#include "tinygpt/seq2seq/pair_heads.hpp"

#include <algorithm>
#include <cmath>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"
#include "tinygpt/data/utf8.hpp"
#include "tinygpt/heads/head_scores.hpp"
#include "tinygpt/heads/row_tally.hpp"

namespace tinygpt::seq2seq {
namespace {

SelfHeadScores finish(int64_t layer, int64_t head, const heads::RowTally& t) {
  SelfHeadScores s{layer, head, t.previous_token(), t.next_token(), t.current_token(), t.first_token(),
                   t.local_mass(), t.mean_entropy(), "", 0.0};
  const heads::Role role = heads::pick_role({{"previous-token", s.previous_token},
                                             {"next-token", s.next_token},
                                             {"current-token", s.current_token},
                                             {"first-token", s.first_token}},
                                            s.local, s.entropy);
  s.role = role.name;
  s.role_score = role.score;
  return s;
}

std::vector<Tensor> as_f32(std::vector<Tensor> weights) {
  for (Tensor& w : weights) w = w.dtype() == DType::f32 ? w : w.to(DType::f32);
  return weights;
}

// The CrossHeadScore list's entry for (layer, head) as an index into without_head.
size_t head_index(const nn::EncoderDecoder& model, int64_t layer, int64_t head) {
  return static_cast<size_t>(layer * model.config().decoder_attention_heads + head);
}

// Exact match with the cross-attention heads in `removed` zeroed (restored after).
double exact_match_without(nn::EncoderDecoder& model, const data::PairDataset& data,
                           const data::Tokenizer& tokenizer, data::Split split,
                           int64_t max_pairs, const std::vector<CrossHeadScore>& removed) {
  const int64_t heads = model.config().decoder_attention_heads;
  std::vector<std::vector<double>> masks(static_cast<size_t>(model.config().decoder_layers));
  for (const CrossHeadScore& h : removed) {
    auto& mask = masks[static_cast<size_t>(h.layer)];
    if (mask.empty()) mask.assign(static_cast<size_t>(heads), 1.0);
    mask[static_cast<size_t>(h.head)] = 0.0;
  }
  auto& layers = *model.model->decoder->layers;
  for (size_t l = 0; l < masks.size(); ++l) layers[l].encoder_attn->set_head_mask(masks[l]);
  double exact = 0.0;
  try {
    exact = pair_accuracy(model, data, tokenizer, split, max_pairs).exact_match;
  } catch (...) {
    for (size_t l = 0; l < masks.size(); ++l) layers[l].encoder_attn->set_head_mask({});
    throw;
  }
  for (size_t l = 0; l < masks.size(); ++l) layers[l].encoder_attn->set_head_mask({});
  return exact;
}

}  // namespace

PairHeads score_pair_heads(nn::EncoderDecoder& model, const data::PairDataset& data,
                           const data::Tokenizer& tokenizer, const std::string& task,
                           data::Split split, int64_t max_pairs) {
  const nn::EncoderDecoderConfig& c = model.config();
  PairHeads out;
  out.pairs = max_pairs > 0 ? std::min(max_pairs, data.size(split)) : data.size(split);
  std::vector<heads::RowTally> encoder(static_cast<size_t>(c.encoder_layers * c.encoder_attention_heads));
  std::vector<heads::RowTally> decoder(static_cast<size_t>(c.decoder_layers * c.decoder_attention_heads));
  {
    NoGradGuard no_grad;
    model.eval();
    model.set_keep_attention_weights(true);
    constexpr int64_t kBatch = 250;
    for (int64_t first = 0; first < out.pairs; first += kBatch) {
      const int64_t count = std::min(kBatch, out.pairs - first);
      const data::PairBatch b = data.batch(split, first, count);
      model.forward(b.source, b.source_lengths, b.inputs);
      const auto tally = [&](const std::vector<Tensor>& weights, std::vector<heads::RowTally>& tallies, bool causal) {
        for (size_t l = 0; l < weights.size(); ++l) {
          const Tensor& w = weights[l];  // (B,H,T,T)
          const int64_t h_n = w.size(1), t = w.size(2);
          for (int64_t r = 0; r < count; ++r) {
            const int64_t len = causal ? static_cast<int64_t>(data.target(split, first + r).size()) + 1
                                       : b.source_lengths[static_cast<size_t>(r)];
            for (int64_t h = 0; h < h_n; ++h) {
              for (int64_t i = 0; i < len; ++i) {
                tallies[l * static_cast<size_t>(h_n) + static_cast<size_t>(h)].add_row(
                    w.data<float>() + ((r * h_n + h) * t + i) * t, i, causal ? i + 1 : len);
              }
            }
          }
        }
      };
      tally(as_f32(model.encoder_attention_weights()), encoder, false);
      tally(as_f32(model.decoder_attention_weights()), decoder, true);
    }
    model.set_keep_attention_weights(false);
  }
  for (size_t i = 0; i < encoder.size(); ++i) {
    const auto h = static_cast<int64_t>(i) % c.encoder_attention_heads;
    out.encoder.push_back(finish(static_cast<int64_t>(i) / c.encoder_attention_heads, h, encoder[i]));
  }
  for (size_t i = 0; i < decoder.size(); ++i) {
    const auto h = static_cast<int64_t>(i) % c.decoder_attention_heads;
    out.decoder.push_back(finish(static_cast<int64_t>(i) / c.decoder_attention_heads, h, decoder[i]));
  }
  out.cross = cross_attention_alignment(model, data, tokenizer, task, split, max_pairs);
  return out;
}

CrossAblation ablate_cross_heads(nn::EncoderDecoder& model, const data::PairDataset& data,
                                 const data::Tokenizer& tokenizer, data::Split split,
                                 int64_t max_pairs, const std::vector<CrossHeadScore>& alignment) {
  CrossAblation out;
  out.exact_match = pair_accuracy(model, data, tokenizer, split, max_pairs).exact_match;
  const nn::EncoderDecoderConfig& c = model.config();
  if (!c.cross_attention) {  // no cross-attention head to remove
    out.without_aligned = out.exact_match;
    return out;
  }
  out.without_head.resize(static_cast<size_t>(c.decoder_layers * c.decoder_attention_heads));
  for (int64_t l = 0; l < c.decoder_layers; ++l) {
    for (int64_t h = 0; h < c.decoder_attention_heads; ++h) {
      out.without_head[head_index(model, l, h)] =
          exact_match_without(model, data, tokenizer, split, max_pairs, {{l, h, 0.0}});
    }
  }
  for (const CrossHeadScore& h : alignment) {
    if (h.alignment >= 0.5) out.aligned.push_back(h);
  }
  if (out.aligned.empty() && !alignment.empty()) {
    out.aligned.push_back(*std::max_element(alignment.begin(), alignment.end(),
                                            [](const auto& a, const auto& b) { return a.alignment < b.alignment; }));
  }
  out.without_aligned = out.aligned.empty()
                            ? out.exact_match
                            : exact_match_without(model, data, tokenizer, split, max_pairs, out.aligned);
  return out;
}

PairAttention pair_attention(nn::EncoderDecoder& model, const data::PairDataset& data,
                             const data::Tokenizer& tokenizer, const std::string& task,
                             data::Split split, int64_t index) {
  const data::PairBatch b = data.batch(split, index, 1);
  {
    NoGradGuard no_grad;
    model.eval();
    model.set_keep_attention_weights(true);
    model.forward(b.source, b.source_lengths, b.inputs);
    model.set_keep_attention_weights(false);
  }
  PairAttention out;
  out.source_text = tokenizer.decode(data.source(split, index));
  out.target_text = tokenizer.decode(data.target(split, index));
  const nn::EncoderDecoderConfig& config = model.config();
  out.inputs.push_back(tokenizer.token(config.decoder_start_token_id));
  for (const int64_t id : data.source(split, index)) out.source.push_back(tokenizer.token(id));
  for (const int64_t id : data.target(split, index)) {
    out.inputs.push_back(tokenizer.token(id));
    out.outputs.push_back(tokenizer.token(id));
  }
  out.outputs.push_back(tokenizer.token(config.eos_token_id));
  if (data::is_pair_task(task)) {
    out.aligned = data::task_alignment(task, data::decode_utf8(out.source_text), data::decode_utf8(out.target_text));
    out.aligned.resize(out.outputs.size());
  }
  // Each (1,H,Tq,Tk) as (H,Tq,Tk) f32.
  const auto heads_of = [](std::vector<Tensor> layers) {
    for (Tensor& w : layers) w = reshape(w.dtype() == DType::f32 ? w : w.to(DType::f32), {w.size(1), w.size(2), w.size(3)});
    return layers;
  };
  out.encoder = heads_of(model.encoder_attention_weights());
  out.decoder = heads_of(model.decoder_attention_weights());
  out.cross = heads_of(model.cross_attention_weights());
  return out;
}

}  // namespace tinygpt::seq2seq
