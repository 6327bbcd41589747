#pragma once
// Products with one row, x (k) times a weight: every product of a decode step at batch 1 (one new
// position). Such a product does two flops per weight it reads, so the memory decides its speed,
// and a matrix-matrix kernel's blocking (oneDNN's sgemm) only stands between the weight and the
// sums. These loops read the weight once, in the order it is stored, in long contiguous stretches
// that the threads of the OpenMP team take as each comes free.
#include <cstdint>

namespace tinygpt::kernels {

// y (n) = x (k) @ W + bias, W stored (k, n) row-major, or (n, k) when `transposed` (y = W x, as
// the LM head's product with the tied embedding). `bias` (n values) may be null. Runs on the
// OpenMP team, or on the calling thread alone inside a parallel region. Each y[j] sums its k
// products in an order fixed by k, n and the instruction set, never by the thread count.
void gemv(const float* x, const float* w, bool transposed, int64_t k, int64_t n, const float* bias,
          float* y);

// The narrowest head gemv_batch is for: the width of its products (k with `transposed`, a
// head's scores q K^T; else n, its weighted values P V). Narrower, each output has too few
// products for loops that sum one output, or one row of W, at a time.
constexpr int64_t kGemvHeadWidth = 64;

// `batch` such products y_i (n) = x_i (k) @ W_i + bias, as gemv: x_i, W_i and y_i start
// i * x_stride, i * w_stride and i * n values in (a stride of 0 shares one operand), as a decode
// step's attention reads each head's cached keys and values. The team takes whole products, so
// each y_i sums in gemv's order whatever the thread count.
void gemv_batch(int64_t batch, const float* x, int64_t x_stride, const float* w, int64_t w_stride,
                bool transposed, int64_t k, int64_t n, const float* bias, float* y);

// y (n) = W x + bias on bf16 values: x (stride) and W's n rows (each `stride` long, a multiple of
// 32, zeros past the values), f32 sums. Each lane of the 16 takes the pairs of every 32-value
// stretch at its place (odd element, then even: vdpbf16ps's order), and the lanes are summed as a
// halving tree. On the bf16 dot products with `native` (a CPU with avx512_bf16), else on a
// portable loop with the same order, which rounds the same except for subnormals (vdpbf16ps
// flushes them). Threads as gemv.
void gemv_bf16(const uint16_t* x, const uint16_t* w, int64_t stride, int64_t n, const float* bias,
               float* y, bool native);

// f32 -> bf16, nearest even (NaN stays a quiet NaN), as vcvtneps2bf16 rounds normal values.
uint16_t round_to_bf16(float value);

}  // namespace tinygpt::kernels
