#include "gelu_slope.hpp"

#include "tinygpt/autograd/simd_math.hpp"

namespace tinygpt::detail {
namespace {

template <class T>
inline __attribute__((always_inline)) void gelu_with_slope_loop(const T* h, T* out, T* slope,
                                                                int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = simd::gelu_with_grad(h[i], slope[i]);
}

// The project builds without AVX-512 where GCC 12.2 miscompiles AVX-512 constant vectors
// (CMakeLists.txt), which leaves this exp-bound loop on 8 lanes: 16 lanes measured 0.84 against
// 1.40 ns an element on the project's Zen 4 machine. The loop holds no such constants, and
// test_fast_kernels compares its bits with the 8-lane build's (gelu_linear against gelu, then
// linear).
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,prefer-vector-width=512"))) void
gelu_with_slope_avx512(const float* h, float* out, float* slope, int64_t n) {
  gelu_with_slope_loop(h, out, slope, n);
}

bool cpu_has_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  return has;
}

}  // namespace

void gelu_with_slope(const float* h, float* out, float* slope, int64_t n) {
  if (cpu_has_avx512()) {
    gelu_with_slope_avx512(h, out, slope, n);
  } else {
    gelu_with_slope_loop(h, out, slope, n);
  }
}

void gelu_with_slope(const double* h, double* out, double* slope, int64_t n) {
  gelu_with_slope_loop(h, out, slope, n);
}

}  // namespace tinygpt::detail
