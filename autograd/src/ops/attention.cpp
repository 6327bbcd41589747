#include "tinygpt/autograd/ops.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/attention_products.hpp"
#include "kernels/avx512_clones.hpp"
#include "kernels/product.hpp"
#include "packed_heads.hpp"
#include "rounded.hpp"
#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/autograd/profile.hpp"
#include "tinygpt/autograd/simd_math.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using detail::Rounded;
using detail::rounded;
using kernels::Band;
using kernels::bf16;
using kernels::ProductBackend;
using namespace detail::packed;

// Queries are taken kBlock at a time: each block's scores against every key it may see form a
// (kBlock, T) panel in per-thread scratch, so scratch grows linearly in T and nothing of size
// (T, T) is ever held; the products are single-threaded BLAS calls on strided views of qkv.
constexpr int64_t kBlock = 64;

// The keys a block of queries [i0, keys) may see, as runs of consecutive keys laid side by side
// in the columns of its score panel, in key order: full attention is the single run [0, keys), a
// window at most two (the global keys [0, global) and the local ones [lo, keys)), BigBird also
// its random key blocks. Keys between runs are seen by no query of the block and are skipped.
// Causal, the last run ends at key keys - 1 and holds every query of the block, so row r's
// columns past its own key are the last rows - 1 - r. A bidirectional pattern's runs end below
// the sequence's unpadded length, and each row spans all of them.
struct KeyRuns {
  struct Run {
    int64_t key, count;
  };
  std::vector<Run> runs;
  bool causal = true;
  // BigBird: the random key blocks of each query block the rows reach, from first_query_block.
  int64_t first_query_block = 0;
  std::vector<std::vector<int64_t>> random_blocks;

  int64_t columns() const {
    int64_t n = 0;
    for (const Run& run : runs) n += run.count;
    return n;
  }
  // The columns of row r of `rows` (n in all) that may hold a key it sees.
  int64_t valid(int64_t r, int64_t rows, int64_t n) const {
    return causal ? n - (rows - 1 - r) : n;
  }
  const Run& local() const { return runs.back(); }
  int64_t local_column() const { return columns() - local().count; }
  // The part of a product the block needs (block_product): all of it across several runs, or
  // with no causal triangle to skip.
  kernels::Band band(kernels::Band single_run) const {
    return runs.size() == 1 && causal ? single_run : kernels::Band::none;
  }

  // f(column, first key, count, first run?) for each run, in column order.
  template <class F>
  void each(F&& f) const {
    int64_t column = 0;
    for (const Run& run : runs) {
      f(column, run.key, run.count, column == 0);
      column += run.count;
    }
  }
};

// BigBird's runs for the queries [i0, i0 + rows): the global keys, each random key block of the
// rows' query blocks and the window, sorted and merged where they touch, every key below `end`
// (causal: the block's last query + 1; bidirectional: the sequence's unpadded length). A
// bidirectional block holding a global query sees every key.
KeyRuns bigbird_key_runs(const AttentionPattern& pattern, int64_t i0, int64_t rows, int64_t end) {
  KeyRuns out;
  out.causal = !pattern.is_bidirectional();
  const int64_t b = pattern.block, last = i0 + rows - 1;
  std::vector<KeyRuns::Run> spans{{0, std::min(pattern.global_tokens, end)}};
  if (!out.causal && i0 < pattern.global_tokens) spans.push_back({0, end});
  out.first_query_block = i0 / b;
  for (int64_t qb = i0 / b; qb <= last / b; ++qb) {
    out.random_blocks.push_back(pattern.random_key_blocks(qb));
    for (int64_t kb : out.random_blocks.back()) spans.push_back({kb * b, std::min(b, end - kb * b)});
  }
  const int64_t lo = std::max<int64_t>(0, i0 - pattern.window + 1);
  const int64_t hi = out.causal ? end : std::min(end, last + pattern.window);
  spans.push_back({lo, hi - lo});
  std::sort(spans.begin(), spans.end(),
            [](const KeyRuns::Run& x, const KeyRuns::Run& y) { return x.key < y.key; });
  for (const KeyRuns::Run& span : spans) {
    if (span.count <= 0) continue;
    if (!out.runs.empty() && span.key <= out.runs.back().key + out.runs.back().count) {
      KeyRuns::Run& last = out.runs.back();
      last.count = std::max(last.count, span.key + span.count - last.key);
    } else {
      out.runs.push_back(span);
    }
  }
  return out;
}

