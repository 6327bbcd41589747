// Causal linear attention (Katharopoulos et al. 2020) on a packed qkv, read in place as the fused
// softmax kernel reads it (packed_heads.hpp). With phi(x) = elu(x) + 1 > 0, per head:
//   out_i = phi(q_i) S_i / phi(q_i) . z_i,   S_i = sum_{j<=i} phi(k_j) v_j^T (d,d),
//                                            z_i = sum_{j<=i} phi(k_j) (d)
// -- no softmax, no 1/sqrt(d) -- computed with running sums: O(T d^2 + T C d) time (chunks of
// C = 64 positions) and O(d^2) state per head, never a (T,T) matrix. The same kernel runs
// causal_feature_attention, whose phi(q) and phi(k) come given (M wide, Performer's features):
// there the state is (M,d) and phi is the identity.
#include <algorithm>
#include <cmath>

#include "kernels/product.hpp"
#include "packed_heads.hpp"
#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/simd_math.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using kernels::gemm;
using kernels::ProductBackend;
using namespace detail::packed;

// Positions are taken kChunk at a time: inside a chunk the weights phi(q_i).phi(k_j), j <= i,
// form a (kChunk, kChunk) block and everything is a BLAS product; the chunks before it enter
// through the running sums S and z (Yang et al.'s chunkwise form of the recurrence).
constexpr int64_t kChunk = 64;

// The feature maps: elu + 1 of q and k, or q and k that are features already.
struct EluPlusOne {
  template <class T>
  static T phi(T x) { return simd::elu_plus_one(x); }
  template <class T>
  static T slope(T phi_x) { return simd::elu_plus_one_slope(phi_x); }
};
struct GivenFeatures {
  template <class T>
  static T phi(T x) { return x; }
  template <class T>
  static T slope(T) { return T(1); }
};

// Per-thread scratch, in elements, for features m and values d wide.
int64_t scratch_size(int64_t t, int64_t m, int64_t d) {
  return 2 * kChunk * kChunk + 3 * kChunk * m + kChunk * d + m * d + m + t + kChunk;
}

// phi of `rows` rows of width m, ld apart, into a contiguous (rows, m) block.
template <class Phi, class T>
void phi_rows(const T* x, int64_t ld, int64_t rows, int64_t m, T* out) {
  for (int64_t r = 0; r < rows; ++r) {
#pragma omp simd
    for (int64_t a = 0; a < m; ++a) out[r * m + a] = Phi::phi(x[r * ld + a]);
  }
}

// Zeroes the entries above the diagonal of an (n, n) block: key j > query i.
template <class T>
void keep_causal(T* a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::fill(a + i * n + i + 1, a + (i + 1) * n, T(0));
}

// The chunk's weights A (n,n) = phi(Q) phi(K)^T with j <= i, and each row's normaliser
// den_i = sum_j A_ij + phi(q_i).z; features m wide.
template <class T>
void chunk_weights(ProductBackend backend, const T* fq, const T* fk, const T* z, int64_t n,
                   int64_t m, T* a, T* den) {
  gemm(backend, false, true, n, n, m, T(1), fq, m, fk, m, T(0), a, n);
  keep_causal(a, n);
  for (int64_t i = 0; i < n; ++i) {
    T sum = 0;
    for (int64_t j = 0; j <= i; ++j) sum += a[i * n + j];
    for (int64_t e = 0; e < m; ++e) sum += fq[i * m + e] * z[e];
    den[i] = sum;
  }
}

// Adds a chunk's keys to the running sums: S (m,d) += phi(K)^T V, z (m) += sum of phi(K)'s rows.
template <class T>
void absorb_chunk(ProductBackend backend, const T* fk, const T* v, int64_t ldv, int64_t n,
                  int64_t m, int64_t d, T* S, T* z) {
  gemm(backend, true, false, m, d, n, T(1), fk, m, v, ldv, T(1), S, d);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t e = 0; e < m; ++e) z[e] += fk[j * m + e];
  }
}

