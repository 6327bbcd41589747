#include "attention_products.hpp"

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>
#include <vector>

#include "avx512_clones.hpp"
#include "bf16_words.hpp"
#include "gemm_bf16.hpp"
#include "transpose_16x16.hpp"
#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/precision.hpp"

namespace tinygpt::kernels {
namespace {

#if TINYGPT_HAS_AVX512_CLONES
// A tile of kRows rows of C and up to four 16-lane vectors of columns lives in registers (at
// most 16 of the 32); each step of k loads a row of B and broadcasts one element of A per row.
constexpr int64_t kRows = 4;
constexpr int64_t kWidth = 64;  // columns per tile

// What one step of k takes. f32: one term, one FMA per lane. bf16: two terms in each 32-bit word
// (the even k in the low half), summed into each lane by one vdpbf16ps; A's words are pairs of
// neighbours along k, B's rows pairs of B's rows (pair_rows).
using Word32 = uint32_t __attribute__((may_alias));

struct F32Terms {
  using Word = float;
  using Vector = __m512;
  static constexpr int64_t kPerWord = 1;
  static TINYGPT_AVX512_BF16 Vector load(const float* p, __mmask16 mask) {
    return _mm512_maskz_loadu_ps(mask, p);
  }
  static TINYGPT_AVX512_BF16 Vector broadcast(float x) { return _mm512_set1_ps(x); }
  static TINYGPT_AVX512_BF16 __m512 multiply_add(Vector a, Vector b, __m512 acc) {
    return _mm512_fmadd_ps(a, b, acc);
  }
};

struct Bf16Pairs {
  using Word = Word32;
  using Vector = __m512i;
  static constexpr int64_t kPerWord = 2;
  static TINYGPT_AVX512_BF16 Vector load(const Word32* p, __mmask16 mask) {
    return _mm512_maskz_loadu_epi32(mask, p);
  }
  static TINYGPT_AVX512_BF16 Vector broadcast(Word32 x) {
    return _mm512_set1_epi32(static_cast<int>(x));
  }
  static TINYGPT_AVX512_BF16 __m512 multiply_add(Vector a, Vector b, __m512 acc) {
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh&>(a), reinterpret_cast<__m512bh&>(b));
  }
};

// The lanes of `mask` of out = alpha sum + beta out; beta 0 does not read out (C may start as
// anything, NaN included, as with BLAS).
TINYGPT_AVX512 inline __attribute__((always_inline)) void write_scaled(float* out, __mmask16 mask,
                                                                       __m512 sum, float alpha,
                                                                       float beta) {
  __m512 value = _mm512_mul_ps(_mm512_set1_ps(alpha), sum);
  if (beta != 0.0f) {
    value = _mm512_fmadd_ps(_mm512_set1_ps(beta), _mm512_maskz_loadu_ps(mask, out), value);
  }
  _mm512_mask_storeu_ps(out, mask, value);
}

// rows x (vectors x 16) of C += sum over words e in [k0, k1) of A(r, e) B(e, :), the last vector
// masked by `last`. A(r, e) is a[r * lda + e], or a[e * lda + r] when transposed.
template <class Terms, int kTileRows, int kVectors, bool kTransA>
TINYGPT_AVX512_BF16 void tile(const typename Terms::Word* a, int64_t lda,
                              const typename Terms::Word* b, int64_t ldb, int64_t k0, int64_t k1,
                              float* c, int64_t ldc, __mmask16 last, float alpha, float beta) {
  // One flat array, every loop unrolled: GCC keeps a two-dimensional one in memory, storing all
  // 16 accumulators on every step of k.
  constexpr int kTiles = kTileRows * kVectors;
  __m512 acc[kTiles];
#pragma GCC unroll 16
  for (int i = 0; i < kTiles; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t e = k0; e < k1; ++e) {
    typename Terms::Vector row[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      row[v] = Terms::load(b + e * ldb + 16 * v, v == kVectors - 1 ? last : __mmask16(0xFFFF));
      // Held in a register: GCC otherwise folds the load into every row's FMA, one load per
      // multiply-add instead of one per kTileRows, and the load ports, not the FMAs, set the pace.
      __asm__("" : "+v"(row[v]));
    }
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      const auto x = Terms::broadcast(kTransA ? a[e * lda + r] : a[r * lda + e]);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        acc[r * kVectors + v] = Terms::multiply_add(x, row[v], acc[r * kVectors + v]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kTileRows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __mmask16 mask = v == kVectors - 1 ? last : __mmask16(0xFFFF);
      write_scaled(c + r * ldc + 16 * v, mask, acc[r * kVectors + v], alpha, beta);
    }
  }
}

template <class Terms>
using TileFn = void (*)(const typename Terms::Word*, int64_t, const typename Terms::Word*, int64_t,
                        int64_t, int64_t, float*, int64_t, __mmask16, float, float);

// Every tile: [rows - 1][vectors - 1], rows 1..kRows, vectors 1..4.
template <class Terms, bool kTransA, int kTileRows, int... kVectors>
constexpr std::array<TileFn<Terms>, 4> tiles_of(std::integer_sequence<int, kVectors...>) {
  return {tile<Terms, kTileRows, kVectors + 1, kTransA>...};
}

template <class Terms, bool kTransA, int... kTileRows>
constexpr std::array<std::array<TileFn<Terms>, 4>, kRows> tile_table(
    std::integer_sequence<int, kTileRows...>) {
  return {tiles_of<Terms, kTransA, kTileRows + 1>(std::make_integer_sequence<int, 4>{})...};
}

template <class Terms, bool kTransA>
constexpr auto kTiles = tile_table<Terms, kTransA>(std::make_integer_sequence<int, kRows>{});

// out (k, n; rows of ldo) = the transpose of b (n, k), leading dimension ldb: whole 16 x 16
// blocks in registers, the edges element by element (a scalar loop over a block's keys costs a
// sizeable part of a product this small).
TINYGPT_AVX512 void transpose(const float* b, int64_t ldb, int64_t n, int64_t k, float* out,
                              int64_t ldo) {
  const int64_t n16 = n - n % 16, k16 = k - k % 16;
  for (int64_t j = 0; j < n16; j += 16) {
    for (int64_t e = 0; e < k16; e += 16) {
      transpose_16x16(b + j * ldb + e, ldb, out + e * ldo + j, ldo);
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t e = j < n16 ? k16 : 0; e < k; ++e) out[e * ldo + j] = b[j * ldb + e];
  }
}

// k counts terms; a and b hold Terms' words, lda and ldb count words.
template <class Terms>
TINYGPT_AVX512_BF16 void product(bool ta, int64_t m, int64_t n, int64_t k, float alpha,
                                 const typename Terms::Word* a, int64_t lda,
                                 const typename Terms::Word* b, int64_t ldb, float beta, float* c,
                                 int64_t ldc, Band band, int64_t offset) {
  constexpr int64_t per = Terms::kPerWord;
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
      const TileFn<Terms> f =
          (ta ? kTiles<Terms, true> : kTiles<Terms, false>)[rows - 1][vectors - 1];
      const typename Terms::Word* a_rows = ta ? a + i0 : a + i0 * lda;
      // A word's other term past the band is one of A's zeros (see Band), or the padding.
      f(a_rows, lda, b + j0, ldb, k0 / per, (k1 + per - 1) / per, c + i0 * ldc + j0, ldc, last,
        alpha, beta);
    }
  }
}

