#pragma once
// A 16 x 16 block of 32-bit values (f32, or words holding two bf16) transposed in registers: the
// fused attention's transposed operands and the bf16 products' packed B (gemm_bf16.cpp). Needs
// AVX-512F; callers check the CPU (use_avx512(), or bf16 precision, which implies it).
#include <cstdint>

namespace tinygpt::kernels {

// The block at b (leading dimension ldb) -> out (leading dimension ldo).
void transpose_16x16(const float* b, int64_t ldb, float* out, int64_t ldo);

}  // namespace tinygpt::kernels
