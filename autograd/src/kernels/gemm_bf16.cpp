#include "gemm_bf16.hpp"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "bf16_words.hpp"
#include "tinygpt/autograd/error.hpp"
#include "transpose_16x16.hpp"

namespace tinygpt::kernels {
namespace {

using dnnl::memory;

// rows x cols of bf16, or of f32 rounded to bf16 (leading dimension ld) -> packed (rows, cols)
// f32 holding those bf16 values exactly.
template <class Src>
TINYGPT_BF16_WORDS void as_f32(const Src* src, int64_t rows, int64_t cols, int64_t ld,
                               float* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; j += 16) {
      const int64_t valid = std::min<int64_t>(cols - j, 16);
      const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
      _mm512_mask_storeu_epi32(dst + r * cols + j, mask, f32_words(src + r * ld + j, mask));
    }
  }
}

}  // namespace

// Rounded to nearest even by the instruction itself (NaN stays NaN).
TINYGPT_BF16_WORDS void to_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld,
                                bf16* dst) {
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

void widen_bf16(const bf16* src, int64_t rows, int64_t cols, int64_t ld, float* dst) {
  as_f32(src, rows, cols, ld, dst);
}
void widen_bf16(const float* src, int64_t rows, int64_t cols, int64_t ld, float* dst) {
  as_f32(src, rows, cols, ld, dst);
}

void bias_plus_beta_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc, const float* bias) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float kept = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
      c[i * ldc + j] = bias != nullptr ? bias[j] + kept : kept;
    }
  }
}

namespace {

// The layout pack_b writes: B in blocks of 64 columns, each block (ceil(k / 32) * 16) rows of
// words holding pairs of B's rows (the even row in the low half), zeros past k and n; oneDNN's
// BA16a64b2a, which its bf16 matmul asks for on AVX-512 (packed_b_bytes checks).
constexpr int64_t kPairsCols = 64;
using Word = uint32_t __attribute__((may_alias));

int64_t pair_rows_of(int64_t k) { return (k + 31) / 32 * 16; }

memory::desc pairs_layout(int64_t k, int64_t n) {
  return memory::desc({k, n}, memory::data_type::bf16, memory::format_tag::BA16a64b2a);
}

// A column block of B (k, cols <= 64), rows of ldb -> its rows of pair words, 64 words each.
TINYGPT_BF16_WORDS void pack_columns(const float* b, int64_t ldb, int64_t k, int64_t cols,
                                     Word* out) {
  for (int64_t e = 0; e < pair_rows_of(k); ++e) {
    for (int64_t j = 0; j < kPairsCols; j += 16) {
      const int64_t valid = std::clamp<int64_t>(cols - j, 0, 16);
      const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
      const float* low = b + 2 * e * ldb + j;
      const __m512i word = 2 * e < k ? paired_bf16(low, 2 * e + 1 < k ? low + ldb : nullptr, mask)
                                     : _mm512_setzero_si512();
      _mm512_storeu_si512(out + e * kPairsCols + j, word);
    }
  }
}

// The same from B's transpose, stored (cols, k) with rows of ldb: a row's neighbours are a word
// already, and 16 x 16 blocks of words are transposed into place.
TINYGPT_BF16_WORDS void pack_columns_transposed(const float* b, int64_t ldb, int64_t k,
                                                int64_t cols, Word* out) {
  alignas(64) Word block[16 * 16];
  for (int64_t e = 0; e < pair_rows_of(k); e += 16) {
    for (int64_t j = 0; j < kPairsCols; j += 16) {
      for (int64_t i = 0; i < 16; ++i) {
        const __m512i words = j + i < cols ? row_words(b + (j + i) * ldb + 2 * e, k - 2 * e)
                                           : _mm512_setzero_si512();
        _mm512_store_si512(block + 16 * i, words);
      }
      transpose_16x16(reinterpret_cast<const float*>(block), 16,
                      reinterpret_cast<float*>(out + e * kPairsCols + j), kPairsCols);
    }
  }
}

struct Key {
  bool ta, tb, bias, packed;
  int64_t m, n, k, lda, ldb, ldc;
  float alpha, beta;
  bool operator==(const Key& o) const {
    return std::tie(ta, tb, bias, packed, m, n, k, lda, ldb, ldc, alpha, beta) ==
           std::tie(o.ta, o.tb, o.bias, o.packed, o.m, o.n, o.k, o.lda, o.ldb, o.ldc, o.alpha,
                    o.beta);
  }
};

struct KeyHash {
  size_t operator()(const Key& key) const {
    size_t h = static_cast<size_t>(key.ta) * 4 + static_cast<size_t>(key.tb) * 2 +
               static_cast<size_t>(key.bias) + static_cast<size_t>(key.packed) * 8;
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
  // Whether the product of a packed key, left to choose B's layout, chooses pack_b's.
  std::unordered_map<Key, bool, KeyHash> takes_pairs;
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

// The matmul of `key` reading B in the layout b_md.
dnnl::matmul::primitive_desc product_desc(ThreadState& st, const Key& key,
                                          const memory::desc& b_md) {
  // op(A) is (m, k): A stored row-major, or its transpose stored as (k, m).
  const memory::desc a_md({key.m, key.k}, memory::data_type::bf16,
                          key.ta ? memory::dims{1, key.lda} : memory::dims{key.lda, 1});
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
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, bias_md, c_md), attr,
                                      st.engine);
}

Product make_product(ThreadState& st, const Key& key) {
  const memory::desc b_md =
      key.packed ? pairs_layout(key.k, key.n)
                 : memory::desc({key.k, key.n}, memory::data_type::bf16,
                                key.tb ? memory::dims{1, key.ldb} : memory::dims{key.ldb, 1});
  const dnnl::matmul::primitive_desc pd = product_desc(st, key, b_md);
  Product p;
  p.primitive = dnnl::matmul(pd);
  p.a = memory(pd.src_desc(), st.engine, nullptr);
  p.b = memory(pd.weights_desc(), st.engine, nullptr);
  p.c = memory(pd.dst_desc(), st.engine, nullptr);
  p.args = {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}};
  if (key.bias) {
    p.bias = memory(pd.bias_desc(), st.engine, nullptr);
    p.args.emplace(DNNL_ARG_BIAS, p.bias);
  }
  return p;
}

