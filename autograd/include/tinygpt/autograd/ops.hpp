#pragma once
// The differentiable ops. Each is defined in autograd/src/ops/<family>.cpp with its backward
// right beside its forward. Binary elementwise ops broadcast as NumPy does. Axes may be
// negative. Bad calls throw ShapeError / IndexError / ValueError naming the op and the shapes.
#include <cstdint>
#include <vector>

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
Tensor gelu(const Tensor& x);  // tanh approximation, as GPT-2

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

// ---- Matrix product through BLAS (ops/matmul.cpp) ----
// a (..., M, K) @ b (..., K, N) -> (..., M, N). Batch dims (0 to 2 of them) must be equal,
// or one operand is 2-D and is applied to every batch. trans_a / trans_b read an operand as
// its transpose over the last two axes, as a BLAS flag rather than a copy.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// x (..., K) @ weight (K, N) + bias (N) as one op: the GEMM starts from the bias (no separate
// broadcast add, no extra buffer), and the backward gives the bias gradient as column sums of
// the upstream gradient. bias may be undefined. Equals matmul(x, weight) + bias.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

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

// ---- Fused causal self-attention (ops/attention.cpp) ----
// qkv (B,T,3C) = [q | k | v], each C = n_heads x d with heads side by side (GPT-2's c_attn
// layout) -> y (B,T,C) with the heads side by side again. Equals softmax(causal(q k^T /
// sqrt(d))) v per head, but never holds the (T,T) weights: the forward saves each query row's
// log-sum-exp and the backward recomputes the weights from it, as FlashAttention does, so memory
// grows linearly in T and the heads are read in place (no split, permute or merge copies).
Tensor causal_self_attention(const Tensor& qkv, int64_t n_heads);

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
