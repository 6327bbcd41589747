#pragma once
// f32 values kept rounded to bf16 for a backward pass under Precision::bf16 (as autocast saves
// its bf16 casts): half the memory, and the products that read them round nothing again.
#include <cstdint>

#include "kernels/gemm_bf16.hpp"
#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::detail {

using kernels::bf16;

struct Rounded {
  Tensor storage;  // f32 slots from the allocator, holding two bf16 each
  const bf16* data = nullptr;

  // Room for `count` bf16 values, for the caller to fill through `out`.
  static Rounded room(int64_t count, bf16*& out);
};

// `count` f32 values, rows of `ld`, rounded row by row on the OpenMP team.
Rounded round_rows(const float* x, int64_t count, int64_t ld);

// Under Bf16Products::f32_fma: `count` values -- bf16, or f32 rounded to bf16 here -- as f32
// holding the bf16 values exactly (widen_bf16), rows of `ld`, on the OpenMP team. From: bf16 or
// float.
template <class From>
Tensor widened_rows(const From* x, int64_t count, int64_t ld);

// An f32 tensor's values, packed with its last axis as rows.
Rounded rounded(const Tensor& x);

}  // namespace tinygpt::detail