// out (ceil(rows / 2), cols; rows of ldo) words = pairs of x's rows (x (rows, cols), leading
// dimension ld): word (e, j) holds x(2e, j) in its low half and x(2e + 1, j) in its high half (0
// past the last row), as bf16.
template <class Src>
TINYGPT_AVX512_BF16 void pair_rows(const Src* x, int64_t ld, int64_t rows, int64_t cols,
                                   Word32* out, int64_t ldo) {
  for (int64_t e = 0; 2 * e < rows; ++e) {
    const Src* low = x + 2 * e * ld;
    const Src* high = 2 * e + 1 < rows ? low + ld : nullptr;
    for (int64_t j = 0; j < cols; j += 16) {
      const __mmask16 mask = static_cast<__mmask16>((1u << std::min<int64_t>(16, cols - j)) - 1u);
      const __m512i word = paired_bf16(low + j, high != nullptr ? high + j : nullptr, mask);
      _mm512_mask_storeu_epi32(out + e * ldo + j, mask, word);
    }
  }
}

// out (rows, ceil(cols / 2); rows of ldo) words = x's rows as bf16 (rounded from f32), a zero
// after an odd count.
template <class Src>
void row_pairs(const Src* x, int64_t ld, int64_t rows, int64_t cols, Word32* out, int64_t ldo) {
  for (int64_t r = 0; r < rows; ++r) {
    bf16* row = reinterpret_cast<bf16*>(out + r * ldo);
    if constexpr (std::is_same_v<Src, float>) {
      to_bf16(x + r * ld, 1, cols, cols, row);
    } else {
      std::copy_n(x + r * ld, cols, row);
    }
    if (cols % 2 != 0) row[cols] = 0;
  }
}