// The runs of the queries [i0, i0 + rows) of a sequence whose keys from `length` on are padding
// (bidirectional patterns only; a causal block sees no key past its last query).
KeyRuns key_runs(const AttentionPattern& pattern, int64_t i0, int64_t rows, int64_t length) {
  const int64_t keys = pattern.is_bidirectional() ? length : i0 + rows;
  if (pattern.kind == AttentionPattern::Kind::bigbird) return bigbird_key_runs(pattern, i0, rows, keys);
  const int64_t lo = pattern.first_local_key(i0);
  const int64_t global = std::min(pattern.global_tokens, lo);
  KeyRuns out;
  if (global == lo) {  // the global keys reach the local run: one run
    out.runs.push_back({0, keys});
    return out;
  }
  if (global > 0) out.runs.push_back({0, global});
  out.runs.push_back({lo, keys - lo});
  return out;
}

// One product of a block of `rows` queries whose keys are the single run of `n` columns (see
// KeyRuns): on AVX-512, on register tiles that skip the products above the causal diagonal,
// whose terms are zero or unused (attention_products.hpp). When the head's Q, K and V are bf16
// (In: the bf16_dot_pairs or bf16_amx backend) every product's operands are rounded as
// kernels::gemm rounds them, on bf16 tiles. Otherwise kernels::gemm on the op's backend.
// `band` says which part the block needs; two runs of keys need the whole product (Band::none).
template <class In, class T, class A, class B>
void block_product(ProductBackend backend, Band band, int64_t rows, int64_t n, bool ta, bool tb,
                   int64_t m, int64_t cols, int64_t k, T alpha, const A* a, int64_t lda, const B* b,
                   int64_t ldb, T beta, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<In, bf16>) {
    if (band != Band::none && kernels::use_avx512_bf16()) {
      kernels::attention_product_bf16(backend, ta, tb, m, cols, k, alpha, a, lda, b, ldb, beta, c,
                                      ldc, band, n - rows);
      return;
    }
  } else if constexpr (std::is_same_v<T, float>) {
    if (band != Band::none && kernels::use_avx512()) {
      kernels::attention_product(ta, tb, m, cols, k, alpha, a, lda, b, ldb, beta, c, ldc, band,
                                 n - rows);
      return;
    }
  }
  kernels::gemm(backend, ta, tb, m, cols, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// On the bf16_f32_fma backend (where vdpbf16ps runs below the f32 rate) a head's Q, K and V are
// widened to f32 once, into `out` (3 T d values), and its products run on the f32 tiles, each
// operand that is not one of them rounded to bf16 first (round_bf16): widening each product's
// operands instead would have every block of queries widen all its keys again. On bf16_amx the
// products run on the AMX tiles (attention_products.hpp) and read the head's bf16 values as
// they are.
int64_t widened_head_values(int64_t t, int64_t d) { return 3 * t * d; }

Head<const float> widened_head(const Head<const bf16>& h, int64_t t, int64_t d, float* out) {
  kernels::widen_bf16(h.q, t, d, h.ld, out);
  kernels::widen_bf16(h.k, t, d, h.ld, out + t * d);
  kernels::widen_bf16(h.v, t, d, h.ld, out + 2 * t * d);
  return {out, out + t * d, out + 2 * t * d, d, true};
}

// rows x cols of x (leading dimension ld) rounded to bf16 values kept in f32, packed into `out`
// (in place when out == x and ld == cols). bf16 values are only ever held in f32.
template <class T>
void round_bf16(const T* x, int64_t rows, int64_t cols, int64_t ld, T* out) {
  if constexpr (std::is_same_v<T, float>) kernels::widen_bf16(x, rows, cols, ld, out);
}

// ALiBi: adds -slope |i - j| to the scores of query position i against its first `valid`
// columns, column c holding key j as the runs lay them out: the causal -slope (i - j), and an
// encoder's symmetric form.
template <class T>
void add_alibi(T* row, int64_t valid, int64_t i, T slope, const KeyRuns& runs) {
  runs.each([&](int64_t column, int64_t key, int64_t count, bool) {
    const int64_t end = std::min(column + count, valid);
    const int64_t shift = key - column;  // key of column c: c + shift
#pragma omp simd
    for (int64_t c = column; c < end; ++c) row[c] -= slope * static_cast<T>(std::abs(c + shift - i));
  });
}

// Hides the keys of the runs in [from, to), B keys at a time, unless their block is `drawn`.
template <class T>
void hide_undrawn_blocks(T* row, int64_t from, int64_t to, const std::vector<int64_t>& drawn,
                         const KeyRuns& runs, int64_t b) {
  runs.each([&](int64_t column, int64_t key, int64_t count, bool) {
    const int64_t stop = std::min(key + count, to);
    for (int64_t j = std::max(key, from); j < stop;) {
      const int64_t next = std::min((j / b + 1) * b, stop);
      if (!std::binary_search(drawn.begin(), drawn.end(), j / b)) {
        std::fill(row + column + (j - key), row + column + (next - key),
                  -std::numeric_limits<T>::infinity());
      }
      j = next;
    }
  });
}

// BigBird's part of mask_row: the keys of the runs in [G, i - W] (bidirectional: also those in
// [i + W, end) from G on) unless query i's block drew theirs; a bidirectional global query hides
// none.
template <class T>
void mask_bigbird_row(T* row, int64_t i, const KeyRuns& runs, const AttentionPattern& pattern) {
  const int64_t b = pattern.block, g = pattern.global_tokens;
  if (!runs.causal && i < g) return;
  const std::vector<int64_t>& drawn =
      runs.random_blocks[static_cast<size_t>(i / b - runs.first_query_block)];
  hide_undrawn_blocks(row, g, i - pattern.window + 1, drawn, runs, b);
  if (!runs.causal) {
    hide_undrawn_blocks(row, std::max(g, i + pattern.window), std::numeric_limits<int64_t>::max(),
                        drawn, runs, b);
  }
}

// Hides the keys query i may not see by a score of -inf, so the softmax gives them exactly 0
// (keys past i are never hidden here; the caller stops each row at key i). A window hides the
// local keys j with G <= j <= i - W; BigBird every key of its runs outside the window, the
// global keys and query i's random key blocks.
template <class T>
void mask_row(T* row, int64_t i, const KeyRuns& runs, const AttentionPattern& pattern) {
  if (pattern.kind == AttentionPattern::Kind::bigbird) return mask_bigbird_row(row, i, runs, pattern);
  if (pattern.kind != AttentionPattern::Kind::window) return;
  const int64_t lo = runs.local().key, column = runs.local_column();
  const int64_t first = std::max(lo, pattern.global_tokens), end = i - pattern.window + 1;
  if (first < end) {
    std::fill(row + column + (first - lo), row + column + (end - lo),
              -std::numeric_limits<T>::infinity());
  }
}

// Rows of a block that see no key (a padded query of a bidirectional pattern far from every
// unpadded key): y = 0 and log-sum-exp -inf, as the general path's softmax gives a row masked
// whole; the backward gives them no gradient.
template <class T>
void no_key_rows(T* y, int64_t ldy, T* lse, int64_t i0, int64_t rows, int64_t d) {
  for (int64_t i = i0; i < i0 + rows; ++i) {
    std::fill_n(y + i * ldy, d, T(0));
    lse[i] = -std::numeric_limits<T>::infinity();
  }
}

// Forward of one (batch, head): y = softmax(pattern(scale Q K^T + bias)) V, and each row's
// log-sum-exp; the bias is ALiBi's when slope != 0, none otherwise. Keys from `length` on are
// padding (bidirectional patterns; causal ones pass t). Q, K and V are T, or bf16 under
// Precision::bf16 (In), the scores and y T.
template <class T, class In>
void forward_head(ProductBackend backend, const Head<const In>& hd, T* y, int64_t ldy, T* lse,
                  int64_t t, int64_t length, int64_t d, T scale, T slope,
                  const AttentionPattern& pattern, T* s) {
  for (int64_t i0 = 0; i0 < t; i0 += kBlock) {
    const int64_t rows = std::min(kBlock, t - i0);
    const KeyRuns runs = key_runs(pattern, i0, rows, length);
    const int64_t n = runs.columns();
    if (n == 0) {
      no_key_rows(y, ldy, lse, i0, rows, d);
      continue;
    }
    const In* q = hd.q + i0 * hd.ld;
    runs.each([&](int64_t col, int64_t key, int64_t count, bool) {  // s (rows, n) = scale Q K^T
      block_product<In>(backend, runs.band(Band::columns), rows, n, false, true, rows, count, d,
                        scale, q, hd.ld, hd.k + key * hd.ld, hd.ld, T(0), s + col, n);
    });
    for (int64_t r = 0; r < rows; ++r) {
      T* row = s + r * n;
      const int64_t i = i0 + r;
      const int64_t valid = runs.valid(r, rows, n);  // causal: no column past key i
      if (slope != T(0)) add_alibi(row, valid, i, slope, runs);
      mask_row(row, i, runs, pattern);
      T top = row[0];
      // Written as a comparison: GCC vectorises no std::max reduction without -ffast-math, and
      // this loop runs once per score.
#pragma omp simd reduction(max : top)
      for (int64_t j = 1; j < valid; ++j) top = row[j] > top ? row[j] : top;
      if (top == -std::numeric_limits<T>::infinity()) {  // every key hidden: P's row is 0
        std::fill(row, row + n, T(0));
        lse[i] = top;
        continue;
      }
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = 0; j < valid; ++j) {
        row[j] = simd::exp(row[j] - top);
        sum += row[j];
      }
      const T inv = T(1) / sum;
#pragma omp simd
      for (int64_t j = 0; j < valid; ++j) row[j] *= inv;
      if (hd.bf16_values) round_bf16(row, 1, valid, n, row);  // P, an operand of P V
      std::fill(row + valid, row + n, T(0));
      lse[i] = top + std::log(sum);
    }
    runs.each([&](int64_t col, int64_t key, int64_t count, bool first) {  // y = P V
      block_product<In>(backend, runs.band(Band::k_upper), rows, n, false, false, rows, d, count,
                        T(1), s + col, n, hd.v + key * hd.ld, hd.ld, first ? T(0) : T(1),
                        y + i0 * ldy, ldy);
    });
  }
}

