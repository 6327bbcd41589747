#pragma once
// Scaled dot-product attention and multi-head self-attention.
#include <memory>
#include <vector>

#include "tinygpt/autograd/attention_pattern.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/nn/dropout.hpp"
#include "tinygpt/nn/hooks.hpp"
#include "tinygpt/nn/kv_cache.hpp"
#include "tinygpt/nn/linear.hpp"
#include "tinygpt/nn/position.hpp"

namespace tinygpt::nn {

struct AttentionResult {
  Tensor output;   // (B,H,Tq,d)
  Tensor weights;  // (B,H,Tq,Tk), before dropout; each unmasked row sums to 1
};

// softmax(Q K^T / sqrt(d) + mask) V for Q (B,H,Tq,d) and K, V (B,H,Tk,d); Tq may differ from Tk.
// `mask` (optional) broadcasts to (B,H,Tq,Tk); where it is nonzero the weight is exactly 0, and a
// row with every key masked gets all-zero weights. Dropout on the weights needs `gen` when
// training with dropout_p > 0. `alibi` adds ALiBi's bias to the scores (alibi_bias in ops.hpp).
// `edit_weights` (optional) replaces the weights before dropout and the product with v (the
// attn.pattern hook point); `weights` is then its result. `key_positions` (optional, Tk) and
// `first_query` place keys and queries for ALiBi's distances, as alibi_bias takes them, in
// `alibi_form` (symmetric for bidirectional attention).
AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& mask = {}, double dropout_p = 0.0,
                                             bool training = false, Generator* gen = nullptr,
                                             bool alibi = false, const Hook& edit_weights = {},
                                             const std::vector<int64_t>& key_positions = {},
                                             int64_t first_query = 0,
                                             AlibiForm alibi_form = AlibiForm::causal);

// The same for scores (B,H,Tq,Tk) computed any other way: softmax(scores + mask) v, with the
// mask, hook and dropout as above.
AttentionResult attend_by_scores(Tensor scores, const Tensor& v, const Tensor& mask = {},
                                 double dropout_p = 0.0, bool training = false,
                                 Generator* gen = nullptr, const Hook& edit_weights = {});

// Bahdanau's additive scores v_a^T tanh(q_i + k_j) per head: q (B,H,Tq,d), k (B,H,Tk,d), v_a
// (H,d) -> (B,H,Tq,Tk). q_i and k_j are the projections W_a s_i and U_a h_j of the decoder and
// encoder states. Holds (B,H,Tq,Tk,d) for the backward pass.
Tensor additive_scores(const Tensor& q, const Tensor& k, const Tensor& v_a);

// Linear attention's general path (Katharopoulos et al. 2020): weights phi(q_i).phi(k_j) /
// sum_j' phi(q_i).phi(k_j') with phi = elu + 1, over the keys `mask` leaves (no 1/sqrt(d)), then
// the same hook, dropout and product with v. Equals causal_linear_attention (ops.hpp), which
// never forms the weights, under a causal mask.
AttentionResult linear_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Tensor& mask = {}, double dropout_p = 0.0,
                                 bool training = false, Generator* gen = nullptr,
                                 const Hook& edit_weights = {});
// The same from features already mapped: fq (B,H,Tq,M) = phi(q), fk (B,H,Tk,M) = phi(k), v
// (B,H,Tk,d); weights fq_i.fk_j / sum_j' fq_i.fk_j' over the keys `mask` leaves (Performer's
// general path, with performer_features as phi).
AttentionResult feature_attention(const Tensor& fq, const Tensor& fk, const Tensor& v,
                                  const Tensor& mask = {}, double dropout_p = 0.0,
                                  bool training = false, Generator* gen = nullptr,
                                  const Hook& edit_weights = {});

// Linear attention for T new positions continuing the running sums of a recurrent cache: q
// (B,H,T,d), k and v (B,Hkv,T,d) -> (B,H,T,d); the positions among themselves weigh by the implied
// weights, the earlier ones through the cache's (d,d) state, which the call then extends. O(T^2 d
// + T d^2) for a prompt, O(d^2) per generated token, whatever the length before.
Tensor recurrent_linear_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                  KVCache& cache);
// The same from features already mapped: fq (B,H,T,M), fk (B,Hkv,T,M), v (B,Hkv,T,d); the
// cache's state is then (M,d) and M per key/value head.
Tensor recurrent_feature_attention(const Tensor& fq, const Tensor& fk, const Tensor& v,
                                   KVCache& cache);

// Performer's (M, d) random feature matrix (f32): blocks of d orthogonal directions, each block
// the Q of a QR factorisation (Gram-Schmidt) of a (d,d) Gaussian matrix, the last block cut to
// the M mod d rows left; row norms are then drawn from chi(d), the norm of a d-dimensional
// Gaussian vector (FAVOR+'s "regularized" orthogonal features).
Tensor orthogonal_random_features(int64_t features, int64_t d, Generator& gen);

// Redraws the random features of every Performer attention in `model` whose schedule falls
// on `step` (steps done; redraw_every > 0 dividing it, step > 0), layer i from a generator
// seeded by (seed, step, i): a run resumed at any step draws what an uninterrupted one did.
void redraw_performer_features(Module& model, int64_t step, uint64_t seed);

