#pragma once
// bf16 products for the door (blas.hpp): operands rounded to bfloat16 (nearest even), products
// accumulated in f32 on oneDNN's matmul, one primitive per shape kept by each thread. Only used
// where the CPU has avx512_bf16 (set_matmul_precision checks).
#include <cstdint>
#include <cstring>

namespace tinygpt::detail {

using bf16 = uint16_t;  // the upper half of an f32

// rows x cols of f32 (leading dimension ld) -> packed (rows, cols) bf16.
void to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, bf16* dst);

// Exact: a bf16 is the upper half of an f32.
inline float from_bf16(bf16 v) {
  const uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// C (f32) = alpha op(A) op(B) + bias + beta C on bf16 A and B, on the calling thread; `bias` (n
// values, or none) is added to every row.
void gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a,
               int64_t lda, const bf16* b, int64_t ldb, float beta, float* c, int64_t ldc,
               const float* bias = nullptr);

}  // namespace tinygpt::detail
