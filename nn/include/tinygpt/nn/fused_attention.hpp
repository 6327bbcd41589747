#pragma once
// Causal self-attention straight from the packed QKV projection, without keeping the (T,T)
// attention weights: the forward saves each query row's log-sum-exp and the backward recomputes
// the weights from it, as FlashAttention does. Memory grows linearly in T, and the heads are
// read in place (no split, permute or merge copies).
#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::nn {

// qkv (B,T,3C) = [q | k | v], each C = n_heads x d with heads side by side (GPT-2's c_attn
// layout) -> y (B,T,C) with the heads side by side again. Equals the causal
// scaled_dot_product_attention on the split heads (tests check both agree).
Tensor causal_self_attention(const Tensor& qkv, int64_t n_heads);

}  // namespace tinygpt::nn