// Backward of one (batch, head), query block by query block, with P recomputed from the saved
// log-sum-exp: dV += P^T dY, dP = dY V^T, dS = P (dP - rowsum(dY Y)) scale, dQ = dS K,
// dK += dS^T Q. dK and dV are added to (the caller zeroes them, then runs the query heads that
// share them one after another), summed over the blocks in order, so the result does not depend
// on the thread count. dQ is overwritten, or added to with add_to_dq. With hd.bf16_values the
// products read the block's dY rounded into `dy16` (kBlock d values). Keys from `length` on are
// padding, as in forward_head.
template <class T, class In>
void backward_head(ProductBackend backend, const Head<const In>& hd, const Head<T>& dh, const T* y,
                   const T* dy, int64_t ldy, const T* lse, int64_t t, int64_t length, int64_t d,
                   T scale, T slope, const AttentionPattern& pattern, T* p, T* ds, T* dy16,
                   bool add_to_dq = false) {
  for (int64_t i0 = 0; i0 < t; i0 += kBlock) {
    const int64_t rows = std::min(kBlock, t - i0);
    const KeyRuns runs = key_runs(pattern, i0, rows, length);
    const int64_t n = runs.columns();
    if (n == 0) {
      if (!add_to_dq) {
        for (int64_t i = i0; i < i0 + rows; ++i) std::fill_n(dh.q + i * dh.ld, d, T(0));
      }
      continue;
    }
    const In* q = hd.q + i0 * hd.ld;
    const T* dy_block = dy + i0 * ldy;
    const T* dy_product = dy_block;  // dY as the products read it
    int64_t ld_product = ldy;
    if (hd.bf16_values) {
      round_bf16(dy_block, rows, d, ldy, dy16);
      dy_product = dy16;
      ld_product = d;
    }
    runs.each([&](int64_t col, int64_t key, int64_t count, bool) {
      block_product<In>(backend, runs.band(Band::columns), rows, n, false, true, rows, count, d,
                        scale, q, hd.ld, hd.k + key * hd.ld, hd.ld, T(0), p + col, n);
      block_product<In>(backend, runs.band(Band::columns), rows, n, false, true, rows, count, d,
                        T(1), dy_product, ld_product, hd.v + key * hd.ld, hd.ld, T(0), ds + col, n);
    });
    // rowsum(dY Y) of the block's rows in a pass of their own: y's rows are rarely in cache, and
    // here their loads overlap instead of stalling the row loop below.
    T deltas[kBlock];
    for (int64_t r = 0; r < rows; ++r) {
      const T* g = dy_block + r * ldy;
      const T* o = y + (i0 + r) * ldy;
      T delta = 0;
#pragma omp simd reduction(+ : delta)
      for (int64_t e = 0; e < d; ++e) delta += g[e] * o[e];
      deltas[r] = delta;
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      const int64_t valid = runs.valid(r, rows, n);
      const T row_lse = lse[i];
      const T delta = deltas[r];
      T* prow = p + r * n;
      T* dsrow = ds + r * n;
      if (row_lse == -std::numeric_limits<T>::infinity()) {  // a row that sees no key
        std::fill(prow, prow + n, T(0));
        std::fill(dsrow, dsrow + n, T(0));
        continue;
      }
      if (slope != T(0)) add_alibi(prow, valid, i, slope, runs);
      mask_row(prow, i, runs, pattern);
#pragma omp simd
      for (int64_t j = 0; j < valid; ++j) {
        // <= 0 in exact arithmetic; clamped so rounding can never make a weight above 1 (and
        // huge scores never overflow into NaN gradients).
        prow[j] = simd::exp(std::min(prow[j] - row_lse, T(0)));
        dsrow[j] = prow[j] * (dsrow[j] - delta) * scale;
      }
      if (hd.bf16_values) {  // operands of the products below, rounded once dS is formed
        round_bf16(prow, 1, valid, n, prow);
        round_bf16(dsrow, 1, valid, n, dsrow);
      }
      std::fill(prow + valid, prow + n, T(0));
      std::fill(dsrow + valid, dsrow + n, T(0));
    }
    runs.each([&](int64_t col, int64_t key, int64_t count, bool first) {
      block_product<In>(backend, runs.band(Band::k_lower), rows, n, true, false, count, d, rows,
                        T(1), p + col, n, dy_product, ld_product, T(1), dh.v + key * dh.ld, dh.ld);
      block_product<In>(backend, runs.band(Band::k_upper), rows, n, false, false, rows, d, count,
                        T(1), ds + col, n, hd.k + key * hd.ld, hd.ld,
                        first && !add_to_dq ? T(0) : T(1), dh.q + i0 * dh.ld, dh.ld);
      block_product<In>(backend, runs.band(Band::k_lower), rows, n, true, false, count, d, rows,
                        T(1), ds + col, n, q, hd.ld, T(1), dh.k + key * dh.ld, dh.ld);
    });
  }
}

