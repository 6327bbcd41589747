#pragma once
// A weight matrix kept in bf16 for products of one row: generation in bf16 (`sample --precision
// bf16`) rounds each weight once, when it starts, and then reads half the bytes per token that the
// f32 weights would take. The products follow Precision::bf16's contract (precision.hpp): both
// operands rounded to bf16 (nearest even), the sums in f32.
#include <cstdint>
#include <vector>

#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt {

class Bf16Weight {
 public:
  // `weight` (K, N) f32 as linear takes it, or (N, K) when `transposed` (as matmul(x, weight,
  // false, true) takes it, e.g. a tied embedding as the LM head). ShapeError unless it is a
  // matrix of f32.
  Bf16Weight(const Tensor& weight, bool transposed);

  int64_t in_features() const { return k_; }
  int64_t out_features() const { return n_; }
  int64_t bytes() const { return static_cast<int64_t>(words_.size() * sizeof(uint16_t)); }
  // N rows of K values each (W's columns), rounded, then zeros up to row_stride(), a multiple of
  // 32: each row is whole 64-byte vectors of value pairs, the operand of the bf16 dot products.
  const uint16_t* rows() const { return words_.data(); }
  int64_t row_stride() const { return stride_; }

 private:
  int64_t k_ = 0, n_ = 0, stride_ = 0;
  std::vector<uint16_t> words_;
};

// x @ W + bias for x (..., K) holding one row (a decode step's), out (..., N) f32. x is rounded
// to bf16; the products run on the CPU's bf16 dot products (vdpbf16ps) where it has avx512_bf16,
// elsewhere on a portable loop that sums in the same order. Inference only: it records nothing on
// the tape, so ValueError when x requires a gradient while grad mode is on; ShapeError naming the
// shapes unless x is one row of K and bias (N) f32 or undefined. `portable` runs the portable
// loop on any CPU (tests hold the two against each other).
Tensor linear_bf16(const Tensor& x, const Bf16Weight& weight, const Tensor& bias = {},
                   bool portable = false);

}  // namespace tinygpt