// Forward of one (batch, head): out = (A V + phi(Q) S) / den, chunk by chunk.
template <class Phi, class T>
void forward_head(ProductBackend backend, const Head<const T>& hd, T* y, int64_t ldy, int64_t t,
                  int64_t m, int64_t d, T* s) {
  T *a = s, *fq = a + kChunk * kChunk, *fk = fq + kChunk * m, *S = fk + kChunk * m, *z = S + m * d,
    *den = z + m;
  std::fill(S, S + m * d + m, T(0));
  for (int64_t c0 = 0; c0 < t; c0 += kChunk) {
    const int64_t n = std::min(kChunk, t - c0);
    const T* v = hd.v + c0 * hd.ld;
    T* out = y + c0 * ldy;
    phi_rows<Phi>(hd.q + c0 * hd.ld, hd.ld, n, m, fq);
    phi_rows<Phi>(hd.k + c0 * hd.ld, hd.ld, n, m, fk);
    chunk_weights(backend, fq, fk, z, n, m, a, den);
    gemm(backend, false, false, n, d, n, T(1), a, n, v, hd.ld, T(0), out, ldy);
    gemm(backend, false, false, n, d, m, T(1), fq, m, S, d, T(1), out, ldy);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t e = 0; e < d; ++e) out[i * ldy + e] /= den[i];
    }
    absorb_chunk(backend, fk, v, hd.ld, n, m, d, S, z);
  }
}

// dN = g / den and dden = -(g . y) / den for a chunk's rows.
template <class T>
void output_grads(const T* g, const T* y, int64_t ldy, const T* den, int64_t n, int64_t d, T* dn,
                  T* dden) {
  for (int64_t i = 0; i < n; ++i) {
    T gy = 0;
    for (int64_t e = 0; e < d; ++e) {
      dn[i * d + e] = g[i * ldy + e] / den[i];
      gy += g[i * ldy + e] * y[i * ldy + e];
    }
    dden[i] = -gy / den[i];
  }
}

// dx += dphi * phi'(x) for a chunk's rows, given phi(x) (dphi and phi(x) contiguous, dx ld apart).
template <class Phi, class T>
void add_through_phi(const T* dphi, const T* fx, int64_t n, int64_t m, T* dx, int64_t ld) {
  for (int64_t r = 0; r < n; ++r) {
#pragma omp simd
    for (int64_t a = 0; a < m; ++a) dx[r * ld + a] += dphi[r * m + a] * Phi::slope(fx[r * m + a]);
  }
}

// The forward pass of the backward: for each chunk in order, with S and z rebuilt, dq and the
// chunk's own contributions to dk and dv. With N = A V + phi(Q) S and out = N / den:
//   dA = dN V^T + dden 1^T (j <= i),  d phi(Q) = dA phi(K) + dN S^T + dden z^T,
//   d phi(K) += dA^T phi(Q),  dV += A^T dN.
// Leaves each row's den in den (t entries) for the reverse pass.
template <class Phi, class T>
void backward_within_chunks(ProductBackend backend, const Head<const T>& hd, const Head<T>& dh,
                            const T* y, const T* g, int64_t ldy, int64_t t, int64_t m, int64_t d,
                            T* s) {
  T *a = s, *da = a + kChunk * kChunk, *fq = da + kChunk * kChunk, *fk = fq + kChunk * m,
    *tmp = fk + kChunk * m, *dn = tmp + kChunk * m, *S = dn + kChunk * d, *z = S + m * d,
    *den = z + m, *dden = den + t;
  std::fill(S, S + m * d + m, T(0));
  for (int64_t c0 = 0; c0 < t; c0 += kChunk) {
    const int64_t n = std::min(kChunk, t - c0);
    const T *q = hd.q + c0 * hd.ld, *k = hd.k + c0 * hd.ld, *v = hd.v + c0 * hd.ld;
    phi_rows<Phi>(q, hd.ld, n, m, fq);
    phi_rows<Phi>(k, hd.ld, n, m, fk);
    chunk_weights(backend, fq, fk, z, n, m, a, den + c0);
    output_grads(g + c0 * ldy, y + c0 * ldy, ldy, den + c0, n, d, dn, dden);
    gemm(backend, false, true, n, n, d, T(1), dn, d, v, hd.ld, T(0), da, n);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j <= i; ++j) da[i * n + j] += dden[i];
    }
    keep_causal(da, n);
    // d phi(Q) = dA phi(K) + dN S^T + dden z^T, then through phi into dq.
    gemm(backend, false, false, n, m, n, T(1), da, n, fk, m, T(0), tmp, m);
    gemm(backend, false, true, n, m, d, T(1), dn, d, S, d, T(1), tmp, m);
    T* dq = dh.q + c0 * dh.ld;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t e = 0; e < m; ++e) {
        dq[i * dh.ld + e] = (tmp[i * m + e] + dden[i] * z[e]) * Phi::slope(fq[i * m + e]);
      }
    }
    // d phi(K) within the chunk
    gemm(backend, true, false, n, m, n, T(1), da, n, fq, m, T(0), tmp, m);
    add_through_phi<Phi>(tmp, fk, n, m, dh.k + c0 * dh.ld, dh.ld);
    gemm(backend, true, false, n, d, n, T(1), a, n, dn, d, T(1), dh.v + c0 * dh.ld, dh.ld);
    absorb_chunk(backend, fk, v, hd.ld, n, m, d, S, z);
  }
}