// The Sparse Transformer's pattern is two softmax passes merged by their log-sum-exps: the band
// (a window of S keys) for every query, then the strided columns one residue class r mod S at a
// time. Class r's queries r + S, r + 2S, ... see its keys r, r + 2S, ... one step behind them:
// causal attention on views of Q, K and V whose rows lie S apart, costing (T / S)^2 per class and
// T^2 / S for all of them. ALiBi's distance between class positions a and b is S (a - b + 1):
// the view gets slope S, and its log-sum-exps come out S slope too high.
template <class T>
Head<T> strided_class(const Head<T>& h, int64_t r, int64_t stride) {
  return {h.q + (r + stride) * h.ld, h.k + r * h.ld, h.v + r * h.ld, h.ld * stride,
          h.bf16_values};
}

// Rows of the class r < T - S: queries r + S, r + 2S, ... below t.
inline int64_t strided_class_rows(int64_t t, int64_t r, int64_t stride) {
  return (t - 1 - r) / stride;
}

// Scratch beyond the score panel: one class's outputs and log-sum-exps.
inline int64_t strided_scratch(int64_t t, int64_t d, const AttentionPattern& pattern) {
  return pattern.kind == AttentionPattern::Kind::strided ? (t / pattern.stride + 1) * (d + 1) : 0;
}

