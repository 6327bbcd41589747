#pragma once
// The one door to BLAS for the ops (matmul, linear, fused attention): row-major
// C = alpha op(A) op(B) + beta C, single-threaded (threads.hpp keeps OpenBLAS at one thread;
// the callers share work out over OpenMP themselves).
#include <cblas.h>

#include <cstdint>

namespace tinygpt::detail {

inline CBLAS_TRANSPOSE blas_op(bool transposed) { return transposed ? CblasTrans : CblasNoTrans; }

inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, blas_op(ta), blas_op(tb), static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

inline void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                 int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, blas_op(ta), blas_op(tb), static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

}  // namespace tinygpt::detail
