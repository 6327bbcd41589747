#pragma once
// The differentiable ops. Each is defined in autograd/src/ops/<family>.cpp with its backward
// right beside its forward. Binary elementwise ops broadcast as NumPy does. Axes may be
// negative. Bad calls throw ShapeError / IndexError / ValueError naming the op and the shapes.
#include <cstdint>
#include <vector>

#include "tinygpt/autograd/attention_pattern.hpp"
#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt {

// ---- Elementwise, broadcasting (ops/binary.cpp) ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double s);
Tensor mul(const Tensor& a, double s);
Tensor rsub(double s, const Tensor& a);  // s - a
Tensor rdiv(double s, const Tensor& a);  // s / a

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double s) { return add(a, s); }
inline Tensor operator+(double s, const Tensor& a) { return add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return add(a, -s); }
inline Tensor operator-(double s, const Tensor& a) { return rsub(s, a); }
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return mul(a, 1.0 / s); }
inline Tensor operator/(double s, const Tensor& a) { return rdiv(s, a); }

// ---- Elementwise, one input (ops/unary.cpp) ----
Tensor neg(const Tensor& x);
inline Tensor operator-(const Tensor& x) { return neg(x); }
Tensor pow(const Tensor& x, double exponent);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor elu_plus_one(const Tensor& x);  // elu(x) + 1: x + 1 above 0, exp(x) below; always > 0
Tensor gelu(const Tensor& x);  // tanh approximation, as GPT-2
Tensor gelu_erf(const Tensor& x);  // the exact form x Phi(x), as BERT

// ---- Reductions (ops/reduce.cpp) ----
Tensor sum(const Tensor& x);  // all elements -> shape ()
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim = false);
// Maximum over axes; the gradient is shared equally among tied maxima (as torch.amax).
Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim = false);

// ---- Broadcasting (ops/broadcast.cpp) ----
// Sums `x` over its broadcast axes so that it has `shape` (the backward of a broadcast).
Tensor sum_to(const Tensor& x, const Shape& shape);
// Repeats `x` along its size-1 and missing leading axes to `shape`.
Tensor broadcast_to(const Tensor& x, const Shape& shape);

// ---- Matrix products (ops/matmul.cpp, ops/linear.cpp; products in src/kernels/product.hpp) ----
// a (..., M, K) @ b (..., K, N) -> (..., M, N). Batch dims (0 to 2 of them) must be equal,
// or one operand is 2-D and is applied to every batch. trans_a / trans_b read an operand as
// its transpose over the last two axes, as a BLAS flag rather than a copy.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// x (..., K) @ weight (K, N) + bias (N) as one op: the GEMM starts from the bias (no separate
// broadcast add, no extra buffer), and the backward gives the bias gradient as column sums of
// the upstream gradient. bias may be undefined. Equals matmul(x, weight) + bias.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
// linear(gelu(h), weight, bias) as one op. Under Precision::bf16 it keeps only h rounded to bf16
// (GELU reads that rounding, as autocast's bf16 activations do) and recomputes gelu(h) for the
// backward pass: an MLP keeps a third of what the two ops would keep (h in f32, gelu(h) in bf16).
// In f32 and f64 it equals the two ops bit for bit, and keeps what they keep.
Tensor gelu_linear(const Tensor& h, const Tensor& weight, const Tensor& bias);

// ---- Layout: views, slices, concat and split (ops/layout.cpp) ----
// Same elements in a new shape (one entry may be -1); shares the data of x.
Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape);
Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& axes);
// x[..., start:start+length, ...] along `axis`.
Tensor narrow(const Tensor& x, int64_t axis, int64_t start, int64_t length);
// x[..., start:stop:step, ...] along `axis`; negative start/stop count from the end.
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step = 1);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis);

// ---- Softmax family (ops/softmax.cpp) ----
// Stable: subtracts the row maximum; rows that are entirely -inf give zeros, not NaN.
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
// x where mask == 0, `value` where mask != 0; mask (any dtype) broadcasts to x's shape.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// Grouped-query attention's sharing (ops/layout.cpp): x (B,KV,T,d) -> (B,KV*repeats,T,d), head h
// being head h / repeats of x; the backward sums each group's gradients.
Tensor repeat_heads(const Tensor& x, int64_t repeats);

// ---- Fused causal self-attention (ops/attention.cpp) ----
// qkv (B,T,C + 2 KV) = [q | k | v]: q holds n_heads heads of width d side by side (C = n_heads
// d), k and v n_kv_heads each (KV = n_kv_heads d; 0 means n_heads, GPT-2's (B,T,3C) c_attn
// layout) -> y (B,T,C) with the heads side by side again. Query head h attends with key/value
// head h / (n_heads / n_kv_heads) (grouped-query attention; n_kv_heads 1 is multi-query).
// Equals softmax(causal(q k^T / sqrt(d) + bias)) v per head, with ALiBi's bias -m_h (i - j) when
// `alibi`, but never holds the (T,T) weights: the forward saves each query row's log-sum-exp and
// the backward recomputes the weights from it, as FlashAttention does, so memory grows linearly
// in T and the heads are read in place (no split, permute or merge copies). `pattern` limits
// the keys each query sees (attention_pattern.hpp); the keys no query of a block of 64 sees are
// skipped, not computed and masked.
Tensor causal_self_attention(const Tensor& qkv, int64_t n_heads, int64_t n_kv_heads = 0,
                             bool alibi = false, const AttentionPattern& pattern = {});
