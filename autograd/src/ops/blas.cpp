#include "blas.hpp"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <fmt/format.h>
#include <omp.h>

#include <string>
#include <vector>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/gemm_backend.hpp"
#include "tinygpt/autograd/precision.hpp"

extern "C" char* openblas_get_corename();

namespace tinygpt {
namespace detail {
namespace {

// oneDNN threads a call made outside an active OpenMP region over omp_get_max_threads(), and
// plans a primitive for that many threads; the products must not depend on the thread count
// (bit-identical steps on 1 and 2 threads), so every call runs with this thread's team size set
// to one for its duration (inside a parallel region that setting is this thread's own).
class OneThread {
 public:
  OneThread() : saved_(omp_get_max_threads()) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~OneThread() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int saved_;
};

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const dnnl_status_t status = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda,
                                          b, ldb, beta, c, ldc);
  if (status != dnnl_success) {
    throw Error(fmt::format("gemm: oneDNN sgemm refused m={} n={} k={} lda={} ldb={} ldc={} "
                            "(status {})",
                            m, n, k, lda, ldb, ldc, static_cast<int>(status)));
  }
}

// Under Bf16Products::f32_fma: A and B (bf16, or f32 rounded to bf16 here) widened to f32 in
// this thread's scratch, in one pass each, and multiplied on sgemm.
template <class A, class B>
void gemm_on_f32_fma(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const A* a,
                     int64_t lda, const B* b, int64_t ldb, float beta, float* c, int64_t ldc,
                     const float* bias) {
  thread_local std::vector<float> a32, b32;
  const int64_t a_cols = ta ? m : k, b_cols = tb ? k : n;
  gemm_widened(ta, tb, m, n, k, alpha, converted(a, ta ? k : m, a_cols, lda, a32), a_cols,
               converted(b, tb ? n : k, b_cols, ldb, b32), b_cols, beta, c, ldc, bias);
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  OneThread one_thread;
  if (matmul_precision() == Precision::bf16) {
    if (k == 0) return bias_plus_beta_c(m, n, beta, c, ldc, nullptr);
    if (bf16_products() == Bf16Products::f32_fma) {
      return gemm_on_f32_fma(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
    }
    // Stored shapes: A (m, k) or (k, m), B (k, n) or (n, k).
    thread_local std::vector<bf16> b16;
    const int64_t b_cols = tb ? k : n;
    gemm(ta, tb, m, n, k, alpha, a, lda, converted(b, tb ? n : k, b_cols, ldb, b16), b_cols, beta,
         c, ldc);
    return;
  }
  sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm_widened(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                  const float* bias) {
  if (m == 0 || n == 0) return;
  OneThread one_thread;
  if (bias != nullptr) {  // oneDNN's matmul adds it to the product: here C starts from it
    bias_plus_beta_c(m, n, beta, c, ldc, bias);
    beta = 1.0f;
  }
  sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a,
          int64_t lda, const bf16* b, int64_t ldb, float beta, float* c, int64_t ldc,
          const float* bias) {
  if (m == 0 || n == 0) return;
  if (k == 0) return bias_plus_beta_c(m, n, beta, c, ldc, bias);
  OneThread one_thread;
  if (bf16_products() == Bf16Products::f32_fma) {
    return gemm_on_f32_fma(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
  }
  gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
}

void gemm(bool ta, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a, int64_t lda,
          const PackedB& b, float beta, float* c, int64_t ldc, const float* bias) {
  if (m == 0 || n == 0) return;
  if (k == 0) return bias_plus_beta_c(m, n, beta, c, ldc, bias);
  OneThread one_thread;
  gemm_bf16(ta, m, n, k, alpha, a, lda, b, beta, c, ldc, bias);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const bf16* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) return bias_plus_beta_c(m, n, beta, c, ldc, nullptr);
  if (bf16_products() == Bf16Products::f32_fma) {
    return gemm_on_f32_fma(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
  }
  thread_local std::vector<bf16> a16;
  const int64_t a_cols = ta ? m : k;
  gemm(ta, tb, m, n, k, alpha, converted(a, ta ? k : m, a_cols, lda, a16), a_cols, b, ldb, beta,
       c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  auto op = [](bool transposed) { return transposed ? CblasTrans : CblasNoTrans; };
  cblas_dgemm(CblasRowMajor, op(ta), op(tb), static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
}

}  // namespace detail

namespace {

std::string onednn_isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    default: return "isa " + std::to_string(static_cast<int>(isa));
  }
}

}  // namespace

GemmBackend gemm_backend(DType dtype) {
  if (dtype == DType::f64) {
    return {"OpenBLAS", openblas_get_corename()};
  }
  const dnnl_version_t* v = dnnl_version();
  return {fmt::format("oneDNN {}.{}.{}", v->major, v->minor, v->patch),
          onednn_isa_name(dnnl_get_effective_cpu_isa())};
}

}  // namespace tinygpt
