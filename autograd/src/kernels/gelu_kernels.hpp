#pragma once
// The elementwise passes of gelu_linear: GELU, and its slope for the backward pass. They are the
// hottest elementwise loops of a training step, and are built for AVX-512 where the CPU has it
// (see gelu_kernels.cpp). Each runs on the calling thread.
#include <cstdint>

#include "gemm_bf16.hpp"

namespace tinygpt::kernels {

// out[i] = gelu(h[i]) and slope[i] = gelu'(h[i]) for i < n.
void gelu_with_slope(const float* h, float* out, float* slope, int64_t n);
void gelu_with_slope(const double* h, double* out, double* slope, int64_t n);

// Under Precision::bf16 (so on a CPU with avx512_bf16): out[i] = gelu(h[i]) of bf16 values
// rounded to bf16, and with `grad`, also grad[i] *= gelu'(h[i]). A bf16 has only 65,536 values:
// both are looked up in a table of them made on first use, the bits their evaluation in f32 gives.
void gelu_bf16_rounded(const bf16* h, bf16* out, float* grad, int64_t n);

}  // namespace tinygpt::kernels