// The same kernel for an encoder's bidirectional pattern (AttentionPattern::bidirectional_over):
// query i sees the keys j with pattern.visible(i, j) and j < lengths[b] (padded keys get weight
// 0; empty lengths: none padded), ALiBi's bias symmetric, -m_h |i - j|. A padded query row
// attends as any other; a row that sees no key gives 0, as scaled_dot_product_attention does
// with the same mask. O(T (W + G + R B)) time, no (T,T) buffer.
Tensor bidirectional_self_attention(const Tensor& qkv, int64_t n_heads, int64_t n_kv_heads,
                                    bool alibi, const AttentionPattern& pattern,
                                    const std::vector<int64_t>& lengths);

// Causal linear attention (Katharopoulos et al. 2020; ops/linear_attention.cpp) on the same packed
// qkv: with phi(x) = elu(x) + 1, out_i = sum_{j<=i} (phi(q_i).phi(k_j)) v_j / sum_{j<=i}
// phi(q_i).phi(k_j) per head -- no softmax, no 1/sqrt(d) -- by running sums: O(T d^2) time, O(d^2)
// state per head. Query head h reads key/value head h / (n_heads / n_kv_heads).
Tensor causal_linear_attention(const Tensor& qkv, int64_t n_heads, int64_t n_kv_heads = 0);
// The same running sums over features given per head: packed (B,T,H M + Hkv M + Hkv d) holds
// phi(q) of the H query heads (M wide each), then phi(k) of the Hkv key/value heads, then their
// values (d wide); -> (B,T,H d). The features must be positive (Performer's are).
Tensor causal_feature_attention(const Tensor& packed, int64_t n_heads, int64_t n_kv_heads,
                                int64_t features);
// FAVOR+'s positive random features (Choromanski et al. 2020; ops/performer.cpp): x (..., d),
// omega (M, d) -> (..., M), with x scaled by c = d^(-1/4) so that phi(q).phi(k) estimates
// exp(q.k / sqrt(d)) without bias:
//   phi(x)_j = exp(c w_j.x - c^2 |x|^2 / 2 - s) / sqrt(M).
// s = 0 for keys, and for queries (`query`) the row's max_j c w_j.x, as the reference
// implementation subtracts it: a per-query factor that cancels between a row's weights and their
// normaliser, and keeps exp from overflowing. Keys need none (their exponent is at most
// |w_j|^2 / 2), and the reference's max over all keys would tie each key to later ones. The
// gradient flows to x only (omega is drawn, not learned).
Tensor performer_features(const Tensor& x, const Tensor& omega, bool query);

// ---- Positions inside attention (ops/rotary.cpp, ops/alibi.cpp) ----
// Rotary position embedding in Hugging Face's LLaMA/GPT-NeoX "rotate half" form: x (B,T,W); the
// first `rotated` columns (a multiple of head_dim, which is even) are heads of width d =
// head_dim, each rotated at position offset + t: dimension i < d/2 pairs with i + d/2,
//   out[i] = x[i] cos a - x[i + d/2] sin a,  out[i + d/2] = x[i + d/2] cos a + x[i] sin a,
// a = (offset + t) theta^(-2i/d). Columns from `rotated` on are copied (the values of a packed
// qkv, which RoPE leaves alone).
Tensor rotary_embedding(const Tensor& x, int64_t head_dim, int64_t rotated, int64_t offset = 0,
                        double theta = 10000.0);
// ALiBi's head slopes as the paper's reference code (get_slopes) gives them: 2^(-8h/n), h = 1..n,
// for n a power of two; otherwise those of the power of two below n followed by every other
// slope of twice that power.
std::vector<double> alibi_slopes(int64_t n_heads);
// scores (B,H,Tq,Tk) + ALiBi's bias -m_h (i - j) for query position i and key position j, the
// queries being the last Tq of the Tk keys (as with a KV cache). Or, given key_positions (Tk of
// them: a cache's slots, whose order need not be their positions'), key k sits at
// key_positions[k] and query q at first_query + q. The symmetric form, for bidirectional
// attention, adds -m_h |i - j| instead, so a later key is as far as an earlier one. The gradient
// passes through.
enum class AlibiForm { causal, symmetric };
Tensor alibi_bias(const Tensor& scores, const std::vector<int64_t>& key_positions = {},
                  int64_t first_query = 0, AlibiForm form = AlibiForm::causal);

// ---- Lookup, loss, normalisation, dropout (ops/<name>.cpp: one file each) ----
// weight (V, C), ids (...) of dtype i64 -> (..., C). Backward scatter-adds into weight rows.
Tensor embedding(const Tensor& weight, const Tensor& ids);
// logits (..., V), targets (...) of dtype i64 -> mean negative log-likelihood over the targets
// that are not ignore_index, fused with a stable log-softmax. Returns 0 if all are ignored.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100);
// Normalises over the last axis, then scales and shifts; weight and bias are (C) or undefined.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
// Inverted dropout: zeroes each element with probability p and scales the rest by 1/(1-p).
// Identity (the same tensor) when !training or p == 0.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);

}  // namespace tinygpt
