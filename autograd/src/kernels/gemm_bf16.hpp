#pragma once
// The bf16 backends' pieces behind kernels::gemm (product.hpp): operands rounded to bfloat16
// (nearest even), products accumulated in f32 -- on oneDNN's bf16 matmul, one primitive per
// shape kept by each thread, or widened back to f32 for the f32 kernels (the bf16_f32_fma
// backend). Only used where the CPU has avx512_bf16 (set_matmul_precision checks).
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace tinygpt::kernels {

using bf16 = uint16_t;  // the upper half of an f32

// rows x cols of f32 (leading dimension ld) -> packed (rows, cols) bf16.
void to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, bf16* dst);

// rows x cols of bf16, or of f32 rounded to bf16 here (leading dimension ld) -> packed (rows,
// cols) f32 holding those bf16 values exactly: the operands of Bf16Products::f32_fma
// (precision.hpp).
void widen_bf16(const bf16* src, int64_t rows, int64_t cols, int64_t ld, float* dst);
void widen_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst);

// to_bf16 or widen_bf16, told by the destination's type.
template <class From, class To>
void convert_bf16(const From* src, int64_t rows, int64_t cols, int64_t ld, To* dst) {
  if constexpr (std::is_same_v<To, bf16>) {
    to_bf16(src, rows, cols, ld, dst);
  } else {
    widen_bf16(src, rows, cols, ld, dst);
  }
}

// The same into `scratch`, a calling thread's own buffer (it grows to the largest operand and
// then stays): the operand packed, its leading dimension then cols.
template <class From, class To>
const To* converted(const From* src, int64_t rows, int64_t cols, int64_t ld,
                    std::vector<To>& scratch) {
  if (scratch.size() < static_cast<size_t>(rows * cols)) scratch.resize(rows * cols);
  convert_bf16(src, rows, cols, ld, scratch.data());
  return scratch.data();
}

// A and B of a product widened to f32 (Bf16Products::f32_fma) in the calling thread's own pair of
// buffers, each packed: its leading dimension is then its stored column count. Stored shapes: A
// (m, k), or (k, m) when ta; B (k, n), or (n, k) when tb.
struct WidenedPair {
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
};

inline std::vector<float>* widening_scratch() {
  thread_local std::vector<float> pair[2];
  return pair;
}

template <class A, class B>
WidenedPair widened_pair(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const A* a,
                         int64_t lda, const B* b, int64_t ldb) {
  std::vector<float>* scratch = widening_scratch();
  const int64_t a_cols = ta ? m : k, b_cols = tb ? k : n;
  return {converted(a, ta ? k : m, a_cols, lda, scratch[0]), a_cols,
          converted(b, tb ? n : k, b_cols, ldb, scratch[1]), b_cols};
}

// C = bias + beta C, rows x cols (bias: n values added to every row, or none): what a product
// with no terms leaves, and where the f32 kernels' beta C starts when there is a bias.
void bias_plus_beta_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc, const float* bias);

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

// B (k, n) laid out once as oneDNN's matmul reads it (its blocked layout on AVX-512: blocks of 64
// columns of pairs of rows), for the row panels of one product to share: each panel's product
// would otherwise copy all of B into that layout itself. `data` holds packed_b_bytes(k, n) bytes
// written by pack_b. Not under Bf16Products::f32_fma, whose operands are widened instead.
struct PackedB {
  const void* data = nullptr;
};

int64_t packed_b_bytes(int64_t k, int64_t n);

// Whether the product C (m, n; leading dimension ldc) = op(A) B (+ bias), A (m, k) with leading
// dimension lda or transposed, alpha 1 and beta 0 (as row panels are), reads B packed by pack_b
// without copying it again: oneDNN, left to choose, picks that layout for it. With A transposed
// it picks none, and given a packed B it falls back to its slow reference code.
bool packs_b(bool ta, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldc, bool bias);

// B (k, n), or its transpose stored (n, k) when tb, leading dimension ldb, rounded to bf16 into
// `out` (packed_b_bytes(k, n) bytes); column blocks on the OpenMP team.
void pack_b(bool tb, int64_t k, int64_t n, const float* b, int64_t ldb, void* out);

// gemm_bf16 with a packed B.
void gemm_bf16(bool ta, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a, int64_t lda,
               const PackedB& b, float beta, float* c, int64_t ldc, const float* bias = nullptr);

}  // namespace tinygpt::kernels
