#include "tinygpt/nn/fused_attention.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::nn {
namespace {

// Where one (batch, head) pair's vectors live inside qkv (B,T,3C) and y (B,T,C).
struct HeadView {
  int64_t t, c, d;  // sequence length, model width, head width
  int64_t qkv_base, y_base;
  int64_t q(int64_t i) const { return qkv_base + i * 3 * c; }
  int64_t k(int64_t i) const { return q(i) + c; }
  int64_t v(int64_t i) const { return q(i) + 2 * c; }
  int64_t y(int64_t i) const { return y_base + i * c; }
};

HeadView view_of(int64_t b, int64_t h, int64_t t, int64_t c, int64_t d) {
  return {t, c, d, b * t * 3 * c + h * d, b * t * c + h * d};
}

template <class T>
T dot(const T* a, const T* b, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

template <class T>
void axpy(T alpha, const T* x, T* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// Fills p[0..i] with the scaled scores of query i against keys 0..i, turns them into softmax
// weights and returns their log-sum-exp.
template <class T>
T softmax_row(const T* qkv, const HeadView& hv, int64_t i, T scale, T* p) {
  const T* q = qkv + hv.q(i);
  T top = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j <= i; ++j) {
    p[j] = dot(q, qkv + hv.k(j), hv.d) * scale;
    top = std::max(top, p[j]);
  }
  T sum = 0;
  for (int64_t j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - top));
  const T inv = T(1) / sum;
  for (int64_t j = 0; j <= i; ++j) p[j] *= inv;
  return top + std::log(sum);
}

template <class T>
void forward(const T* qkv, T* y, T* lse, int64_t b, int64_t t, int64_t c, int64_t h) {
  const int64_t d = c / h;
  const T scale = T(1) / std::sqrt(static_cast<T>(d));
#pragma omp parallel
  {
    std::vector<T> p(static_cast<size_t>(t));  // one query row's weights
#pragma omp for collapse(2) schedule(static)
    for (int64_t bi = 0; bi < b; ++bi) {
      for (int64_t hi = 0; hi < h; ++hi) {
        const HeadView hv = view_of(bi, hi, t, c, d);
        for (int64_t i = 0; i < t; ++i) {
          lse[(bi * h + hi) * t + i] = softmax_row(qkv, hv, i, scale, p.data());
          T* out = y + hv.y(i);
          std::fill_n(out, d, T(0));
          for (int64_t j = 0; j <= i; ++j) axpy(p[j], qkv + hv.v(j), out, d);
        }
      }
    }
  }
}

// dS = P * (dP - rowsum(dO * O)), with P recomputed from the saved log-sum-exp.
template <class T>
void backward(const T* qkv, const T* y, const T* lse, const T* dy, T* dqkv, int64_t b, int64_t t,
              int64_t c, int64_t h) {
  const int64_t d = c / h;
  const T scale = T(1) / std::sqrt(static_cast<T>(d));
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t hi = 0; hi < h; ++hi) {
      const HeadView hv = view_of(bi, hi, t, c, d);
      for (int64_t i = 0; i < t; ++i) {
        std::fill_n(dqkv + hv.q(i), d, T(0));
        std::fill_n(dqkv + hv.k(i), d, T(0));
        std::fill_n(dqkv + hv.v(i), d, T(0));
      }
      for (int64_t i = 0; i < t; ++i) {
        const T* q = qkv + hv.q(i);
        const T* g = dy + hv.y(i);
        const T row_lse = lse[(bi * h + hi) * t + i];
        const T delta = dot(g, y + hv.y(i), d);
        T* dq = dqkv + hv.q(i);
        for (int64_t j = 0; j <= i; ++j) {
          // A weight is at most 1. The recomputed score can round differently from the
          // forward's (another vectorisation of dot), which at scores of 1e15 is an error of
          // ~1e8: exp would give inf, and inf * 0 NaN gradients, where the clamp gives 1.
          const T p = std::exp(std::min(T(0), dot(q, qkv + hv.k(j), d) * scale - row_lse));
          axpy(p, g, dqkv + hv.v(j), d);
          const T ds = p * (dot(g, qkv + hv.v(j), d) - delta) * scale;
          axpy(ds, qkv + hv.k(j), dq, d);
          axpy(ds, q, dqkv + hv.k(j), d);
        }
      }
    }
  }
}

}  // namespace

Tensor causal_self_attention(const Tensor& qkv, int64_t n_heads) {
  if (qkv.ndim() != 3 || qkv.size(2) % 3 != 0 || n_heads <= 0 ||
      (qkv.size(2) / 3) % n_heads != 0) {
    throw ShapeError(fmt::format(
        "causal_self_attention: expects qkv (B,T,3C) with C a multiple of n_heads {}, got {}",
        n_heads, qkv.shape().str()));
  }
  const int64_t b = qkv.size(0), t = qkv.size(1), c = qkv.size(2) / 3;
  Tensor y = Tensor::empty({b, t, c}, qkv.dtype());            // (B,T,C)
  Tensor lse = Tensor::empty({b, n_heads, t}, qkv.dtype());    // (B,H,T)
  dispatch_float(qkv.dtype(), "causal_self_attention", [&](auto tag) {
    using T = decltype(tag);
    forward<T>(qkv.data<T>(), y.data<T>(), lse.data<T>(), b, t, c, n_heads);
  });
  return record("causal_self_attention", y, {qkv},
                [qkv = qkv.detach(), y = y.detach(), lse, n_heads](const Tensor& g) {
                  Tensor dqkv = Tensor::empty(qkv.shape(), qkv.dtype());
                  dispatch_float(qkv.dtype(), "causal_self_attention", [&](auto tag) {
                    using T = decltype(tag);
                    backward<T>(qkv.data<T>(), y.data<T>(), lse.data<T>(), g.data<T>(),
                                dqkv.data<T>(), qkv.size(0), qkv.size(1), qkv.size(2) / 3,
                                n_heads);
                  });
                  return std::vector<Tensor>{dqkv};
                });
}

}  // namespace tinygpt::nn