template <class T, class In>
void forward_strided_head(ProductBackend backend, const Head<const In>& hd, T* y, int64_t ldy,
                          T* lse, int64_t t, int64_t d, T scale, T slope, int64_t stride, T* s,
                          T* class_y) {
  forward_head(backend, hd, y, ldy, lse, t, t, d, scale, slope,
               AttentionPattern::sliding_window(stride), s);
  T* class_lse = class_y + (t / stride + 1) * d;
  for (int64_t r = 0; r < stride && r + stride < t; ++r) {
    const int64_t rows = strided_class_rows(t, r, stride);
    forward_head(backend, strided_class(hd, r, stride), class_y, d, class_lse, rows, rows, d,
                 scale, slope * static_cast<T>(stride), AttentionPattern{}, s);
    for (int64_t a = 0; a < rows; ++a) {
      const int64_t i = r + (a + 1) * stride;
      const T band = lse[i], columns = class_lse[a] - slope * static_cast<T>(stride);
      const T top = std::max(band, columns);
      const T merged = top + std::log(std::exp(band - top) + std::exp(columns - top));
      const T wb = std::exp(band - merged), wc = std::exp(columns - merged);
      T* out = y + i * ldy;
      const T* col = class_y + a * d;
#pragma omp simd
      for (int64_t e = 0; e < d; ++e) out[e] = wb * out[e] + wc * col[e];
      lse[i] = merged;
    }
  }
}