// ValueError naming `op` for a pattern the position scheme cannot run with: linear attention
// takes learned, sinusoidal or no positions (ALiBi biases softmax scores; RoPE inside phi has no
// settled form).
void check_pattern_positions(const AttentionPattern& pattern, PositionEmbedding position,
                             const char* op);

// (Tq, Tk) mask, 1 where key j lies in the future of query i. Queries are the last Tq of the
// Tk positions (so with a KV cache, query i sits at position Tk - Tq + i).
Tensor causal_mask(int64_t tq, int64_t tk);
// The same for any pattern (tinygpt/autograd/attention_pattern.hpp): 1 where query i may not
// see key j; causal_mask is the full pattern's.
Tensor pattern_mask(const AttentionPattern& pattern, int64_t tq, int64_t tk);
// The same for keys at the given positions (a cache's slots; negative: an empty slot, always
// hidden) and queries at first_query, first_query + 1, ...
Tensor pattern_mask(const AttentionPattern& pattern, int64_t first_query, int64_t tq,
                    const std::vector<int64_t>& key_positions);
// (B,1,1,Tk) mask, 1 where key j >= lengths[b] (padding at the end of each sequence).
Tensor padding_mask(const std::vector<int64_t>& lengths, int64_t tk);

struct AttentionOptions {
  int64_t d_model = 0;
  int64_t n_heads = 1;
  double dropout = 0.0;  // on the attention weights and on the output
  bool causal = true;
  bool bias = true;
  int64_t n_kv_heads = 0;  // key/value heads, dividing n_heads; 0 means n_heads
  // rope rotates q and k, alibi biases the scores; the others are not attention's concern.
  PositionEmbedding position = PositionEmbedding::learned;
  double rope_theta = 10000.0;
  AttentionPattern pattern{};  // which earlier keys a query sees (causal attention only)
  bool scale_scores = true;    // false: softmax of q.k itself, not of q.k / sqrt(head width)

  // Each head's width; 0 means d_model / n_heads. A layer with pruned heads keeps the width
  // of the heads it has left: its q, k, v and c_proj's input are n_heads x head_dim wide.
  int64_t head_dim = 0;

  int64_t kv_heads() const { return n_kv_heads > 0 ? n_kv_heads : n_heads; }
  int64_t head_width() const { return head_dim > 0 ? head_dim : d_model / n_heads; }
};

// Fused QKV projection (c_attn, (C, C + 2 kv_heads d): queries, then keys, then values), heads
// split by reshape, scaled dot-product attention in which query head h uses key/value head
// h / (n_heads / kv_heads), output projection (c_proj). The (B,H,T,T) weights of the last
// forward stay available.
class MultiHeadSelfAttention : public Module {
 public:
  MultiHeadSelfAttention(const AttentionOptions& options, Generator& init,
                         std::shared_ptr<Generator> noise);

  // x (B,T,C) -> (B,T,C). `lengths` (optional, one per sequence) masks padded keys; `cache`
  // (optional) holds earlier positions' keys and values and is extended with this call's.
  Tensor forward(const Tensor& x, const std::vector<int64_t>& lengths = {},
                 KVCache* cache = nullptr);

  // (B,H,T,Tk) attention weights of the last forward, kept when keep_attention_weights is on
  // (undefined otherwise). Off, plain causal attention takes the fused path, which never
  // materialises the weights (causal_self_attention in tinygpt/autograd/ops.hpp); masks, a cache, attention dropout or a
  // hook on an attn.* point use the general path either way.
  const Tensor& attention_weights() const { return last_weights_; }
  void set_keep_attention_weights(bool keep) { keep_weights_ = keep; }
  const AttentionOptions& options() const { return options_; }
  // Performer's (M, head width) random features, a buffer; undefined for other patterns.
  const Tensor& performer_features() const { return features_; }
  // Replaces them by a fresh draw from `gen` (orthogonal_random_features).
  void redraw_features(Generator& gen);
  // The block's hooks (attn.q ... attn.z points; see hooks.hpp), or null; owned by the GPT.
  void set_hooks(const LayerHooks* hooks) { hooks_ = hooks; }

  std::shared_ptr<Linear> c_attn;  // (C, C + 2 KV): q, k, v side by side; KV = 3C's C for MHA
  std::shared_ptr<Linear> c_proj;  // (C, C)
  std::shared_ptr<Dropout> resid_dropout;  // on the output; weights get theirs inside attention

 private:
  Tensor forward_recurrent(Tensor q, Tensor k, Tensor v, KVCache& cache);
  Tensor project_heads(const Tensor& y);  // (B,H,T,d) heads -> c_proj -> dropout (B,T,C)
  // phi of q or k (..., d) for linear attention (elu + 1) or Performer (its random features).
  Tensor phi(const Tensor& x, bool query) const;
  // Performer's fused path: the packed qkv's q and k through phi, then causal_feature_attention.
  Tensor fused_performer(const Tensor& packed) const;

  AttentionOptions options_;
  std::shared_ptr<Generator> noise_;
  bool keep_weights_ = false;
  Tensor last_weights_;
  Tensor features_;  // Performer's (M, d) random features
  const LayerHooks* hooks_ = nullptr;
};

}  // namespace tinygpt::nn