// Backward of one (batch, head), given y and its gradient g: backward_within_chunks, then through
// the sums every later chunk reads,
//   d phi(K) += V R^T + 1 r^T,  dV += phi(K) R,  R = sum_later phi(Q)^T dN,  r = sum_later phi(Q)^T dden
// (reverse pass). dq is written; dk and dv are added to.
template <class Phi, class T>
void backward_head(ProductBackend backend, const Head<const T>& hd, const Head<T>& dh, const T* y,
                   const T* g, int64_t ldy, int64_t t, int64_t m, int64_t d, T* s) {
  backward_within_chunks<Phi>(backend, hd, dh, y, g, ldy, t, m, d, s);
  T *fq = s + 2 * kChunk * kChunk, *fk = fq + kChunk * m, *tmp = fk + kChunk * m,
    *dn = tmp + kChunk * m, *R = dn + kChunk * d, *r = R + m * d, *den = r + m, *dden = den + t;
  std::fill(R, R + m * d + m, T(0));  // the forward sums are done with: reuse their room
  const int64_t last = (t - 1) / kChunk * kChunk;
  for (int64_t c0 = last; c0 >= 0; c0 -= kChunk) {
    const int64_t n = std::min(kChunk, t - c0);
    const T *q = hd.q + c0 * hd.ld, *k = hd.k + c0 * hd.ld, *v = hd.v + c0 * hd.ld;
    phi_rows<Phi>(q, hd.ld, n, m, fq);
    phi_rows<Phi>(k, hd.ld, n, m, fk);
    output_grads(g + c0 * ldy, y + c0 * ldy, ldy, den + c0, n, d, dn, dden);
    // d phi(K) += V R^T + r, dV += phi(K) R: what the later chunks read of this one.
    gemm(backend, false, true, n, m, d, T(1), v, hd.ld, R, d, T(0), tmp, m);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t e = 0; e < m; ++e) tmp[j * m + e] += r[e];
    }
    add_through_phi<Phi>(tmp, fk, n, m, dh.k + c0 * dh.ld, dh.ld);
    gemm(backend, false, false, n, d, m, T(1), fk, m, R, d, T(1), dh.v + c0 * dh.ld, dh.ld);
    gemm(backend, true, false, m, d, n, T(1), fq, m, dn, d, T(1), R, d);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t e = 0; e < m; ++e) r[e] += dden[i] * fq[i * m + e];
    }
  }
}