void run_product(const Key& key, const bf16* a, const void* b, float* c, const float* bias) {
  ThreadState& st = thread_state();
  try {
    auto it = st.products.find(key);
    if (it == st.products.end()) it = st.products.emplace(key, make_product(st, key)).first;
    Product& p = it->second;
    p.a.set_data_handle(const_cast<bf16*>(a));
    p.b.set_data_handle(const_cast<void*>(b));
    p.c.set_data_handle(c);
    if (bias != nullptr) p.bias.set_data_handle(const_cast<float*>(bias));
    p.primitive.execute(st.stream, p.args);
  } catch (const dnnl::error& e) {
    throw Error(fmt::format("gemm (bf16): oneDNN matmul failed for m={} n={} k={}: {}", key.m,
                            key.n, key.k, e.what()));
  }
}

}  // namespace

void gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a,
               int64_t lda, const bf16* b, int64_t ldb, float beta, float* c, int64_t ldc,
               const float* bias) {
  run_product({ta, tb, bias != nullptr, false, m, n, k, lda, ldb, ldc, alpha, beta}, a, b, c,
              bias);
}

void gemm_bf16(bool ta, int64_t m, int64_t n, int64_t k, float alpha, const bf16* a, int64_t lda,
               const PackedB& b, float beta, float* c, int64_t ldc, const float* bias) {
  run_product({ta, false, bias != nullptr, true, m, n, k, lda, 0, ldc, alpha, beta}, a, b.data, c,
              bias);
}

int64_t packed_b_bytes(int64_t k, int64_t n) {
  return static_cast<int64_t>(pairs_layout(k, n).get_size());
}

bool packs_b(bool ta, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldc, bool bias) {
  ThreadState& st = thread_state();
  const Key key{ta, false, bias, true, m, n, k, lda, 0, ldc, 1.0f, 0.0f};
  auto it = st.takes_pairs.find(key);
  if (it == st.takes_pairs.end()) {
    try {
      const memory::desc any({k, n}, memory::data_type::bf16, memory::format_tag::any);
      const bool pairs = product_desc(st, key, any).weights_desc() == pairs_layout(k, n);
      it = st.takes_pairs.emplace(key, pairs).first;
    } catch (const dnnl::error& e) {
      throw Error(fmt::format("gemm (bf16): oneDNN has no matmul for m={} n={} k={}: {}", m, n, k,
                              e.what()));
    }
  }
  return it->second;
}

void pack_b(bool tb, int64_t k, int64_t n, const float* b, int64_t ldb, void* out) {
  Word* words = static_cast<Word*>(out);
  const int64_t blocks = (n + kPairsCols - 1) / kPairsCols;
#pragma omp parallel for schedule(static) if (k * n > (int64_t{1} << 16))
  for (int64_t block = 0; block < blocks; ++block) {
    Word* to = words + block * pair_rows_of(k) * kPairsCols;
    const int64_t j0 = block * kPairsCols;
    if (tb) {
      pack_columns_transposed(b + j0 * ldb, ldb, k, std::min(kPairsCols, n - j0), to);
    } else {
      pack_columns(b + j0, ldb, k, std::min(kPairsCols, n - j0), to);
    }
  }
}

}  // namespace tinygpt::kernels
