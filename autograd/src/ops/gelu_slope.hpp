#pragma once
// GELU and its slope in one pass, the forward half of gelu_linear (f32 and f64 keep the slope
// for the backward pass). The f32 loop is the hottest elementwise loop of a training step, and
// is built a second time for AVX-512 (see gelu_slope.cpp).
#include <cstdint>

namespace tinygpt::detail {

// out[i] = gelu(h[i]) and slope[i] = gelu'(h[i]) for i < n, on the calling thread.
void gelu_with_slope(const float* h, float* out, float* slope, int64_t n);
void gelu_with_slope(const double* h, double* out, double* slope, int64_t n);

}  // namespace tinygpt::detail
