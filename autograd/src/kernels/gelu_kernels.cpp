#include "gelu_kernels.hpp"

#include "avx512_clones.hpp"
#include "tinygpt/autograd/simd_math.hpp"

// Built for 16 lanes as well (avx512_clones.hpp): these loops are bound by exp, which the wider
// registers speed up; test_fast_kernels compares their bits with the 8-lane build's (gelu_linear
// against gelu, then linear).

namespace tinygpt::kernels {
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

}  // namespace tinygpt::kernels
