// Causal linear attention (Katharopoulos et al. 2020) on a packed qkv, read in place as the fused
// softmax kernel reads it (packed_heads.hpp). With phi(x) = elu(x) + 1 > 0, per head:
//   out_i = phi(q_i) S_i / phi(q_i) . z_i,   S_i = sum_{j<=i} phi(k_j) v_j^T (d,d),
//                                            z_i = sum_{j<=i} phi(k_j) (d)
// -- no softmax, no 1/sqrt(d) -- computed with running sums: O(T d^2) time and O(d^2) state per
// head, never a (T,T) matrix.
#include <algorithm>
#include <cmath>

#include "packed_heads.hpp"
#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail::packed;

template <class T>
T phi(T x) {
  return x > T(0) ? x + T(1) : std::exp(x);
}

template <class T>
T phi_slope(T x) {
  return x > T(0) ? T(1) : std::exp(x);
}

// Per-thread scratch: S (d,d), z (d), phi(q) (d), phi(k) (d), and one value per position.
int64_t scratch_size(int64_t t, int64_t d) { return 2 * d * d + 4 * d + t; }

// Adds phi(k) v^T to S and phi(k) to z, leaving phi(k) in fk.
template <class T>
void absorb_key(const T* k, const T* v, int64_t d, T* S, T* z, T* fk) {
  for (int64_t a = 0; a < d; ++a) fk[a] = phi(k[a]);
  for (int64_t a = 0; a < d; ++a) {
    z[a] += fk[a];
#pragma omp simd
    for (int64_t e = 0; e < d; ++e) S[a * d + e] += fk[a] * v[e];
  }
}

// Forward of one (batch, head): the running sums through the rows in order.
template <class T>
void forward_head(const Head<const T>& hd, T* y, int64_t ldy, int64_t t, int64_t d, T* s) {
  T *S = s, *z = S + d * d, *fq = z + d, *fk = fq + d;
  std::fill(S, S + d * d + d, T(0));
  for (int64_t i = 0; i < t; ++i) {
    absorb_key(hd.k + i * hd.ld, hd.v + i * hd.ld, d, S, z, fk);
    const T* q = hd.q + i * hd.ld;
    T den = 0;
    for (int64_t a = 0; a < d; ++a) {
      fq[a] = phi(q[a]);
      den += fq[a] * z[a];
    }
    T* out = y + i * ldy;
    std::fill(out, out + d, T(0));
    for (int64_t a = 0; a < d; ++a) {
      const T w = fq[a] / den;
#pragma omp simd
      for (int64_t e = 0; e < d; ++e) out[e] += w * S[a * d + e];
    }
  }
}