// Given the merged log-sum-exps, each pass's weights are exp(score - lse) and the backward of the
// two passes is separable: the band's, then each class's adding to dQ.
template <class T, class In>
void backward_strided_head(ProductBackend backend, const Head<const In>& hd, const Head<T>& dh,
                           const T* y, const T* dy, int64_t ldy, const T* lse, int64_t t, int64_t d,
                           T scale, T slope, int64_t stride, T* p, T* ds, T* class_lse, T* dy16) {
  backward_head(backend, hd, dh, y, dy, ldy, lse, t, t, d, scale, slope,
                AttentionPattern::sliding_window(stride), p, ds, dy16);
  for (int64_t r = 0; r < stride && r + stride < t; ++r) {
    const int64_t rows = strided_class_rows(t, r, stride);
    for (int64_t a = 0; a < rows; ++a) {
      class_lse[a] = lse[r + (a + 1) * stride] + slope * static_cast<T>(stride);
    }
    const int64_t first = (r + stride) * ldy;
    backward_head(backend, strided_class(hd, r, stride), strided_class(dh, r, stride), y + first,
                  dy + first, ldy * stride, class_lse, rows, rows, d, scale,
                  slope * static_cast<T>(stride), AttentionPattern{}, p, ds, dy16, true);
  }
}

}  // namespace

namespace detail::packed {

Layout packed_layout(const Tensor& qkv, int64_t n_heads, int64_t n_kv_heads, const char* op) {
  if (n_kv_heads == 0) n_kv_heads = n_heads;
  const bool heads_ok = n_heads > 0 && n_kv_heads > 0 && n_heads % n_kv_heads == 0;
  // W = C + 2 C kv_heads / heads = C (heads + 2 kv_heads) / heads
  const int64_t w = qkv.ndim() == 3 ? qkv.size(2) : 0, parts = n_heads + 2 * n_kv_heads;
  if (qkv.ndim() != 3 || !heads_ok || w % parts != 0) {
    throw ShapeError(fmt::format(
        "{}: expects qkv (B,T,C + 2 C kv_heads/heads) with heads {} a multiple of kv_heads {} "
        "and C of heads, got {}",
        op, n_heads, n_kv_heads, qkv.shape().str()));
  }
  const int64_t d = w / parts;
  return {qkv.size(1), n_heads * d, n_kv_heads * d, d, n_heads / n_kv_heads};
}

}  // namespace detail::packed

namespace {

// ALiBi's slope of each head in the kernel's type, or zeros without ALiBi.
template <class T>
std::vector<T> head_slopes(int64_t n_heads, bool alibi) {
  std::vector<T> out(static_cast<size_t>(n_heads), T(0));
  if (alibi) {
    const std::vector<double> slopes = alibi_slopes(n_heads);
    std::transform(slopes.begin(), slopes.end(), out.begin(),
                   [](double m) { return static_cast<T>(m); });
  }
  return out;
}

// What the backward pass reads of the forward: y and each row's log-sum-exp, and qkv, or on a
// bf16 backend qkv rounded to bf16 in its place (half the memory).
struct AttentionSaved {
  ProductBackend backend;
  Tensor qkv, y, lse;
  Rounded qkv16;
  Shape shape;
  DType dtype;
  Layout layout;
  int64_t n_heads;
  bool alibi;
  AttentionPattern pattern;
  int64_t panel, extra;  // one (block, T) score panel, and the strided pattern's scratch
  bool widen;            // bf16_f32_fma: each head's q, k, v widened back to f32 once
  std::vector<int64_t> lengths;  // bidirectional: each sequence's unpadded keys; empty: all T

