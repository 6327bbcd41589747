#pragma once
// Multi-head attention with separate query and key/value inputs, as torch.nn.MultiheadAttention
// and Hugging Face's BartAttention: mha(x, memory) projects queries from x (B,Tq,C) and keys and
// values from memory (B,Tk,C). mha(x, x) with `causal` is a decoder's self-attention; without,
// an encoder's; mha(y, encoder_output) is cross-attention.
#include <memory>
#include <vector>

#include "tinygpt/nn/kv_cache.hpp"
#include "tinygpt/nn/linear.hpp"
#include "tinygpt/nn/position.hpp"

namespace tinygpt::nn {

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
// n_kv_heads x head width. Query head h reads key/value head h / (n_heads / n_kv_heads).
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

 private:
  // (B,T,n d) -> (B,n,T,d)
  Tensor split_heads(const Tensor& x, int64_t n) const;
  // Projected queries or keys (B,T,n d) turned by RoPE at positions 0..T-1; x itself otherwise.
  Tensor rotated(const Tensor& x) const;

  MultiHeadAttentionOptions options_;
  std::shared_ptr<Generator> noise_;
  bool keep_weights_ = false;
  Tensor last_weights_;
  std::vector<double> head_mask_;  // one per head; empty when every head is kept
};

}  // namespace tinygpt::nn
