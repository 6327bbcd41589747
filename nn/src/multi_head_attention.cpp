#include "tinygpt/nn/multi_head_attention.hpp"

#include <cmath>
#include <utility>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/nn/attention.hpp"

namespace tinygpt::nn {

namespace {

constexpr std::pair<AttentionScore, const char*> kScoreNames[] = {
    {AttentionScore::dot, "dot"}, {AttentionScore::general, "general"},
    {AttentionScore::concat, "concat"}, {AttentionScore::additive, "additive"}};

// Per-head matrices stored as rows (H d, w), head h's in rows h d .. h d + d -> (B,H,d,w), each
// batch row sharing them, for a product with (B,H,T,d).
Tensor per_head(const Tensor& rows, int64_t batch, int64_t heads) {
  const int64_t d = rows.size(0) / heads, w = rows.size(1);
  return broadcast_to(reshape(rows, {1, heads, d, w}), Shape{batch, heads, d, w});
}

}  // namespace

AttentionScore parse_attention_score(const std::string& name) {
  for (const auto& [score, text] : kScoreNames) {
    if (name == text) return score;
  }
  throw SettingError(Operation("MultiHeadAttention"),
                     {named("score", excerpt(name)), " is not an attention score (dot, general, concat or additive)"});
}

const char* attention_score_name(AttentionScore score) {
  for (const auto& [s, text] : kScoreNames) {
    if (s == score) return text;
  }
  return "dot";
}

MultiHeadAttention::MultiHeadAttention(const MultiHeadAttentionOptions& options, Generator& init,
                                       std::shared_ptr<Generator> noise)
    : options_(options), noise_(std::move(noise)) {
  const int64_t c = options.d_model, h = options.n_heads;
  if (c <= 0 || h <= 0 || c % h != 0) {
    throw ValueError(Operation("MultiHeadAttention"), fmt::format(
        "d_model {} must be a positive multiple of n_heads {}", c, h));
  }
  if (options.n_kv_heads < 0 || h % options.kv_heads() != 0) {
    throw ValueError(Operation("MultiHeadAttention"), fmt::format("n_kv_heads {} does not divide n_heads {}",
                                 options.n_kv_heads, h));
  }
  if (!(options.dropout >= 0.0 && options.dropout < 1.0)) {
    throw ValueError(Operation("MultiHeadAttention"),
                     fmt::format("dropout {} is outside [0, 1)", options.dropout));
  }
  // ALiBi's bias is defined on dot-product scores; the learned scorings have a scale of their own.
  if (options.score != AttentionScore::dot && options.position == PositionEmbedding::alibi) {
    throw SettingError(Operation("MultiHeadAttention"),
                       {named("score", std::string(attention_score_name(options.score))),
                        " does not take ALiBi's bias (dot scores only)"});
  }
  if (!options.pattern.is_full() && !options.pattern.is_bidirectional()) {
    throw ValueError(Operation("MultiHeadAttention"),
                     fmt::format("takes full or bidirectional BigBird attention, not {}",
                                 options.pattern.str()));
  }
  const int64_t kv = options.kv_heads() * (c / h);
  const auto make = [&](const char* name, int64_t out) {
    return register_module(name, std::make_shared<Linear>(c, out, options.bias, init, WeightLayout::out_in));
  };
  q_proj = make("q_proj", c);
  k_proj = make("k_proj", kv);
  v_proj = make("v_proj", kv);
  out_proj = make("out_proj", c);
  const int64_t d = c / h;
  const double bound = 1.0 / std::sqrt(static_cast<double>(d));
  if (options.score == AttentionScore::general || options.score == AttentionScore::concat) {
    const int64_t width = options.score == AttentionScore::concat ? 2 * d : d;
    score_weight = register_parameter("score_weight", Tensor::uniform({h * d, width}, init, -bound, bound));
  }
  if (options.score == AttentionScore::concat || options.score == AttentionScore::additive) {
    score_vector = register_parameter("score_vector", Tensor::uniform({h, d}, init, -bound, bound));
  }
}

Tensor MultiHeadAttention::learned_scores(const Tensor& q, const Tensor& k) const {
  const int64_t b = q.size(0), h = options_.n_heads, d = q.size(3);
  switch (options_.score) {
    case AttentionScore::general:  // (q_i^T W_a) k_j
      return matmul(matmul(q, per_head(score_weight, b, h)), k, false, true);
    case AttentionScore::concat: {  // W_a [q; k] = W_q' q + W_k' k, the two halves of W_a
      const Tensor wq = per_head(narrow(score_weight, 1, 0, d), b, h);
      const Tensor wk = per_head(narrow(score_weight, 1, d, d), b, h);
      return additive_scores(matmul(q, wq, false, true), matmul(k, wk, false, true), score_vector);
    }
    case AttentionScore::additive: return additive_scores(q, k, score_vector);
    case AttentionScore::dot: break;
  }
  throw ValueError(Operation("MultiHeadAttention"), "dot scores are not learned");
}

void MultiHeadAttention::set_head_mask(std::vector<double> mask) {
  if (!mask.empty() && static_cast<int64_t>(mask.size()) != options_.n_heads) {
    throw ShapeError(Operation("MultiHeadAttention::set_head_mask"), fmt::format("{} values for {} heads",
                                 mask.size(), options_.n_heads));
  }
  head_mask_ = std::move(mask);
}

Tensor MultiHeadAttention::split_heads(const Tensor& x, int64_t n) const {
  const int64_t d = options_.d_model / options_.n_heads;
  return permute(reshape(x, {x.size(0), x.size(1), n, d}), {0, 2, 1, 3});
}

Tensor MultiHeadAttention::rotated(const Tensor& x) const {
  if (options_.position != PositionEmbedding::rope) return x;
  const int64_t d = options_.d_model / options_.n_heads;
  return rotary_embedding(x, d, x.size(2), 0, options_.rope_theta);
}

bool MultiHeadAttention::fused_bidirectional() const {
  return options_.pattern.is_bidirectional() && options_.score == AttentionScore::dot &&
         !keep_weights_ && head_mask_.empty() && (options_.dropout == 0.0 || !is_training());
}

Tensor MultiHeadAttention::forward(const Tensor& query, const Tensor& memory, const Attend& how) {
  const int64_t c = options_.d_model, h = options_.n_heads, kvh = options_.kv_heads();
  const bool reuse_memory = how.cache != nullptr && !how.causal && how.cache->k.defined();
  const bool shapes_ok = query.ndim() == 3 && query.size(2) == c &&
                         (reuse_memory || (memory.defined() && memory.ndim() == 3 &&
                                           memory.size(2) == c && memory.size(0) == query.size(0)));
  if (!shapes_ok) {
    throw ShapeError(Operation("MultiHeadAttention"), fmt::format("expects query (B,Tq,{0}) and memory "
                                 "(B,Tk,{0}); got query {1}, memory {2}", c, query.shape().str(),
                                 memory.defined() ? memory.shape().str() : "none"));
  }
  const int64_t b = query.size(0), tq = query.size(1);
  if (how.causal && how.cache == nullptr && memory.size(1) != tq) {
    throw ShapeError(Operation("MultiHeadAttention"), fmt::format("causal attention is self-attention; query "
                                 "{} and memory {} differ in length", query.shape().str(),
                                 memory.shape().str()));
  }
  if (!how.memory_lengths.empty() && static_cast<int64_t>(how.memory_lengths.size()) != b) {
    throw ShapeError(Operation("MultiHeadAttention"), fmt::format("{} memory lengths for a batch of {}",
                                 how.memory_lengths.size(), b));
  }
  if (how.cache != nullptr && (how.cache->ring > 0 || how.cache->recurrent)) {
    throw ValueError(Operation("MultiHeadAttention"), "takes a cache that keeps every position");
  }
  const bool rope = options_.position == PositionEmbedding::rope;
  const bool alibi = options_.position == PositionEmbedding::alibi;
  if ((rope || alibi) && how.cache != nullptr) {
    throw ValueError(Operation("MultiHeadAttention"),
                     fmt::format("{} positions run without a cache",
                                 position_embedding_name(options_.position)));
  }
  if (options_.pattern.is_bidirectional() && (how.cache != nullptr || memory.size(1) != tq)) {
    throw ShapeError(Operation("MultiHeadAttention"),
                     fmt::format("{} is self-attention without a cache; got {} queries, {} keys",
                                 options_.pattern.str(), tq, memory.size(1)));
  }
  const Tensor q_rows = rotated(q_proj->forward(query));  // (B,Tq,C)
  const Tensor q = split_heads(q_rows, h);                // (B,H,Tq,d)
  Tensor k, v;                                              // (B,Hkv,Tk,d)
  std::vector<int64_t> key_positions;
  int64_t first_query = 0;
  if (reuse_memory) {
    k = how.cache->k;
    v = how.cache->v;
  } else {
    // Where the score is linear in the key (dot, general) and RoPE does not turn the keys, the
    // key bias adds one constant to every score of a query's row, which softmax ignores: its exact
    // gradient is zero, and the rounding noise in its place would make AdamW walk it at random
    // (MultiHeadSelfAttention::forward says more). It enters detached there, its gradient the
    // exact 0. RoPE turns each key by its position, so q.b_k differs along the row, and under
    // tanh (concat, additive) it matters: there it learns.
    const bool bias_constant_along_row =
        !rope && (options_.score == AttentionScore::dot || options_.score == AttentionScore::general);
    Tensor keys = matmul(memory, k_proj->weight, false, true);  // (B,Tk,KV)
    if (k_proj->bias.defined()) keys = keys + (bias_constant_along_row ? k_proj->bias.detach() : k_proj->bias);
    const Tensor k_rows = rotated(keys), v_rows = v_proj->forward(memory);  // (B,Tk,KV)
    if (fused_bidirectional()) {
      last_weights_ = Tensor();
      return out_proj->forward(bidirectional_self_attention(
          concat({q_rows, k_rows, v_rows}, 2), h, kvh, alibi, options_.pattern, how.memory_lengths));
    }
    k = split_heads(k_rows, kvh);
    v = split_heads(v_rows, kvh);
    if (how.cache != nullptr && how.causal) {
      first_query = how.cache->seen;
      KVCache::Attended kept = how.cache->extend(k, v);
      k = kept.k;
      v = kept.v;
      key_positions = std::move(kept.positions);
    } else if (how.cache != nullptr) {
      how.cache->k = k.detach();
      how.cache->v = v.detach();
      how.cache->seen = k.size(2);
    }
  }
  const int64_t tk = k.size(2);
  Tensor mask;
  if (how.causal) {
    mask = key_positions.empty() ? causal_mask(tq, tk)
                                 : pattern_mask(AttentionPattern{}, first_query, tq, key_positions);
  } else if (options_.pattern.is_bidirectional()) {
    mask = pattern_mask(options_.pattern, tq, tk);
  }
  if (!how.memory_lengths.empty()) {
    const Tensor pad = padding_mask(how.memory_lengths, tk);  // (B,1,1,Tk)
    mask = mask.defined() ? mask + pad : pad;
  }
  const Tensor keys = repeat_heads(k, h / kvh), values = repeat_heads(v, h / kvh);
  auto [y, weights] =
      options_.score == AttentionScore::dot
          ? scaled_dot_product_attention(q, keys, values, mask, options_.dropout, is_training(),
                                         noise_.get(), alibi, {}, {}, 0,
                                         how.causal ? AlibiForm::causal : AlibiForm::symmetric)
          : attend_by_scores(learned_scores(q, keys), values, mask, options_.dropout,
                             is_training(), noise_.get());  // (B,H,Tq,d), (B,H,Tq,Tk)
  last_weights_ = keep_weights_ ? weights.detach() : Tensor();
  if (!head_mask_.empty()) y = y * Tensor::from(head_mask_, {1, h, 1, 1}, y.dtype());
  // (B,H,Tq,d) -> (B,Tq,H,d) -> (B,Tq,C)
  return out_proj->forward(reshape(permute(y, {0, 2, 1, 3}), {b, tq, c}));
}

}  // namespace tinygpt::nn
