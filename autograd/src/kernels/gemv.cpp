#include "gemv.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "avx512_clones.hpp"
#include "parallel_for.hpp"
#if TINYGPT_HAS_AVX512_CLONES
#include <immintrin.h>
#endif

// Built for 16 lanes as well (avx512_clones.hpp): twice the bytes per load keeps more of the
// weight's stream in flight per instruction. test_gemv holds the loops this CPU runs against
// float64.

namespace tinygpt::kernels {
namespace {

// A product reads fewer weights than this on the calling thread: waking the team costs more.
constexpr int64_t kGemvParallelWeights = int64_t{1} << 15;

// Rows of a (k, n) weight per block: each block's sums start from zero and run over its rows in
// order, and the blocks' sums are added in block order, a fixed order whatever the thread count.
// The threads take whole blocks as they come free, each block one contiguous stretch of the
// weight: a thread woken late for the product takes fewer, rather than the team waiting for it.
constexpr int64_t kGemvBlockRows = 128;

// The stretches a (n, k) weight's outputs are taken in, whole 16-output groups each: enough that
// the team shares them evenly whichever thread starts late, few enough to be long streams.
constexpr int64_t kGemvStretches = 32;

// Rows of W added per pass over a block's sums: each pass reads and writes the sums (n values,
// in L1) once for this many rows of the weight.
constexpr int kGemvPassRows = 16;

// sums (n) += x[0..kRows) W[0..kRows), W's rows n apart, added into each sum in row order.
template <int kRows>
inline __attribute__((always_inline)) void add_rows(const float* x, const float* w, int64_t n,
                                                    float* sums) {
  const float* rows[kRows];
  float xs[kRows];
  for (int q = 0; q < kRows; ++q) rows[q] = w + q * n, xs[q] = x[q];
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    float s = sums[j];
#pragma GCC unroll 16
    for (int q = 0; q < kRows; ++q) s += xs[q] * rows[q][j];
    sums[j] = s;
  }
}

// sums (n) = x[lo..hi) W[lo..hi), W (k, n): the rows lo..hi, one block, in row order.
inline __attribute__((always_inline)) void gemv_block_loop(const float* x, const float* w,
                                                           int64_t n, int64_t lo, int64_t hi,
                                                           float* sums) {
  std::fill(sums, sums + n, 0.0f);
  int64_t i = lo;
  for (; i + kGemvPassRows <= hi; i += kGemvPassRows) {
    add_rows<kGemvPassRows>(x + i, w + i * n, n, sums);
  }
  for (; i < hi; ++i) add_rows<1>(x + i, w + i * n, n, sums);
}

// y[lo..hi) of W x, W (n, k): each output a dot product of one row of W with x, one row at a
// time, so the thread reads its rows as one sequential stream, the pattern the hardware
// prefetchers follow best (several rows' streams interleaved slow the read down).
inline __attribute__((always_inline)) void gemv_dots_loop(const float* x, const float* w, int64_t k,
                                                          int64_t lo, int64_t hi, float* y) {
  for (int64_t r = lo; r < hi; ++r) {
    const float* wr = w + r * k;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < k; ++i) s += x[i] * wr[i];
    y[r] = s;
  }
}

TINYGPT_AVX512 void gemv_block_avx512(const float* x, const float* w, int64_t n, int64_t lo,
                                      int64_t hi, float* sums) {
  gemv_block_loop(x, w, n, lo, hi, sums);
}

TINYGPT_AVX512 void gemv_dots_avx512(const float* x, const float* w, int64_t k, int64_t lo,
                                     int64_t hi, float* y) {
  gemv_dots_loop(x, w, k, lo, hi, y);
}

// y (n) = x W + bias, W (k, n): the team (with `on_team`, for a large enough W) takes the
// blocks of rows into their sums, then whole 16-output groups of y, each the blocks' sums in
// block order.
void gemv_rows(const float* x, const float* w, int64_t k, int64_t n, const float* bias, float* y,
               bool on_team) {
  const int64_t blocks = (k + kGemvBlockRows - 1) / kGemvBlockRows, groups = (n + 15) / 16;
  thread_local std::vector<float> block_sums;  // kept: a warm step allocates nothing
  block_sums.resize(static_cast<size_t>(blocks * n));
  float* const sums = block_sums.data();  // the calling thread's, shared with the team
  const bool wide = use_avx512();
  const auto add_block = [&](int64_t b) {
    const int64_t lo = b * kGemvBlockRows, hi = std::min(k, lo + kGemvBlockRows);
    wide ? gemv_block_avx512(x, w, n, lo, hi, sums + b * n)
         : gemv_block_loop(x, w, n, lo, hi, sums + b * n);
  };
  const auto sum_group = [&](int64_t g) {
    const int64_t lo = 16 * g, hi = std::min(n, lo + 16);
    std::fill(y + lo, y + hi, 0.0f);
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t j = lo; j < hi; ++j) y[j] += sums[b * n + j];
    }
    if (bias != nullptr) {
      for (int64_t j = lo; j < hi; ++j) y[j] += bias[j];
    }
  };
  if (!on_team || k * n < kGemvParallelWeights || omp_in_parallel()) {
    for (int64_t b = 0; b < blocks; ++b) add_block(b);
    for (int64_t g = 0; g < groups; ++g) sum_group(g);
    return;
  }
