#pragma once
// The one door to the matrix products for the ops (matmul, linear, gelu_linear, the fused
// attentions): row-major C = alpha op(A) op(B) + beta C, described by pointers, sizes and leading
// dimensions, always on the calling thread alone (the callers share work out over the OpenMP team
// themselves, so no library pool ever competes with it).
//
// Where a product runs is a ProductBackend, chosen in one place, product_backend(), from the
// dtype, the scoped precision and the CPU (precision.hpp). An op asks once and hands the answer
// to every product it runs, so its forward and backward passes run on the same backend.
#include <cstdint>

#include "kernels/gemm_bf16.hpp"
#include "tinygpt/autograd/dtype.hpp"

namespace tinygpt::kernels {

enum class ProductBackend {
  openblas_f64,  // f64 (the gradient checks): OpenBLAS's dgemm
  onednn_f32,    // f32 under Precision::f32: oneDNN's sgemm, which picks its kernel from the CPU
  // Under Precision::bf16 both operands are rounded to bf16 and the sums kept in f32, on:
  bf16_dot_pairs,  // oneDNN's bf16 matmul; the fused attention's blocks on vdpbf16ps tiles
  bf16_amx,        // oneDNN's bf16 matmul (on AMX); the fused attention's blocks on AMX tiles
  bf16_f32_fma,    // the rounded operands widened back to f32 (exact), on oneDNN's sgemm
};

// Reads matmul_precision() and bf16_products() (precision.hpp): the only place that does.
ProductBackend product_backend(DType dtype);

inline bool rounds_to_bf16(ProductBackend backend) {
  return backend != ProductBackend::openblas_f64 && backend != ProductBackend::onednn_f32;
}

// One operand of a product, row-major with leading dimension ld, held in one of these forms.
template <class T>
struct Operand {
  const T* values = nullptr;        // as they are; a bf16 backend rounds them
  const bf16* rounded = nullptr;    // rounded to bf16 already (f32 products)
  const PackedB* packed = nullptr;  // B rounded and laid out by pack_b (oneDNN's bf16 matmul)
  bool widened = false;             // `values` hold bf16 values already (bf16_f32_fma)
  int64_t ld = 0;
};

inline Operand<float> operand(const float* x, int64_t ld) {
  return {x, nullptr, nullptr, false, ld};
}
inline Operand<double> operand(const double* x, int64_t ld) {
  return {x, nullptr, nullptr, false, ld};
}
inline Operand<float> operand(const bf16* x, int64_t ld) {
  return {nullptr, x, nullptr, false, ld};
}
inline Operand<float> widened_operand(const float* x, int64_t ld) {
  return {x, nullptr, nullptr, true, ld};
}
inline Operand<float> packed_operand(const PackedB& b) { return {nullptr, nullptr, &b, false, 0}; }

// C (m, n) = alpha op(A) op(B) + beta C, op(A) (m, k) and op(B) (k, n); with `bias` (n values),
// which needs beta 0, every row of C is the bias plus the product.
template <class T>
struct GemmCall {
  GemmCall(ProductBackend backend, bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha,
           Operand<T> a, Operand<T> b, T beta, T* c, int64_t ldc, const T* bias = nullptr)
      : backend(backend), ta(ta), tb(tb), m(m), n(n), k(k), alpha(alpha), a(a), b(b), beta(beta),
        c(c), ldc(ldc), bias(bias) {}

  ProductBackend backend;
  bool ta, tb;
  int64_t m, n, k;
  T alpha;
  Operand<T> a, b;
  T beta;
  T* c;
  int64_t ldc;
  const T* bias;
};

// Runs the call on its backend; throws Error naming the product when the backend cannot take
// its operands (f64 off OpenBLAS, bf16 or packed operands on onednn_f32, a bias with beta != 0).
void gemm(const GemmCall<float>& call);
void gemm(const GemmCall<double>& call);

// The same call spelled out, with each operand in the form its pointer's type says.
template <class T, class A, class B>
void gemm(ProductBackend backend, bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha,
          const A* a, int64_t lda, const B* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  gemm(GemmCall<T>(backend, ta, tb, m, n, k, alpha, operand(a, lda), operand(b, ldb), beta, c,
                   ldc));
}

}  // namespace tinygpt::kernels
