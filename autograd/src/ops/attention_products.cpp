#include "attention_products.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "avx512_clones.hpp"
#include "tinygpt/autograd/error.hpp"

namespace tinygpt::detail {
namespace {

#if TINYGPT_HAS_AVX512_CLONES
// A tile of kRows rows of C and up to four 16-lane vectors of columns lives in registers (at
// most 16 of the 32); each step of k loads a row of B and broadcasts one element of A per row.
constexpr int64_t kRows = 4;
constexpr int64_t kWidth = 64;  // columns per tile

// rows x (vectors x 16) of C += sum over e in [k0, k1) of A(r, e) B(e, :), the last vector
// masked by `last`. A(r, e) is a[r * lda + e], or a[e * lda + r] when transposed.
template <int kTileRows, int kVectors, bool kTransA>
TINYGPT_AVX512 void tile(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t k0,
                         int64_t k1, float* c, int64_t ldc, __mmask16 last, float alpha,
                         float beta) {
  // One flat array, every loop unrolled: GCC keeps a two-dimensional one in memory, storing all
  // 16 accumulators on every step of k.
  constexpr int kTiles = kTileRows * kVectors;
  __m512 acc[kTiles];
#pragma GCC unroll 16
  for (int i = 0; i < kTiles; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t e = k0; e < k1; ++e) {
    __m512 row[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      row[v] =
          _mm512_maskz_loadu_ps(v == kVectors - 1 ? last : __mmask16(0xFFFF), b + e * ldb + 16 * v);
      // Held in a register: GCC otherwise folds the load into every row's FMA, one load per
      // multiply-add instead of one per kTileRows, and the load ports, not the FMAs, set the pace.
      __asm__("" : "+v"(row[v]));
    }
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      const __m512 x = _mm512_set1_ps(kTransA ? a[e * lda + r] : a[r * lda + e]);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        acc[r * kVectors + v] = _mm512_fmadd_ps(x, row[v], acc[r * kVectors + v]);
      }
    }
  }
  const __m512 scale = _mm512_set1_ps(alpha);
#pragma GCC unroll 4
  for (int r = 0; r < kTileRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __mmask16 mask = v == kVectors - 1 ? last : __mmask16(0xFFFF);
      float* out = c + r * ldc + 16 * v;
      __m512 value = _mm512_mul_ps(scale, acc[r * kVectors + v]);
      if (beta != 0.0f) {
        value = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(mask, out), value);
      }
      _mm512_mask_storeu_ps(out, mask, value);
    }
  }
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, int64_t, int64_t, float*,
                        int64_t, __mmask16, float, float);

// Every tile: [rows - 1][vectors - 1], rows 1..kRows, vectors 1..4.
template <bool kTransA, int kTileRows, int... kVectors>
constexpr std::array<TileFn, 4> tiles_of(std::integer_sequence<int, kVectors...>) {
  return {tile<kTileRows, kVectors + 1, kTransA>...};
}

template <bool kTransA, int... kTileRows>
constexpr std::array<std::array<TileFn, 4>, kRows> tile_table(
    std::integer_sequence<int, kTileRows...>) {
  return {tiles_of<kTransA, kTileRows + 1>(std::make_integer_sequence<int, 4>{})...};
}

constexpr auto kTiles = tile_table<false>(std::make_integer_sequence<int, kRows>{});
constexpr auto kTilesTransA = tile_table<true>(std::make_integer_sequence<int, kRows>{});

// GCC 12's unpack intrinsics read an "undefined" vector they never use, and -Wuninitialized
// says so.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
// Transposes the 16 x 16 block at b (leading dimension ldb) into out (leading dimension ldo), in
// registers: pairs of rows interleaved, then 2 x 2 and 4 x 4 blocks of 128-bit lanes exchanged.
TINYGPT_AVX512 void transpose_16x16(const float* b, int64_t ldb, float* out, int64_t ldo) {
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(b + i * ldb);
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xDD);
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) _mm512_storeu_ps(out + i * ldo, r[i]);
}
#pragma GCC diagnostic pop

// out (k, n) = the transpose of b (n, k), leading dimension ldb: whole 16 x 16 blocks in
// registers, the edges element by element (a scalar loop took 1.3 us for the small model's
// 64 x 32 keys, a third of the product).
TINYGPT_AVX512 void transpose(const float* b, int64_t ldb, int64_t n, int64_t k, float* out) {
  const int64_t n16 = n - n % 16, k16 = k - k % 16;
  for (int64_t j = 0; j < n16; j += 16) {
    for (int64_t e = 0; e < k16; e += 16) transpose_16x16(b + j * ldb + e, ldb, out + e * n + j, n);
  }
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t e = j < n16 ? k16 : 0; e < k; ++e) out[e * n + j] = b[j * ldb + e];
  }
}

TINYGPT_AVX512 void product(bool ta, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                            int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                            int64_t ldc, Band band, int64_t offset) {
  // Column panels outside, row tiles inside: a panel of B (k x 64) stays in L1 while every row
  // tile passes over it.
  for (int64_t j0 = 0; j0 < n; j0 += kWidth) {
    for (int64_t i0 = 0; i0 < m; i0 += kRows) {
      const int64_t rows = std::min(kRows, m - i0);
      int64_t columns = n, k0 = 0, k1 = k;
      if (band == Band::columns) columns = std::min(n, i0 + rows + offset);
      if (band == Band::k_upper) k1 = std::min(k, i0 + rows + offset);
      if (band == Band::k_lower) k0 = std::clamp(i0 - offset, int64_t{0}, k);
      if (j0 >= columns) continue;
      const int64_t width = std::min(kWidth, columns - j0), vectors = (width + 15) / 16;
      const int64_t tail = width - 16 * (vectors - 1);
      const __mmask16 last = static_cast<__mmask16>((1u << tail) - 1u);
      const TileFn f = (ta ? kTilesTransA : kTiles)[rows - 1][vectors - 1];
      const float* a_rows = ta ? a + i0 : a + i0 * lda;
      f(a_rows, lda, b + j0, ldb, k0, k1, c + i0 * ldc + j0, ldc, last, alpha, beta);
    }
  }
}
#endif

}  // namespace

void attention_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc, Band band, int64_t offset) {
#if TINYGPT_HAS_AVX512_CLONES
  if (tb) {  // B is (n, k): its transpose, (k, n), in this thread's scratch
    thread_local std::vector<float> packed;
    if (packed.size() < static_cast<size_t>(n * k)) packed.resize(static_cast<size_t>(n * k));
    float* out = packed.data();
    transpose(b, ldb, n, k, out);
    b = out;
    ldb = n;
  }
  product(ta, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, band, offset);
#else
  (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b,
      (void)ldb, (void)beta, (void)c, (void)ldc, (void)band, (void)offset;
  throw Error("attention_product: this build has no AVX-512 products (see use_avx512())");
#endif
}

}  // namespace tinygpt::detail