// Backward of one (batch, head), given y and its gradient g. With num_i = phi(q_i) S_i and
// den_i = phi(q_i) . z_i: dnum_i = g_i / den_i, dden_i = -(g_i . y_i) / den_i;
//   d phi(q_i) = S_i dnum_i + dden_i z_i                    (forward pass, S and z rebuilt)
//   d phi(k_j) = R_j v_j + r_j,  dv_j = R_j^T phi(k_j)       (reverse pass)
// with R_j = sum_{i>=j} phi(q_i) dnum_i^T and r_j = sum_{i>=j} dden_i phi(q_i). dq is written;
// dk and dv are added to (the query heads sharing a key/value head add in turn).
template <class T>
void backward_head(const Head<const T>& hd, const Head<T>& dh, const T* y, const T* g,
                   int64_t ldy, int64_t t, int64_t d, T* s) {
  T *S = s, *z = S + d * d, *fq = z + d, *fk = fq + d, *dnum = fk + d, *den = dnum + d;
  std::fill(S, S + d * d + d, T(0));
  for (int64_t i = 0; i < t; ++i) {
    absorb_key(hd.k + i * hd.ld, hd.v + i * hd.ld, d, S, z, fk);
    const T* q = hd.q + i * hd.ld;
    const T *gi = g + i * ldy, *yi = y + i * ldy;
    den[i] = 0;
    T gy = 0;
    for (int64_t a = 0; a < d; ++a) {
      den[i] += phi(q[a]) * z[a];
      gy += gi[a] * yi[a];
    }
    const T dden = -gy / den[i];
    T* dq = dh.q + i * dh.ld;
    for (int64_t a = 0; a < d; ++a) {
      T sg = 0;  // (S_i g_i)[a]; S_i dnum_i = S_i g_i / den_i
#pragma omp simd reduction(+ : sg)
      for (int64_t e = 0; e < d; ++e) sg += S[a * d + e] * gi[e];
      dq[a] = (sg / den[i] + dden * z[a]) * phi_slope(q[a]);
    }
  }
  T *R = S, *r = z;  // the forward sums are done with: reuse their room
  std::fill(R, R + d * d + d, T(0));
  for (int64_t j = t - 1; j >= 0; --j) {
    const T* q = hd.q + j * hd.ld;
    const T *gj = g + j * ldy, *yj = y + j * ldy;
    T gy = 0;
    for (int64_t a = 0; a < d; ++a) {
      fq[a] = phi(q[a]);
      dnum[a] = gj[a] / den[j];
      gy += gj[a] * yj[a];
    }
    const T dden = -gy / den[j];
    for (int64_t a = 0; a < d; ++a) {
      r[a] += dden * fq[a];
#pragma omp simd
      for (int64_t e = 0; e < d; ++e) R[a * d + e] += fq[a] * dnum[e];
    }
    const T *k = hd.k + j * hd.ld, *v = hd.v + j * hd.ld;
    T *dk = dh.k + j * dh.ld, *dv = dh.v + j * dh.ld;
    for (int64_t a = 0; a < d; ++a) {
      fk[a] = phi(k[a]);
      T acc = r[a];
#pragma omp simd reduction(+ : acc)
      for (int64_t e = 0; e < d; ++e) acc += R[a * d + e] * v[e];
      dk[a] += acc * phi_slope(k[a]);
    }
    for (int64_t a = 0; a < d; ++a) {
#pragma omp simd
      for (int64_t e = 0; e < d; ++e) dv[e] += R[a * d + e] * fk[a];
    }
  }
}

}  // namespace

Tensor causal_linear_attention(const Tensor& qkv, int64_t n_heads, int64_t n_kv_heads) {
  const Layout layout = packed_layout(qkv, n_heads, n_kv_heads, "causal_linear_attention");
  const int64_t b = qkv.size(0), t = layout.t, c = layout.c, d = layout.d;
  Tensor y = Tensor::empty({b, t, c}, qkv.dtype());  // (B,T,C)
  const int64_t per_thread = scratch_size(t, d);
  if (y.numel() > 0) {
    Tensor scratch = Tensor::empty({omp_get_max_threads(), per_thread}, qkv.dtype());
    dispatch_float(qkv.dtype(), "causal_linear_attention", [&](auto tag) {
      using T = decltype(tag);
      const T* pqkv = qkv.data<T>();
      T* py = y.data<T>();
      for_each_head<T>(b, n_heads, scratch, per_thread, [&](int64_t bi, int64_t hi, T* s) {
        forward_head(head_of(pqkv, bi, hi, layout), py + y_offset(bi, hi, layout), c, t, d, s);
      });
    });
  }
  return record("causal_linear_attention", y, {qkv},
                [qkv = qkv.detach(), y = y.detach(), layout, per_thread](const Tensor& g) {
    const int64_t b = qkv.size(0), t = layout.t, c = layout.c, d = layout.d;
    Tensor dqkv = Tensor::empty(qkv.shape(), qkv.dtype());
    if (dqkv.numel() == 0) return std::vector<Tensor>{dqkv};
    Tensor scratch = Tensor::empty({omp_get_max_threads(), per_thread}, qkv.dtype());
    dispatch_float(qkv.dtype(), "causal_linear_attention", [&](auto tag) {
      using T = decltype(tag);
      const T* pqkv = qkv.data<T>();
      const T* py = y.data<T>();
      const T* pg = g.data<T>();
      T* pd = dqkv.data<T>();
      for_each_kv_group(b, layout, pd, scratch, per_thread, [&](int64_t bi, int64_t hi, T* s) {
        const int64_t yo = y_offset(bi, hi, layout);
        backward_head(head_of(pqkv, bi, hi, layout), head_of(pd, bi, hi, layout), py + yo, pg + yo,
                      c, t, d, s);
      });
    });
    return std::vector<Tensor>{dqkv};
  });
}

}  // namespace tinygpt
