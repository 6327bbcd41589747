#include "gemm_bf16.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"

namespace tinygpt::detail {
namespace {

using dnnl::memory;

}  // namespace

// Rounded to nearest even by the instruction itself (NaN stays NaN).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void to_bf16(
    const float* src, int64_t rows, int64_t cols, int64_t ld, bf16* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = src + r * ld;
    uint16_t* out = dst + r * cols;
    int64_t j = 0;
    for (; j + 16 <= cols; j += 16) {
      const __m256bh v = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + j));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), reinterpret_cast<const __m256i&>(v));
    }
    if (j < cols) {
      const __mmask16 mask = static_cast<__mmask16>((1u << (cols - j)) - 1);
      const __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, in + j));
      _mm256_mask_storeu_epi16(out + j, mask, reinterpret_cast<const __m256i&>(v));
    }
  }
}

namespace {

struct Key {
  bool ta, tb, bias;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  bool operator==(const Key& o) const {
    return std::tie(ta, tb, bias, m, n, k, lda, ldb, ldc, alpha, beta) ==
           std::tie(o.ta, o.tb, o.bias, o.m, o.n, o.k, o.lda, o.ldb, o.ldc, o.alpha, o.beta);
  }
};

struct KeyHash {
  size_t operator()(const Key& key) const {
    size_t h = static_cast<size_t>(key.ta) * 4 + static_cast<size_t>(key.tb) * 2 +
               static_cast<size_t>(key.bias);
    for (int64_t v : {key.m, key.n, key.k, key.lda, key.ldb, key.ldc}) h = h * 1000003u ^ static_cast<size_t>(v);
    uint32_t bits[2];
    std::memcpy(&bits[0], &key.alpha, 4);
    std::memcpy(&bits[1], &key.beta, 4);
    return h * 1000003u ^ (static_cast<size_t>(bits[0]) << 32 | bits[1]);
  }
};

// A primitive and the memory objects it runs on, re-pointed at each call's buffers; `args` holds
// handles to the same objects, made once rather than a map per call.
struct Product {
  dnnl::matmul primitive;
  memory a, b, c, bias;
  std::unordered_map<int, memory> args;
};

struct ThreadState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::unordered_map<Key, Product, KeyHash> products;
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

Product make_product(ThreadState& st, const Key& key) {
  // op(A) is (m, k): A stored row-major, or its transpose stored as (k, m).
  const memory::desc a_md({key.m, key.k}, memory::data_type::bf16,
                          key.ta ? memory::dims{1, key.lda} : memory::dims{key.lda, 1});
  const memory::desc b_md({key.k, key.n}, memory::data_type::bf16,
                          key.tb ? memory::dims{1, key.ldb} : memory::dims{key.ldb, 1});
  const memory::desc c_md({key.m, key.n}, memory::data_type::f32, memory::dims{key.ldc, 1});
  dnnl::primitive_attr attr;
  if (key.alpha != 1.0f) attr.set_output_scales(0, {key.alpha});
  if (key.beta != 0.0f) {
    dnnl::post_ops ops;
    ops.append_sum(key.beta);
    attr.set_post_ops(ops);
  }
  // An empty bias descriptor (no dims) is oneDNN's "no bias".
  const memory::desc bias_md = key.bias ? memory::desc({1, key.n}, memory::data_type::f32,
                                                       memory::format_tag::ab)
                                        : memory::desc();
  Product p;
  p.primitive = dnnl::matmul(dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(a_md, b_md, bias_md, c_md), attr, st.engine));
  p.a = memory(a_md, st.engine, nullptr);
  p.b = memory(b_md, st.engine, nullptr);
  p.c = memory(c_md, st.engine, nullptr);
  p.args = {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}};
  if (key.bias) {
    p.bias = memory(bias_md, st.engine, nullptr);
    p.args.emplace(DNNL_ARG_BIAS, p.bias);
  }
  return p;
}

}  // namespace

void gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a,
               int64_t lda, const bf16* b, int64_t ldb, float beta, float* c, int64_t ldc,
               const float* bias) {
  ThreadState& st = thread_state();
  const Key key{ta, tb, bias != nullptr, m, n, k, lda, ldb, ldc, alpha, beta};
  try {
    auto it = st.products.find(key);
    if (it == st.products.end()) it = st.products.emplace(key, make_product(st, key)).first;
    Product& p = it->second;
    p.a.set_data_handle(const_cast<bf16*>(a));
    p.b.set_data_handle(const_cast<bf16*>(b));
    p.c.set_data_handle(c);
    if (bias != nullptr) p.bias.set_data_handle(const_cast<float*>(bias));
    p.primitive.execute(st.stream, p.args);
  } catch (const dnnl::error& e) {
    throw Error(fmt::format("gemm (bf16): oneDNN matmul failed for m={} n={} k={}: {}", m, n, k,
                            e.what()));
  }
}

}  // namespace tinygpt::detail