  int64_t length(int64_t bi) const {
    return lengths.empty() ? layout.t : lengths[static_cast<size_t>(bi)];
  }
};

// y (B,T,C) = softmax(pattern(scale Q K^T + ALiBi)) V per head, Q K V read from qkv
// (B,T,C + 2 KV) in place; lse (B,H,T) each row's log-sum-exp.
void attention_forward(const Tensor& qkv, AttentionSaved& sv) {
  const Layout& layout = sv.layout;
  const int64_t b = sv.shape[0], t = layout.t, c = layout.c, d = layout.d;
  const int64_t wide = sv.widen ? widened_head_values(t, d) : 0;
  const int64_t per_thread = sv.panel + sv.extra + wide;
  Tensor scratch = Tensor::empty({omp_get_max_threads(), per_thread}, sv.dtype);
  dispatch_float(sv.dtype, "causal_self_attention", [&](auto tag) {
    using T = decltype(tag);
    const T scale = T(1) / std::sqrt(static_cast<T>(d));
    const std::vector<T> slopes = head_slopes<T>(sv.n_heads, sv.alibi);
    for_each_head<T>(b, sv.n_heads, scratch, per_thread, [&](int64_t bi, int64_t hi, T* s) {
      T* yh = sv.y.data<T>() + y_offset(bi, hi, layout);
      T* lh = sv.lse.data<T>() + (bi * sv.n_heads + hi) * t;
      const T slope = slopes[static_cast<size_t>(hi)];
      auto forward = [&](const auto& hd) {
        if (sv.pattern.kind == AttentionPattern::Kind::strided) {
          forward_strided_head(sv.backend, hd, yh, c, lh, t, d, scale, slope, sv.pattern.stride, s,
                               s + sv.panel);
        } else {
          forward_head(sv.backend, hd, yh, c, lh, t, sv.length(bi), d, scale, slope, sv.pattern,
                       s);
        }
      };
      if constexpr (std::is_same_v<T, float>) {
        if (sv.qkv16.data != nullptr) {
          const Head<const bf16> h16 = head_of(sv.qkv16.data, bi, hi, layout);
          return sv.widen ? forward(widened_head(h16, t, d, s + sv.panel + sv.extra))
                          : forward(h16);
        }
      }
      forward(head_of(qkv.data<T>(), bi, hi, layout));
    });
  });
}

// dqkv (B,T,C + 2 KV) from g = dy (B,T,C), P recomputed from the saved log-sum-exps: per head
// dV = P^T dY, dP = dY V^T, dS = P (dP - rowsum(dY Y)) scale, dQ = dS K, dK = dS^T Q.
Tensor attention_backward(const Tensor& g, const AttentionSaved& sv) {
  const Layout& layout = sv.layout;
  const int64_t b = sv.shape[0], t = layout.t, c = layout.c, d = layout.d;
  Tensor dqkv = Tensor::empty(sv.shape, sv.dtype);
  if (dqkv.numel() == 0) return dqkv;
  // p, ds, the strided pattern's extra, and with `widen` the head widened and a block of dY
  const int64_t wide = sv.widen ? widened_head_values(t, d) + kBlock * d : 0;
  const int64_t panel = sv.panel, per_thread = 2 * panel + sv.extra + wide;
  Tensor scratch = Tensor::empty({omp_get_max_threads(), per_thread}, sv.dtype);
  dispatch_float(sv.dtype, "causal_self_attention", [&](auto tag) {
    using T = decltype(tag);
    const T* py = sv.y.data<T>();
    const T* pg = g.data<T>();
    T* pd = dqkv.data<T>();
    const T scale = T(1) / std::sqrt(static_cast<T>(d));
    const std::vector<T> slopes = head_slopes<T>(sv.n_heads, sv.alibi);
    for_each_kv_group(b, layout, pd, scratch, per_thread, [&](int64_t bi, int64_t hi, T* s) {
      const int64_t yo = y_offset(bi, hi, layout);
      const Head<T> dh = head_of(pd, bi, hi, layout);
      const T* lh = sv.lse.data<T>() + (bi * sv.n_heads + hi) * t;
      const T slope = slopes[static_cast<size_t>(hi)];
      T* head_wide = sv.widen ? s + 2 * panel + sv.extra : nullptr;
      T* dy16 = sv.widen ? head_wide + widened_head_values(t, d) : nullptr;
      auto backward = [&](const auto& hd) {
        if (sv.pattern.kind == AttentionPattern::Kind::strided) {
          backward_strided_head(sv.backend, hd, dh, py + yo, pg + yo, c, lh, t, d, scale, slope,
                                sv.pattern.stride, s, s + panel, s + 2 * panel, dy16);
        } else {
          backward_head(sv.backend, hd, dh, py + yo, pg + yo, c, lh, t, sv.length(bi), d, scale,
                        slope, sv.pattern, s, s + panel, dy16);
        }
      };
      if constexpr (std::is_same_v<T, float>) {
        if (!sv.qkv.defined()) {
          const Head<const bf16> h16 = head_of(sv.qkv16.data, bi, hi, layout);
          return sv.widen ? backward(widened_head(h16, t, d, head_wide)) : backward(h16);
        }
      }
      backward(head_of(sv.qkv.data<T>(), bi, hi, layout));
    });
  });
  return dqkv;
}

// The FLOPs of one of the fused kernel's products over every head, for profiling: a causal
// full pattern's useful terms only (each query against its keys up to itself), 0 for the other
// patterns. The forward runs two products (S = Q K^T, Y = P V), the backward five (S again, then
// dV, dP, dQ, dK).
double causal_product_flops(const AttentionSaved& sv) {
  if (!detail::g_op_profiling || sv.pattern.kind != AttentionPattern::Kind::full ||
      sv.pattern.is_bidirectional()) {
    return 0.0;
  }
  const double t = static_cast<double>(sv.layout.t);
  return 2.0 * static_cast<double>(sv.shape[0] * sv.n_heads * sv.layout.d) * t * (t + 1) / 2;
}

// The fused kernel's forward, recorded under `op` with its backward.
Tensor fused_self_attention(const Tensor& qkv, int64_t n_heads, int64_t n_kv_heads, bool alibi,
                            const AttentionPattern& pattern, std::vector<int64_t> lengths,
                            const char* op) {
  const Layout layout = packed_layout(qkv, n_heads, n_kv_heads, op);
  const int64_t b = qkv.size(0), t = layout.t, c = layout.c;
  AttentionSaved sv{kernels::product_backend(qkv.dtype()),
                    Tensor{},
                    Tensor::empty({b, t, c}, qkv.dtype()),
                    Tensor::empty({b, n_heads, t}, qkv.dtype()),
                    Rounded{},
                    qkv.shape(),
                    qkv.dtype(),
                    layout,
                    n_heads,
                    alibi,
                    pattern,
                    std::min(kBlock, t) * t,
                    strided_scratch(t, layout.d, pattern),
                    false,
                    std::move(lengths)};
  // On a bf16 backend the products read q, k and v rounded to bf16 once, here, in place of qkv.
  const bool keep_bf16 = qkv.dtype() == DType::f32 && kernels::rounds_to_bf16(sv.backend);
  if (keep_bf16 && qkv.numel() > 0) sv.qkv16 = rounded(qkv);
  sv.widen = keep_bf16 && sv.backend == ProductBackend::bf16_f32_fma;
  if (!keep_bf16) sv.qkv = qkv.detach();
  if (b * t * c > 0) attention_forward(qkv, sv);
  detail::profile_flops(2 * causal_product_flops(sv));
  const Tensor y = sv.y;
  sv.y = y.detach();
  return record(op, y, {qkv}, [sv](const Tensor& g) {
    Tensor dqkv = attention_backward(g, sv);
    detail::profile_flops(5 * causal_product_flops(sv));
    return std::vector<Tensor>{dqkv};
  });
}

}  // namespace