#pragma omp parallel
  {
#pragma omp for schedule(dynamic)
    for (int64_t b = 0; b < blocks; ++b) add_block(b);
#pragma omp for schedule(static) nowait  // the region's end is the barrier
    for (int64_t g = 0; g < groups; ++g) sum_group(g);
  }
}

// The 16 lanes of a bf16 row product summed as a halving tree (lane l + lane l + 8, ...), the
// order both the native and the portable loop end in.
float bf16_lane_sum(float* lanes) {
  for (int width = 8; width > 0; width /= 2) {
    for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  }
  return lanes[0];
}

float bf16_value(uint16_t word) {
  const uint32_t bits = static_cast<uint32_t>(word) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Row r of W times x on plain floats: lane l takes the pair at 2l of every 32-value stretch, its
// odd element first, as vdpbf16ps adds them (each product of two bf16 values is exact in f32, so
// each add rounds once, as there).
void gemv_bf16_portable(const uint16_t* x, const uint16_t* w, int64_t stride, int64_t lo,
                        int64_t hi, float* y) {
  for (int64_t r = lo; r < hi; ++r) {
    const uint16_t* row = w + r * stride;
    float lanes[16] = {};
    for (int64_t c = 0; c < stride; c += 32) {
      for (int l = 0; l < 16; ++l) {
        const int64_t e = c + 2 * l;
        lanes[l] += bf16_value(row[e + 1]) * bf16_value(x[e + 1]);
        lanes[l] += bf16_value(row[e]) * bf16_value(x[e]);
      }
    }
    y[r] = bf16_lane_sum(lanes);
  }
}

#if TINYGPT_HAS_AVX512_CLONES
// Rows lo..hi of W times x on vdpbf16ps, one row at a time (one sequential stream, as
// gemv_dots_loop), each on one accumulator.
TINYGPT_AVX512_BF16 void gemv_bf16_native(const uint16_t* x, const uint16_t* w, int64_t stride,
                                          int64_t lo, int64_t hi, float* y) {
  for (int64_t r = lo; r < hi; ++r) {
    const uint16_t* row = w + r * stride;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t c = 0; c < stride; c += 32) {
      const __m512i xv = _mm512_loadu_si512(x + c);
      const __m512i wv = _mm512_loadu_si512(row + c);
      acc = _mm512_dpbf16_ps(acc, reinterpret_cast<const __m512bh&>(wv),
                             reinterpret_cast<const __m512bh&>(xv));
    }
    float lanes[16];
    _mm512_storeu_ps(lanes, acc);
    y[r] = bf16_lane_sum(lanes);
  }
}
#endif

// The n outputs in up to kGemvStretches stretches of whole 16-output groups, taken by the team's
// threads as each comes free (or all by the calling thread without `on_team`): a thread woken
// late takes fewer, and every stretch is one stream of the weight. `share(lo, hi)` computes
// outputs [lo, hi); bias is added after.
template <class Share>
void over_team(bool on_team, int64_t n, const float* bias, float* y, const Share& share) {
  const int64_t groups = (n + 15) / 16;
  const int64_t stretch = 16 * ((groups + kGemvStretches - 1) / kGemvStretches);
  detail::for_each_taken(on_team, (n + stretch - 1) / stretch, [&](int64_t s) {
    const int64_t lo = s * stretch, hi = std::min(n, lo + stretch);
    share(lo, hi);
    if (bias != nullptr) {
      for (int64_t j = lo; j < hi; ++j) y[j] += bias[j];
    }
  });
}

// gemv, on the team when `on_team` and the weight is large enough.
void gemv_product(const float* x, const float* w, bool transposed, int64_t k, int64_t n,
                  const float* bias, float* y, bool on_team) {
  if (!transposed) return gemv_rows(x, w, k, n, bias, y, on_team);
  const bool wide = use_avx512();
  over_team(on_team && k * n >= kGemvParallelWeights, n, bias, y, [&](int64_t lo, int64_t hi) {
    wide ? gemv_dots_avx512(x, w, k, lo, hi, y) : gemv_dots_loop(x, w, k, lo, hi, y);
  });
}

}  // namespace

void gemv(const float* x, const float* w, bool transposed, int64_t k, int64_t n, const float* bias,
          float* y) {
  gemv_product(x, w, transposed, k, n, bias, y, true);
}

void gemv_batch(int64_t batch, const float* x, int64_t x_stride, const float* w, int64_t w_stride,
                bool transposed, int64_t k, int64_t n, const float* bias, float* y) {
  if (batch == 1) return gemv(x, w, transposed, k, n, bias, y);
  // Each product on one thread: a head's product is too small to share, the heads together not.
  detail::for_each_taken(batch * k * n >= kGemvParallelWeights, batch, [&](int64_t i) {
    gemv_product(x + i * x_stride, w + i * w_stride, transposed, k, n, bias, y + i * n, false);
  });
}

void gemv_bf16(const uint16_t* x, const uint16_t* w, int64_t stride, int64_t n, const float* bias,
               float* y, [[maybe_unused]] bool native) {
  // Twice the values per byte of an f32 product: the same threshold in bytes.
  over_team(stride * n / 2 >= kGemvParallelWeights, n, bias, y, [&](int64_t lo, int64_t hi) {
#if TINYGPT_HAS_AVX512_CLONES
    if (native) return gemv_bf16_native(x, w, stride, lo, hi, y);
#endif
    gemv_bf16_portable(x, w, stride, lo, hi, y);
  });
}

uint16_t round_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace tinygpt::kernels
