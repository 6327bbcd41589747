#pragma once
// The fused attention's products on a block of queries, in f32 or bf16, on AVX-512 registers
// where the CPU has it (use_avx512(), use_avx512_bf16()). They are small (64 x 64 x 32 on the
// small model: too small for oneDNN's sgemm to run its transposed form near the core's peak),
// and up to half of each is above the causal diagonal: these skip the 4-row tiles that hold only
// zeros or unused scores.
#include <cstdint>

#include "kernels/product.hpp"

namespace tinygpt::kernels {

// Which part of the product a causal block of `rows` queries against `rows + offset` keys needs
// (offset = keys - rows >= 0; query r sees keys j <= r + offset):
//   columns: C (queries x keys); row r needs columns j <= r + offset (the others are not written)
//   k_upper: C (queries x d) = A (queries x keys) B; A's row r is 0 past column r + offset
//   k_lower: C (keys x d) = A^T B with A (queries x keys); A's column j is 0 above row j - offset
// none: the whole product.
enum class Band { none, columns, k_upper, k_lower };

// C = alpha op(A) op(B) + beta C, row-major, as kernels::gemm (product.hpp), on the calling
// thread, for the part of C that `band` says the block needs; only when use_avx512() (Error
// otherwise). Each element is summed over k in order with one FMA per term, as oneDNN's sgemm
// does on whole blocks of 64 queries, so that those blocks give its bits; on a last, partial
// block its transposed products round some scores differently. A transposed B is packed in this
// thread's scratch first.
void attention_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc, Band band, int64_t offset);

// On a bf16 backend, where use_avx512_bf16(): the same products with both operands rounded to
// bf16 (to nearest even, as kernels::gemm rounds them; qkv comes rounded already), two terms at a
// time into f32 sums (vdpbf16ps): faster than oneDNN's bf16 matmul on blocks this small, with the
// same sums, element by element. B, and A when it is transposed, f32 or of an odd width, are
// packed as pairs in this thread's scratch first. On the bf16_amx backend on the AMX tiles
// instead, in blocks of 32 x 32 (tdpbf16ps), both operands packed and padded to whole 16 x 16
// word tiles: faster than the f32 tiles on widened operands for the medium model's blocks, and
// no slower for the small model's. Made for A, B = (bf16, bf16), (float, bf16), (float, float).
template <class A, class B>
void attention_product_bf16(ProductBackend backend, bool ta, bool tb, int64_t m, int64_t n,
                            int64_t k, float alpha, const A* a, int64_t lda, const B* b,
                            int64_t ldb, float beta, float* c, int64_t ldc, Band band,
                            int64_t offset);

}  // namespace tinygpt::kernels
