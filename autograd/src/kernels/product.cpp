#include "product.hpp"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/autograd/gemm_backend.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "avx512_clones.hpp"

extern "C" char* openblas_get_corename();

namespace tinygpt {
namespace kernels {
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

// bf16_f32_fma with both operands widened already, by a caller whose panels share them:
// multiplied as they are, on sgemm (oneDNN's matmul adds a bias to the product; here C starts
// from it).
void widened_product(const GemmCall<float>& p) {
  OneThread one_thread;
  float beta = p.beta;
  if (p.bias != nullptr) {
    bias_plus_beta_c(p.m, p.n, beta, p.c, p.ldc, p.bias);
    beta = 1.0f;
  }
  sgemm(p.ta, p.tb, p.m, p.n, p.k, p.alpha, p.a.values, p.a.ld, p.b.values, p.b.ld, beta, p.c,
        p.ldc);
}

// A bf16 backend's product of A and B (bf16, or f32 rounded to bf16 here) with f32 sums:
// widened back to f32 for sgemm (bf16_f32_fma), or on oneDNN's bf16 matmul, each f32 operand
// rounded in one pass into this thread's scratch.
template <class A, class B>
void bf16_product(const GemmCall<float>& p, const A* a, const B* b) {
  if (p.k == 0) return bias_plus_beta_c(p.m, p.n, p.beta, p.c, p.ldc, p.bias);
  int64_t lda = p.a.ld, ldb = p.b.ld;
  if (p.backend == ProductBackend::bf16_f32_fma) {
    const WidenedPair w = widened_pair(p.ta, p.tb, p.m, p.n, p.k, a, lda, b, ldb);
    GemmCall<float> widened = p;
    widened.a = widened_operand(w.a, w.lda);
    widened.b = widened_operand(w.b, w.ldb);
    return widened_product(widened);
  }
  // Stored shapes: A (m, k) or (k, m), B (k, n) or (n, k).
  thread_local std::vector<bf16> a16, b16;
  const bf16* a_bf16 = as_bf16(a, p.ta ? p.k : p.m, p.ta ? p.m : p.k, lda, a16);
  const bf16* b_bf16 = as_bf16(b, p.tb ? p.n : p.k, p.tb ? p.k : p.n, ldb, b16);
  OneThread one_thread;
  gemm_bf16(p.ta, p.tb, p.m, p.n, p.k, p.alpha, a_bf16, lda, b_bf16, ldb, p.beta, p.c, p.ldc,
            p.bias);
}

// oneDNN's bf16 matmul with B packed by pack_b, shared by the row panels of one product.
void packed_product(const GemmCall<float>& p) {
  if (p.k == 0) return bias_plus_beta_c(p.m, p.n, p.beta, p.c, p.ldc, p.bias);
  OneThread one_thread;
  gemm_bf16(p.ta, p.m, p.n, p.k, p.alpha, p.a.rounded, p.a.ld, *p.b.packed, p.beta, p.c, p.ldc,
            p.bias);
}

// bf16_product on the operands' own types: bf16 where rounded, f32 otherwise.
void rounding_product(const GemmCall<float>& p) {
  if (p.a.rounded != nullptr) {
    if (p.b.rounded != nullptr) return bf16_product(p, p.a.rounded, p.b.rounded);
    return bf16_product(p, p.a.rounded, p.b.values);
  }
  if (p.b.rounded != nullptr) return bf16_product(p, p.a.values, p.b.rounded);
  bf16_product(p, p.a.values, p.b.values);
}

// Every row of C (m, n) a copy of the bias, for the f32 and f64 products to add to (beta 1).
template <class T>
void start_from_bias(const GemmCall<T>& p) {
  for (int64_t r = 0; r < p.m; ++r) std::copy_n(p.bias, p.n, p.c + r * p.ldc);
}

template <class T>
void check_bias(const GemmCall<T>& p) {
  if (p.bias != nullptr && p.beta != T(0)) {
    throw Error(fmt::format("gemm: a bias needs beta 0, got beta {} (m={} n={} k={})", p.beta,
                            p.m, p.n, p.k));
  }
}

}  // namespace

void gemm(const GemmCall<float>& p) {
  check_bias(p);
  if (p.m == 0 || p.n == 0) return;
  if (p.backend == ProductBackend::onednn_f32) {
    if (p.a.values == nullptr || p.b.values == nullptr) {
      throw Error(fmt::format("gemm: onednn_f32 takes f32 operands only (m={} n={} k={})", p.m,
                              p.n, p.k));
    }
    if (p.bias != nullptr) start_from_bias(p);
    OneThread one_thread;
    return sgemm(p.ta, p.tb, p.m, p.n, p.k, p.alpha, p.a.values, p.a.ld, p.b.values, p.b.ld,
                 p.bias != nullptr ? 1.0f : p.beta, p.c, p.ldc);
  }
  if (p.backend == ProductBackend::openblas_f64) {
    throw Error("gemm: f32 operands on the openblas_f64 backend");
  }
  if (p.a.widened && p.b.widened) return widened_product(p);
  if (p.b.packed != nullptr) return packed_product(p);
  rounding_product(p);
}

void gemm(const GemmCall<double>& p) {
  check_bias(p);
  if (p.backend != ProductBackend::openblas_f64) {
    throw Error("gemm: f64 operands run on the openblas_f64 backend only");
  }
  if (p.bias != nullptr) start_from_bias(p);
  auto op = [](bool transposed) { return transposed ? CblasTrans : CblasNoTrans; };
  cblas_dgemm(CblasRowMajor, op(p.ta), op(p.tb), static_cast<int>(p.m), static_cast<int>(p.n),
              static_cast<int>(p.k), p.alpha, p.a.values, static_cast<int>(p.a.ld), p.b.values,
              static_cast<int>(p.b.ld), p.bias != nullptr ? 1.0 : p.beta, p.c,
              static_cast<int>(p.ldc));
}

ProductBackend product_backend(DType dtype) {
  if (dtype == DType::f64) return ProductBackend::openblas_f64;
  if (matmul_precision() == Precision::f32) return ProductBackend::onednn_f32;
  switch (bf16_products()) {
    case Bf16Products::f32_fma: return ProductBackend::bf16_f32_fma;
    case Bf16Products::amx: return ProductBackend::bf16_amx;
    default: return ProductBackend::bf16_dot_pairs;
  }
}

}  // namespace kernels

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

std::string own_loops_isa() {
#if defined(__AVX512F__)
  std::string built = "avx512";
#elif defined(__AVX2__) && defined(__FMA__)
  std::string built = "avx2+fma";
#elif defined(__AVX2__)
  std::string built = "avx2";
#elif defined(TINYGPT_NATIVE_MISCOMPILED)
  std::string built = "x86-64 baseline (GCC miscompiled every -march=native setting CMake probed)";
#else
  std::string built = "x86-64 baseline";
#endif
  if (kernels::use_avx512_bf16()) return built + ", avx512_bf16 kernels";
  if (kernels::use_avx512()) return built + ", avx512 kernels";
  return built;
}

}  // namespace tinygpt
