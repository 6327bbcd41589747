#pragma once
// The one door to the matrix-product libraries for the ops (matmul, linear, fused attention):
// row-major C = alpha op(A) op(B) + beta C, always on the calling thread alone (the callers share
// work out over the OpenMP team themselves, so no library pool ever competes with it).
//
// f32 runs on oneDNN's sgemm: it picks its kernel from the CPU (AVX-512 here), whatever the
// environment tells OpenBLAS. Under Precision::bf16 (precision.hpp) the f32 products round their
// operands to bf16 and accumulate in f32 -- on oneDNN's bf16 matmul, or on sgemm with the rounded
// operands widened back to f32 where that is faster (bf16_products()); a caller that splits one
// product into panels rounds each operand once (to_bf16) and passes the bf16 operands. f64 -- the
// gradient checks -- runs on OpenBLAS.
#include <cstdint>

#include "gemm_bf16.hpp"

namespace tinygpt::detail {

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// With `bias` (n values added to every row: a linear's, in the product's own epilogue).
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a,
          int64_t lda, const bf16* b, int64_t ldb, float beta, float* c, int64_t ldc,
          const float* bias = nullptr);

// The same with B packed (pack_b in gemm_bf16.hpp) for the row panels of one product.
void gemm(bool ta, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a, int64_t lda,
          const PackedB& b, float beta, float* c, int64_t ldc, const float* bias = nullptr);

// The bf16 product under Bf16Products::f32_fma with both operands widened already (f32 holding bf16
// values, widen_bf16), by a caller whose panels share them: multiplied as they are, on sgemm.
void gemm_widened(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                  const float* bias = nullptr);

// f32 A (rounded to bf16 here) times bf16 B: the fused attention's products of f32 scores or
// gradients with a bf16 qkv.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const bf16* b, int64_t ldb, float beta, float* c, int64_t ldc);

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

}  // namespace tinygpt::detail