// The op on a packed (B,T,H m + Hkv m + Hkv d) of phi's inputs (or phi itself) and values,
// `layout` giving where the heads lie; `name` is the op's on the tape.
template <class Phi>
Tensor linear_attention_of(const Tensor& qkv, const Layout& layout, int64_t n_heads,
                           const char* name) {
  const int64_t b = qkv.size(0), t = layout.t, m = layout.d, d = layout.value_width();
  Tensor y = Tensor::empty({b, t, n_heads * d}, qkv.dtype());  // (B,T,H d)
  const int64_t per_thread = scratch_size(t, m, d);
  const ProductBackend backend = kernels::product_backend(qkv.dtype());
  if (y.numel() > 0) {
    Tensor scratch = Tensor::empty({omp_get_max_threads(), per_thread}, qkv.dtype());
    dispatch_float(qkv.dtype(), name, [&](auto tag) {
      using T = decltype(tag);
      const T* pqkv = qkv.data<T>();
      T* py = y.data<T>();
      for_each_head<T>(b, n_heads, scratch, per_thread, [&](int64_t bi, int64_t hi, T* s) {
        forward_head<Phi>(backend, head_of(pqkv, bi, hi, layout), py + y_offset(bi, hi, layout),
                          n_heads * d, t, m, d, s);
      });
    });
  }
  return record(name, y, {qkv},
                [qkv = qkv.detach(), y = y.detach(), layout, n_heads, per_thread, backend,
                 name](const Tensor& g) {
    const int64_t b = qkv.size(0), t = layout.t, m = layout.d, d = layout.value_width();
    Tensor dqkv = Tensor::empty(qkv.shape(), qkv.dtype());
    if (dqkv.numel() == 0) return std::vector<Tensor>{dqkv};
    Tensor scratch = Tensor::empty({omp_get_max_threads(), per_thread}, qkv.dtype());
    dispatch_float(qkv.dtype(), name, [&](auto tag) {
      using T = decltype(tag);
      const T* pqkv = qkv.data<T>();
      const T* py = y.data<T>();
      const T* pg = g.data<T>();
      T* pd = dqkv.data<T>();
      for_each_kv_group(b, layout, pd, scratch, per_thread, [&](int64_t bi, int64_t hi, T* s) {
        const int64_t yo = y_offset(bi, hi, layout);
        backward_head<Phi>(backend, head_of(pqkv, bi, hi, layout), head_of(pd, bi, hi, layout),
                           py + yo, pg + yo, n_heads * d, t, m, d, s);
      });
    });
    return std::vector<Tensor>{dqkv};
  });
}

}  // namespace

Tensor causal_linear_attention(const Tensor& qkv, int64_t n_heads, int64_t n_kv_heads) {
  const Layout layout = packed_layout(qkv, n_heads, n_kv_heads, "causal_linear_attention");
  return linear_attention_of<EluPlusOne>(qkv, layout, n_heads, "causal_linear_attention");
}

Tensor causal_feature_attention(const Tensor& packed, int64_t n_heads, int64_t n_kv_heads,
                                int64_t features) {
  if (n_kv_heads == 0) n_kv_heads = n_heads;
  const bool heads_ok = n_heads > 0 && n_kv_heads > 0 && n_heads % n_kv_heads == 0 && features > 0;
  const int64_t w = packed.ndim() == 3 ? packed.size(2) : 0;
  const int64_t value_columns = w - (n_heads + n_kv_heads) * features;
  if (packed.ndim() != 3 || !heads_ok || value_columns <= 0 || value_columns % n_kv_heads != 0) {
    throw ShapeError(Operation("causal_feature_attention"), fmt::format(
        "expects (B,T,H M + Hkv M + Hkv d) for heads {} a multiple of kv_heads {} and {} features, "
        "got {}", n_heads, n_kv_heads, features, packed.shape().str()));
  }
  Layout layout{packed.size(1), n_heads * features, n_kv_heads * features, features,
                n_heads / n_kv_heads};
  layout.dv = value_columns / n_kv_heads;
  return linear_attention_of<GivenFeatures>(packed, layout, n_heads, "causal_feature_attention");
}

}  // namespace tinygpt