// A thread's scratch of at least `count` values.
template <class V>
V* scratch(std::vector<V>& buffer, int64_t count) {
  if (buffer.size() < static_cast<size_t>(count)) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

// Whether x's rows are already words of pairs: an even count of bf16 from an even start.
template <class Src>
bool whole_words(const Src* x, int64_t ld, int64_t cols) {
  return std::is_same_v<Src, bf16> && cols % 2 == 0 && ld % 2 == 0 &&
         reinterpret_cast<uintptr_t>(x) % 4 == 0;
}

// The AMX tiles (Bf16Products::amx): eight tiles of 16 rows x 64 bytes, C's 16 x 16 f32 blocks
// in tiles 0-3 (a 2 x 2 block of them at most), A's 16 rows of 16 words (32 terms) in 4-5, B's 16
// words of 16 columns in 6-7. Every operand is padded to whole tiles with zeros.
#define TINYGPT_AMX \
  TINYGPT_AVX512_TARGET("avx512f,avx512vl,avx512bw,avx512dq,avx512bf16,amx-tile,amx-bf16")
constexpr int64_t kTile = 16;
int64_t whole_tiles(int64_t x) { return (x + kTile - 1) / kTile * kTile; }

// kR x kC tiles of sums (rows of lds) = A's 16 kR rows (rows of lda words) times B's 16 kC
// columns (rows of ldb words), over words [w0, w1), multiples of 16.
template <int kR, int kC>
TINYGPT_AMX void tile_block(const Word32* a, int64_t lda, const Word32* b, int64_t ldb,
                            int64_t w0, int64_t w1, float* sums, int64_t lds) {
  _tile_zero(0);
  if constexpr (kC == 2) _tile_zero(1);
  if constexpr (kR == 2) _tile_zero(2);
  if constexpr (kR == 2 && kC == 2) _tile_zero(3);
  for (int64_t e = w0; e < w1; e += kTile) {
    _tile_loadd(4, a + e, lda * 4);
    if constexpr (kR == 2) _tile_loadd(5, a + kTile * lda + e, lda * 4);
    _tile_loadd(6, b + e * ldb, ldb * 4);
    if constexpr (kC == 2) _tile_loadd(7, b + e * ldb + kTile, ldb * 4);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (kC == 2) _tile_dpbf16ps(1, 4, 7);
    if constexpr (kR == 2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (kR == 2 && kC == 2) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, sums, lds * 4);
  if constexpr (kC == 2) _tile_stored(1, sums + kTile, lds * 4);
  if constexpr (kR == 2) _tile_stored(2, sums + kTile * lds, lds * 4);
  if constexpr (kR == 2 && kC == 2) _tile_stored(3, sums + kTile * lds + kTile, lds * 4);
}

// C's block of rows [i0, i1) and columns [j0, j1) = alpha sums + beta C, sums (rows of lds) as
// the tiles stored them; under Band::columns row r stops at column r + offset.
TINYGPT_AMX void write_block(const float* sums, int64_t lds, int64_t i0, int64_t i1, int64_t j0,
                             int64_t j1, float alpha, float beta, float* c, int64_t ldc,
                             Band band, int64_t offset) {
  for (int64_t r = i0; r < i1; ++r) {
    const int64_t cols = band == Band::columns ? std::min(j1, r + offset + 1) : j1;
    for (int64_t j = j0; j < cols; j += 16) {
      const __mmask16 mask = static_cast<__mmask16>((1u << std::min<int64_t>(16, cols - j)) - 1u);
      write_scaled(c + r * ldc + j, mask, _mm512_loadu_ps(sums + (r - i0) * lds + j - j0), alpha,
                   beta);
    }
  }
}

// C = alpha A B + beta C for the part `band` needs, A (mp, wp) and B (wp, np) words padded to
// whole tiles; the blocks of 32 rows skip the column tiles and words their band leaves out, as
// product() does for its 4-row tiles. Sums in f32, as oneDNN's AMX kernels make them. Each 32 x
// 32 block is written to C as soon as its tiles are stored, from 4 KB that stay in L1: a pass over
// all of C's sums afterwards would read them back from L2.
TINYGPT_AMX void amx_product(int64_t m, int64_t n, int64_t k, float alpha, const Word32* a,
                             const Word32* b, int64_t wp, int64_t np, float beta, float* c,
                             int64_t ldc, Band band, int64_t offset) {
  constexpr int64_t kSide = 2 * kTile;
  alignas(64) float sums[kSide * kSide];
  const AmxTiles tiles;
  for (int64_t i0 = 0; i0 < m; i0 += kSide) {
    const bool two_rows = i0 + kTile < m;
    const int64_t i1 = std::min(m, i0 + kSide);
    const int64_t below = i1 + offset;  // past the block's last key
    int64_t columns = n, k0 = 0, k1 = k;
    if (band == Band::columns) columns = std::min(n, below);
    if (band == Band::k_upper) k1 = std::min(k, below);
    if (band == Band::k_lower) k0 = std::clamp(i0 - offset, int64_t{0}, k);
    // Terms past the band inside a tile's 32 are A's zeros (see Band), or the padding.
    const int64_t w0 = k0 / 2 / kTile * kTile, w1 = std::max(w0, whole_tiles((k1 + 1) / 2));
    for (int64_t j0 = 0; j0 < columns; j0 += kSide) {
      const bool two_cols = j0 + kTile < columns;
      const Word32* ai = a + i0 * wp;
      const Word32* bj = b + j0;
      if (two_rows && two_cols) tile_block<2, 2>(ai, wp, bj, np, w0, w1, sums, kSide);
      if (two_rows && !two_cols) tile_block<2, 1>(ai, wp, bj, np, w0, w1, sums, kSide);
      if (!two_rows && two_cols) tile_block<1, 2>(ai, wp, bj, np, w0, w1, sums, kSide);
      if (!two_rows && !two_cols) tile_block<1, 1>(ai, wp, bj, np, w0, w1, sums, kSide);
      write_block(sums, kSide, i0, i1, j0, std::min(columns, j0 + kSide), alpha, beta, c, ldc,
                  band, offset);
    }
  }
}

// Zeros in x (rows_p, cols_p) outside its first rows x cols.
void zero_padding(Word32* x, int64_t rows, int64_t cols, int64_t rows_p, int64_t cols_p) {
  for (int64_t r = 0; r < rows; ++r) std::fill(x + r * cols_p + cols, x + (r + 1) * cols_p, 0u);
  std::fill(x + rows * cols_p, x + rows_p * cols_p, 0u);
}

template <class A, class B>
void product_bf16(ProductBackend backend, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                  float alpha, const A* a, int64_t lda, const B* b, int64_t ldb, float beta,
                  float* c, int64_t ldc, Band band, int64_t offset) {
  thread_local std::vector<uint32_t> a_buffer, b_buffer, b_rows, a_rows;
  const bool amx = backend == ProductBackend::bf16_amx && amx_tiles_usable();
  const int64_t words = (k + 1) / 2;
  // The AMX tiles read whole tiles of 16 x 16 words: the packed operands are padded to them.
  const int64_t wp = amx ? whole_tiles(words) : words, np = amx ? whole_tiles(n) : n;
  const int64_t mp = amx ? whole_tiles(m) : m;
  // B: (words, n), pairs of op(B)'s rows; a transposed B (n, k) is its rows' words, transposed.
  Word32* bw = scratch(b_buffer, wp * np);
  const auto transposed = [&](const Word32* rows, int64_t ld_words) {
    transpose(reinterpret_cast<const float*>(rows), ld_words, n, words,
              reinterpret_cast<float*>(bw), np);
  };
  if (!tb) {
    pair_rows(b, ldb, k, n, bw, np);
  } else if (whole_words(b, ldb, k)) {
    transposed(reinterpret_cast<const Word32*>(b), ldb / 2);
  } else {
    Word32* rows = scratch(b_rows, n * words);
    row_pairs(b, ldb, n, k, rows, words);
    transposed(rows, words);
  }
  // A: (words, m) pairs of the rows of the stored A^T, or (m, words) pairs along its rows, read
  // in place where they already are words (not by the AMX tiles, which read it padded).
  const Word32* aw = nullptr;
  int64_t lda_words = wp;
  if (ta) {
    Word32* out = scratch(a_rows, words * m);
    pair_rows(a, lda, k, m, out, m);
    aw = out;
    lda_words = m;
  } else if (!amx && whole_words(a, lda, k)) {
    aw = reinterpret_cast<const Word32*>(a);
    lda_words = lda / 2;
  } else {
    Word32* out = scratch(a_buffer, mp * wp);
    row_pairs(a, lda, m, k, out, wp);
    aw = out;
  }
  if (amx) {  // A as (mp, wp) words: its rows packed above, or A^T's pairs transposed into them
    Word32* padded = scratch(a_buffer, mp * wp);
    if (ta) {
      transpose(reinterpret_cast<const float*>(aw), m, words, m, reinterpret_cast<float*>(padded),
                wp);
    }
    zero_padding(padded, m, words, mp, wp);
    zero_padding(bw, words, n, wp, np);
    amx_product(m, n, k, alpha, padded, bw, wp, np, beta, c, ldc, band, offset);
    return;
  }
  product<Bf16Pairs>(ta, m, n, k, alpha, aw, lda_words, bw, n, beta, c, ldc, band, offset);
}
#endif

}  // namespace

void attention_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc, Band band, int64_t offset) {
#if TINYGPT_HAS_AVX512_CLONES
  if (tb) {  // B is (n, k): its transpose, (k, n), in this thread's scratch
    thread_local std::vector<float> packed;
    float* out = scratch(packed, n * k);
    transpose(b, ldb, n, k, out, n);
    b = out;
    ldb = n;
  }
  product<F32Terms>(ta, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, band, offset);
#else
  (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b,
      (void)ldb, (void)beta, (void)c, (void)ldc, (void)band, (void)offset;
  throw Error("attention_product: this build has no AVX-512 products (see use_avx512())");
#endif
}

template <class A, class B>
void attention_product_bf16(ProductBackend backend, bool ta, bool tb, int64_t m, int64_t n,
                            int64_t k, float alpha, const A* a, int64_t lda, const B* b,
                            int64_t ldb, float beta, float* c, int64_t ldc, Band band,
                            int64_t offset) {
#if TINYGPT_HAS_AVX512_CLONES
  if (use_avx512_bf16()) {
    product_bf16(backend, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, band, offset);
    return;
  }
#endif
  (void)backend, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda,
      (void)b, (void)ldb, (void)beta, (void)c, (void)ldc, (void)band, (void)offset;
  throw Error("attention_product_bf16: no avx512_bf16 products here (see use_avx512_bf16())");
}

#define TINYGPT_ATTENTION_PRODUCT_BF16(A, B)                                                       \
  template void attention_product_bf16(ProductBackend, bool, bool, int64_t, int64_t, int64_t,      \
                                       float, const A*, int64_t, const B*, int64_t, float, float*, \
                                       int64_t, Band, int64_t);
TINYGPT_ATTENTION_PRODUCT_BF16(bf16, bf16)
TINYGPT_ATTENTION_PRODUCT_BF16(float, bf16)
TINYGPT_ATTENTION_PRODUCT_BF16(float, float)
#undef TINYGPT_ATTENTION_PRODUCT_BF16

}  // namespace tinygpt::kernels
