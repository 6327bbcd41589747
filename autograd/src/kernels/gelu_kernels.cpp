#include "gelu_kernels.hpp"

#include <vector>

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

namespace {

// out[i] = gelu(h[i]) of bf16 values, and with `grad`, grad[i] *= gelu'(h[i]) from the same exp.
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

// GELU's rounding and slope at every one of the 65,536 bf16 values, made once by gelu_bf16 itself
// (so a lookup gives the bits evaluating would).
struct GeluBf16Table {
  std::vector<bf16> value16;
  std::vector<float> slope;
};

const GeluBf16Table& gelu_bf16_table() {
  static const GeluBf16Table table = [] {
    constexpr int64_t kValues = int64_t{1} << 16;
    std::vector<bf16> h(kValues);
    std::vector<float> values(kValues);
    GeluBf16Table t{std::vector<bf16>(kValues), std::vector<float>(kValues, 1.0f)};
    for (int64_t i = 0; i < kValues; ++i) h[i] = static_cast<bf16>(i);
    gelu_bf16(h.data(), values.data(), t.slope.data(), kValues);
    to_bf16(values.data(), 1, kValues, kValues, t.value16.data());
    return t;
  }();
  return table;
}

}  // namespace

// Plain loads: the hot part of the table is a few thousand values near zero, in L1, and scalar
// loads outrun a gather's.
void gelu_bf16_rounded(const bf16* h, bf16* out, float* grad, int64_t n) {
  const GeluBf16Table& t = gelu_bf16_table();
  const bf16* value16 = t.value16.data();
  const float* slope = t.slope.data();
  if (grad != nullptr) {
    for (int64_t i = 0; i < n; ++i) {
      out[i] = value16[h[i]];
      grad[i] *= slope[h[i]];
    }
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = value16[h[i]];
  }
}

}  // namespace tinygpt::kernels
