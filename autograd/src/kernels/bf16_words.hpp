#pragma once
// bf16 values as the halves of 32-bit words: the operand layout of AVX-512's pair products
// (vdpbf16ps), which the fused attention's bf16 tiles (attention_products.cpp) and oneDNN's packed
// B (gemm_bf16.cpp) both build. Callers check the CPU (bf16 precision implies these instructions).
#include <immintrin.h>

#include "gemm_bf16.hpp"

namespace tinygpt::kernels {

#define TINYGPT_BF16_WORDS __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// GCC 12's widening intrinsics read an "undefined" vector they never use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC-only group
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// 16 values of a row as bf16 (f32 rounded to nearest even), zero-extended to 32 bits; zeros where
// `mask` is clear.
inline TINYGPT_BF16_WORDS __m512i widened_bf16(const float* x, __mmask16 mask) {
  const __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, x));
  return _mm512_cvtepu16_epi32(reinterpret_cast<const __m256i&>(v));
}
inline TINYGPT_BF16_WORDS __m512i widened_bf16(const bf16* x, __mmask16 mask) {
  return _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, x));
}

// The same 16 values as f32 (a bf16 is the upper half of an f32): exact.
template <class Src>
inline TINYGPT_BF16_WORDS __m512i f32_words(const Src* x, __mmask16 mask) {
  return _mm512_slli_epi32(widened_bf16(x, mask), 16);
}

// 16 words: x(j) in the low half and y(j) in the high half for the 16 columns j where `mask` is
// set (two rows of B, or of the scores), zeros elsewhere; y may be null (zeros).
template <class Src>
inline TINYGPT_BF16_WORDS __m512i paired_bf16(const Src* x, const Src* y, __mmask16 mask) {
  const __m512i low = widened_bf16(x, mask);
  if (y == nullptr) return low;
  return _mm512_or_si512(low, _mm512_slli_epi32(widened_bf16(y, mask), 16));
}
// 16 words of pairs along a row: its first `count` values (fewer than 32 at its end) rounded to
// bf16, zeros after them.
inline TINYGPT_BF16_WORDS __m512i row_words(const float* x, int64_t count) {
  const auto mask = [](int64_t c) {
    return static_cast<__mmask16>(c >= 16 ? 0xFFFFu : c <= 0 ? 0u : (1u << c) - 1u);
  };
  const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(mask(count - 16), x + 16),
                                         _mm512_maskz_loadu_ps(mask(count), x));
  return reinterpret_cast<const __m512i&>(v);
}
#pragma GCC diagnostic pop

}  // namespace tinygpt::kernels
