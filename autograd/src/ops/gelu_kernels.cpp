#include "gelu_kernels.hpp"

#include "tinygpt/autograd/simd_math.hpp"

// The project builds without AVX-512 where GCC 12.2 miscompiles AVX-512 constant vectors
// (CMakeLists.txt), which would leave these exp-bound loops on 8 lanes: 16 lanes measured 0.84
// against 1.40 ns an element on the project's Zen 4 machine. The loops hold no such constants,
// and test_fast_kernels compares their bits with the 8-lane build's (gelu_linear against gelu,
// then linear). Only in a build that has FMA itself (-march=native here):
// GCC contracts a * b + c into one FMA wherever the target has it, so an AVX-512 loop in a build
// without FMA (the sanitizer build) would round differently from the rest of that build.
#if defined(__FMA__)
#define TINYGPT_AVX512 \
  __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,prefer-vector-width=512")))
constexpr bool kAvx512Clones = true;
#else
#define TINYGPT_AVX512
constexpr bool kAvx512Clones = false;
#endif

namespace tinygpt::detail {
namespace {

template <class T>
inline __attribute__((always_inline)) void gelu_with_slope_loop(const T* h, T* out, T* slope,
                                                                int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = simd::gelu_with_grad(h[i], slope[i]);
}

TINYGPT_AVX512 void gelu_with_slope_avx512(const float* h, float* out, float* slope, int64_t n) {
  gelu_with_slope_loop(h, out, slope, n);
}

// True when this build made the AVX-512 clones and the CPU can run them.
bool use_avx512() {
  static const bool use = kAvx512Clones && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
  return use;
}

}  // namespace

void gelu_with_slope(const float* h, float* out, float* slope, int64_t n) {
  if (use_avx512()) {
    gelu_with_slope_avx512(h, out, slope, n);
  } else {
    gelu_with_slope_loop(h, out, slope, n);
  }
}

void gelu_with_slope(const double* h, double* out, double* slope, int64_t n) {
  gelu_with_slope_loop(h, out, slope, n);
}

TINYGPT_AVX512 void gelu_bf16(const bf16* h, float* out, float* grad, int64_t n) {
  if (grad != nullptr) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      float slope;
      out[i] = simd::gelu_with_grad(from_bf16(h[i]), slope);
      grad[i] *= slope;
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = simd::gelu(from_bf16(h[i]));
  }
}

}  // namespace tinygpt::detail
