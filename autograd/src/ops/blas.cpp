#include "blas.hpp"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <fmt/format.h>
#include <omp.h>

#include <string>
#include <type_traits>
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

// An operand as bf16: itself, or its rows x cols rounded into `scratch` (ld becomes cols).
template <class T>
const bf16* as_bf16(const T* x, int64_t rows, int64_t cols, int64_t& ld,
                    std::vector<bf16>& scratch) {
  if constexpr (std::is_same_v<T, bf16>) {
    return x;
  } else {
    const bf16* out = converted(x, rows, cols, ld, scratch);
    ld = cols;
    return out;
  }
}

// Under Precision::bf16: A and B (bf16, or f32 rounded to bf16 here) multiplied with f32
// accumulation -- widened back to f32 for sgemm (Bf16Products::f32_fma), or on oneDNN's bf16
// matmul, each f32 operand rounded in one pass into this thread's scratch.
template <class A, class B>
void bf16_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const A* a,
                  int64_t lda, const B* b, int64_t ldb, float beta, float* c, int64_t ldc,
                  const float* bias) {
  if (k == 0) return bias_plus_beta_c(m, n, beta, c, ldc, bias);
  if (bf16_products() == Bf16Products::f32_fma) {
    const WidenedPair w = widened_pair(ta, tb, m, n, k, a, lda, b, ldb);
    return gemm_widened(ta, tb, m, n, k, alpha, w.a, w.lda, w.b, w.ldb, beta, c, ldc, bias);
  }
  // Stored shapes: A (m, k) or (k, m), B (k, n) or (n, k).
  thread_local std::vector<bf16> a16, b16;
  const bf16* a_bf16 = as_bf16(a, ta ? k : m, ta ? m : k, lda, a16);
  const bf16* b_bf16 = as_bf16(b, tb ? n : k, tb ? k : n, ldb, b16);
  OneThread one_thread;
  gemm_bf16(ta, tb, m, n, k, alpha, a_bf16, lda, b_bf16, ldb, beta, c, ldc, bias);
}

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (matmul_precision() == Precision::bf16) {
    return bf16_product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
  }
  OneThread one_thread;
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
  bf16_product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias);
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
  bf16_product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
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