Tensor causal_self_attention(const Tensor& qkv, int64_t n_heads, int64_t n_kv_heads, bool alibi,
                             const AttentionPattern& pattern) {
  pattern.validate("causal_self_attention");
  if (pattern.is_bidirectional()) {
    throw ValueError(Operation("causal_self_attention"),
                     fmt::format("{} is not causal; it is bidirectional_self_attention's",
                                 pattern.str()));
  }
  if (pattern.is_linear()) {
    throw ValueError("causal_self_attention: linear attention has no softmax; it is "
                     "causal_linear_attention");
  }
  return fused_self_attention(qkv, n_heads, n_kv_heads, alibi, pattern, {},
                              "causal_self_attention");
}

Tensor bidirectional_self_attention(const Tensor& qkv, int64_t n_heads, int64_t n_kv_heads,
                                    bool alibi, const AttentionPattern& pattern,
                                    const std::vector<int64_t>& lengths) {
  const Operation op("bidirectional_self_attention");
  pattern.validate("bidirectional_self_attention");
  if (!pattern.is_bidirectional()) {
    throw ValueError(op, fmt::format("{} is not bidirectional; it is causal_self_attention's",
                                     pattern.str()));
  }
  if (!lengths.empty() && (qkv.ndim() != 3 || static_cast<int64_t>(lengths.size()) != qkv.size(0))) {
    throw ShapeError(op, fmt::format("{} lengths for qkv {}", lengths.size(), qkv.shape().str()));
  }
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (lengths[i] < 0 || lengths[i] > qkv.size(1)) {
      throw IndexError(op, fmt::format("length {} of sequence {} is outside [0, {}]", lengths[i], i,
                                       qkv.size(1)));
    }
  }
  return fused_self_attention(qkv, n_heads, n_kv_heads, alibi, pattern, lengths,
                              "bidirectional_self_attention");
}

}  // namespace tinygpt
