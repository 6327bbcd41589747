#pragma once
// Multi-head attention with separate query and key/value inputs, as torch.nn.MultiheadAttention
// and Hugging Face's BartAttention: mha(x, memory) projects queries from x (B,Tq,C) and keys and
// values from memory (B,Tk,C). mha(x, x) with `causal` is a decoder's self-attention; without,
// an encoder's; mha(y, encoder_output) is cross-attention.
#include <memory>
#include <string>
#include <vector>

#include "tinygpt/autograd/attention_pattern.hpp"
#include "tinygpt/nn/kv_cache.hpp"
#include "tinygpt/nn/linear.hpp"
#include "tinygpt/nn/position.hpp"

namespace tinygpt::nn {

// How a query scores a key, per head, on the projected query q_i and key k_j (width d):
//   dot       q_i . k_j / sqrt(d)             (Luong's dot, with the Transformer's scale)
//   general   q_i^T W_a k_j                   (Luong's general; W_a (d,d) per head)
//   concat    v_a^T tanh(W_a [q_i; k_j])      (Luong's concat; W_a (d,2d) per head)
//   additive  v_a^T tanh(q_i + k_j)           (Bahdanau's v_a^T tanh(W_a s_i + U_a h_j): the
//                                              query and key projections are W_a and U_a)
// concat and additive score the same family of functions; concat spends a matrix on it.
enum class AttentionScore { dot, general, concat, additive };
AttentionScore parse_attention_score(const std::string& name);  // ValueError naming the choices
const char* attention_score_name(AttentionScore score);

struct MultiHeadAttentionOptions {
  int64_t d_model = 0;
  int64_t n_heads = 1;
  int64_t n_kv_heads = 0;  // key/value heads, dividing n_heads (grouped-query); 0 means n_heads
  double dropout = 0.0;    // on the attention weights
  bool bias = true;
  // rope rotates q and k, alibi biases the scores (its symmetric form unless causal); the other
  // schemes act on the embeddings, outside attention. Positions run from 0 in query and memory:
  // self-attention without a cache.
  PositionEmbedding position = PositionEmbedding::learned;
  double rope_theta = 10000.0;
  AttentionScore score = AttentionScore::dot;
  // The keys a query sees in bidirectional self-attention: all (full) or a bidirectional
  // BigBird's (AttentionPattern::bidirectional_over); causal calls see every earlier key.
  AttentionPattern pattern{};

  int64_t kv_heads() const { return n_kv_heads > 0 ? n_kv_heads : n_heads; }
};

// What one call attends over, beyond its two inputs.
struct Attend {
  bool causal = false;  // query i sees memory positions <= i (self-attention, Tq == Tk)
  // Valid memory positions per sequence (padding at the end); empty: every position is valid.
  // A padded position gets exactly zero weight.
  std::vector<int64_t> memory_lengths;
  // Incremental decoding. Causal attention appends this call's keys and values to the cache and
  // attends over all of them (decoder self-attention, one new position at a time); non-causal
  // attention projects the memory into the cache on the first call and reuses it afterwards
  // (cross-attention: the encoder's keys and values are computed once per source).
  KVCache* cache = nullptr;
};

// q_proj (C,C), k_proj and v_proj (KV,C), out_proj (C,C), stored (out, in) as nn.Linear; KV =
// n_kv_heads x head width. Query head h reads key/value head h / (n_heads / n_kv_heads). The
// scores other than dot add score_weight (general: (H d, d), concat: (H d, 2 d), head h's W_a
// in rows h d .. h d + d) and score_vector (concat and additive: (H, d), head h's v_a in row h).
class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(const MultiHeadAttentionOptions& options, Generator& init,
                     std::shared_ptr<Generator> noise);

  // query (B,Tq,C), memory (B,Tk,C) -> (B,Tq,C).
  Tensor forward(const Tensor& query, const Tensor& memory, const Attend& how = {});

  // (B,H,Tq,Tk) weights of the last forward when keep_attention_weights is on (else undefined).
  const Tensor& attention_weights() const { return last_weights_; }
  void set_keep_attention_weights(bool keep) { keep_weights_ = keep; }
  // Multiplies head h's output by mask[h] (H values, 1 keeps, 0 removes) before out_proj, for
  // ablations; an empty mask keeps every head.
  void set_head_mask(std::vector<double> mask);
  const MultiHeadAttentionOptions& options() const { return options_; }

  std::shared_ptr<Linear> q_proj, k_proj, v_proj, out_proj;
  Tensor score_weight, score_vector;  // undefined where the score has none

 private:
  // q (B,H,Tq,d), k (B,H,Tk,d) -> the scores (B,H,Tq,Tk) of a score other than dot.
  Tensor learned_scores(const Tensor& q, const Tensor& k) const;
  // (B,T,n d) -> (B,n,T,d)
  Tensor split_heads(const Tensor& x, int64_t n) const;
  // Projected queries or keys (B,T,n d) turned by RoPE at positions 0..T-1; x itself otherwise.
  Tensor rotated(const Tensor& x) const;
  // Whether a bidirectional pattern runs on the fused kernel (bidirectional_self_attention):
  // with dot scores and no weights to keep, head mask or attention dropout in play. It equals
  // the general path with the same mask, which `heads` (keeping the weights) still runs.
  bool fused_bidirectional() const;

  MultiHeadAttentionOptions options_;
  std::shared_ptr<Generator> noise_;
  bool keep_weights_ = false;
  Tensor last_weights_;
  std::vector<double> head_mask_;  // one per head; empty when every head is kept
};

}  // namespace tinygpt::nn
