#include "gemv.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "avx512_clones.hpp"
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

// y[lo..hi) of x W, W (k, n): rows of W taken four at a time, each a contiguous stretch of
// columns, added into y (which stays in L1) in row order, so y[j] = ((x0 w0j + x1 w1j) + ...).
inline __attribute__((always_inline)) void gemv_rows_loop(const float* x, const float* w, int64_t k,
                                                          int64_t n, int64_t lo, int64_t hi,
                                                          float* y) {
  std::fill(y + lo, y + hi, 0.0f);
  int64_t i = 0;
  for (; i + 4 <= k; i += 4) {
    const float x0 = x[i], x1 = x[i + 1], x2 = x[i + 2], x3 = x[i + 3];
    const float* w0 = w + i * n;
    const float* w1 = w0 + n;
    const float* w2 = w1 + n;
    const float* w3 = w2 + n;
#pragma omp simd
    for (int64_t j = lo; j < hi; ++j) y[j] = y[j] + x0 * w0[j] + x1 * w1[j] + x2 * w2[j] + x3 * w3[j];
  }
  for (; i < k; ++i) {
    const float xi = x[i];
    const float* wi = w + i * n;
#pragma omp simd
    for (int64_t j = lo; j < hi; ++j) y[j] = y[j] + xi * wi[j];
  }
}

// y[lo..hi) of W x, W (n, k): four rows of W at a time, each a dot product with x.
inline __attribute__((always_inline)) void gemv_dots_loop(const float* x, const float* w, int64_t k,
                                                          int64_t lo, int64_t hi, float* y) {
  int64_t r = lo;
  for (; r + 4 <= hi; r += 4) {
    const float* w0 = w + r * k;
    const float* w1 = w0 + k;
    const float* w2 = w1 + k;
    const float* w3 = w2 + k;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
    for (int64_t i = 0; i < k; ++i) {
      s0 += x[i] * w0[i];
      s1 += x[i] * w1[i];
      s2 += x[i] * w2[i];
      s3 += x[i] * w3[i];
    }
    y[r] = s0, y[r + 1] = s1, y[r + 2] = s2, y[r + 3] = s3;
  }
  for (; r < hi; ++r) {
    const float* wr = w + r * k;
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < k; ++i) s += x[i] * wr[i];
    y[r] = s;
  }
}

TINYGPT_AVX512 void gemv_rows_avx512(const float* x, const float* w, int64_t k, int64_t n,
                                     int64_t lo, int64_t hi, float* y) {
  gemv_rows_loop(x, w, k, n, lo, hi, y);
}

TINYGPT_AVX512 void gemv_dots_avx512(const float* x, const float* w, int64_t k, int64_t lo,
                                     int64_t hi, float* y) {
  gemv_dots_loop(x, w, k, lo, hi, y);
}

// The outputs [lo, hi) of one thread's share.
void gemv_share(const float* x, const float* w, bool transposed, int64_t k, int64_t n, int64_t lo,
                int64_t hi, float* y) {
  const bool wide = use_avx512();
  if (transposed) {
    wide ? gemv_dots_avx512(x, w, k, lo, hi, y) : gemv_dots_loop(x, w, k, lo, hi, y);
  } else {
    wide ? gemv_rows_avx512(x, w, k, n, lo, hi, y) : gemv_rows_loop(x, w, k, n, lo, hi, y);
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
// kRows rows of W from `row` times x on vdpbf16ps, one accumulator each.
template <int kRows>
TINYGPT_AVX512_BF16 inline void gemv_bf16_rows(const uint16_t* x, const uint16_t* row,
                                               int64_t stride, float* y) {
  __m512 acc[kRows];
  for (int q = 0; q < kRows; ++q) acc[q] = _mm512_setzero_ps();
  for (int64_t c = 0; c < stride; c += 32) {
    const __m512i xv = _mm512_loadu_si512(x + c);
    for (int q = 0; q < kRows; ++q) {
      const __m512i wv = _mm512_loadu_si512(row + q * stride + c);
      acc[q] = _mm512_dpbf16_ps(acc[q], reinterpret_cast<const __m512bh&>(wv),
                                reinterpret_cast<const __m512bh&>(xv));
    }
  }
  for (int q = 0; q < kRows; ++q) {
    float lanes[16];
    _mm512_storeu_ps(lanes, acc[q]);
    y[q] = bf16_lane_sum(lanes);
  }
}

TINYGPT_AVX512_BF16 void gemv_bf16_native(const uint16_t* x, const uint16_t* w, int64_t stride,
                                          int64_t lo, int64_t hi, float* y) {
  int64_t r = lo;
  for (; r + 4 <= hi; r += 4) gemv_bf16_rows<4>(x, w + r * stride, stride, y + r);
  for (; r < hi; ++r) gemv_bf16_rows<1>(x, w + r * stride, stride, y + r);
}
#endif

// The shares of n outputs over the team: whole 16-output groups, so only the last share has a
// partial vector. `share(lo, hi)` computes outputs [lo, hi); bias is added after.
template <class Share>
void over_team(int64_t weights, int64_t n, const float* bias, float* y, const Share& share) {
  const int64_t groups = (n + 15) / 16;
#pragma omp parallel if (weights >= kGemvParallelWeights && !omp_in_parallel())
  {
    const int64_t team = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t lo = std::min(n, 16 * (groups * t / team));
    const int64_t hi = std::min(n, 16 * (groups * (t + 1) / team));
    if (lo < hi) {
      share(lo, hi);
      if (bias != nullptr) {
        for (int64_t j = lo; j < hi; ++j) y[j] += bias[j];
      }
    }
  }
}

}  // namespace

void gemv(const float* x, const float* w, bool transposed, int64_t k, int64_t n, const float* bias,
          float* y) {
  over_team(k * n, n, bias, y, [&](int64_t lo, int64_t hi) {
    gemv_share(x, w, transposed, k, n, lo, hi, y);
  });
}

void gemv_bf16(const uint16_t* x, const uint16_t* w, int64_t stride, int64_t n, const float* bias,
               float* y, [[maybe_unused]] bool native) {
  // Twice the values per byte of an f32 product: the same threshold in bytes.
  over_team(stride * n / 2, n, bias, y, [&](int64_t lo, int64_t hi) {
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
