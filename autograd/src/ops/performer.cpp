// FAVOR+'s positive random features (Choromanski et al. 2020), the feature map of Performer
// attention; the running sums are causal_feature_attention's (linear_attention.cpp).
#include <cmath>

#include "kernels/product.hpp"
#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using kernels::gemm;
using kernels::ProductBackend;

// The exponents of one row (m of them), from its projections a_j = c w_j.x already in `a`:
// a_j - c^2 |x|^2 / 2, less the row's largest for a query.
template <class T>
void row_exponents(const T* x, int64_t d, T c, bool query, T* a, int64_t m) {
  T sq = 0;
  for (int64_t e = 0; e < d; ++e) sq += x[e] * x[e];
  T top = a[0];
  for (int64_t j = 1; j < m; ++j) top = std::max(top, a[j]);
  const T shift = query ? top : T(0);
  const T half = c * c * sq / 2 + shift;
  for (int64_t j = 0; j < m; ++j) a[j] -= half;
}

// The index of the row's largest projection: the max a query subtracts, whose gradient goes there.
template <class T>
int64_t row_argmax(const T* a, int64_t m) {
  int64_t best = 0;
  for (int64_t j = 1; j < m; ++j) {
    if (a[j] > a[best]) best = j;
  }
  return best;
}

void check_features(const Tensor& x, const Tensor& omega) {
  const bool ok = x.ndim() >= 1 && omega.ndim() == 2 && omega.size(0) > 0 &&
                  omega.size(1) == x.size(-1) && omega.dtype() == x.dtype();
  if (!ok) {
    throw ShapeError(Operation("performer_features"), fmt::format(
        "expects x (..., d) and omega (M, d) of its dtype, got x {} and omega {}",
        x.shape().str(), omega.shape().str()));
  }
}

}  // namespace

Tensor performer_features(const Tensor& x, const Tensor& omega, bool query) {
  check_features(x, omega);
  const int64_t d = x.size(-1), m = omega.size(0), rows = x.numel() / std::max<int64_t>(d, 1);
  Shape out_shape = x.shape();
  out_shape[out_shape.ndim() - 1] = m;
  Tensor out = Tensor::empty(out_shape, x.dtype());
  Tensor projections = Tensor::empty({rows, m}, x.dtype());  // c w_j.x, kept for the argmax
  const ProductBackend backend = kernels::product_backend(x.dtype());
  dispatch_float(x.dtype(), "performer_features", [&](auto tag) {
    using T = decltype(tag);
    const T c = static_cast<T>(std::pow(static_cast<double>(d), -0.25));
    const T norm = static_cast<T>(1.0 / std::sqrt(static_cast<double>(m)));
    T* a = projections.data<T>();
    T* y = out.data<T>();
    if (rows > 0) gemm(backend, false, true, rows, m, d, c, x.data<T>(), d, omega.data<T>(), d, T(0), a, m);
    for (int64_t r = 0; r < rows; ++r) {
      std::copy(a + r * m, a + (r + 1) * m, y + r * m);
      row_exponents(x.data<T>() + r * d, d, c, query, y + r * m, m);
      for (int64_t j = 0; j < m; ++j) y[r * m + j] = std::exp(y[r * m + j]) * norm;
    }
  });
  return record("performer_features", out, {x},
                [x = x.detach(), w = omega.detach(), y = out.detach(), projections, query,
                 backend](const Tensor& g) {
    const int64_t d = x.size(-1), m = w.size(0), rows = projections.size(0);
    Tensor dx = Tensor::empty(x.shape(), x.dtype());
    dispatch_float(x.dtype(), "performer_features", [&](auto tag) {
      using T = decltype(tag);
      const T c = static_cast<T>(std::pow(static_cast<double>(d), -0.25));
      // u_j = g_j phi_j is the gradient of exponent j: dx = c sum_j u_j w_j - c^2 x sum_j u_j,
      // and a query's subtracted max c w_k.x (k its argmax) takes c w_k sum_j u_j more.
      Tensor u = Tensor::empty({rows, m}, x.dtype());
      T* pu = u.data<T>();
      const T *pg = g.data<T>(), *py = y.data<T>(), *px = x.data<T>(), *pw = w.data<T>();
      T* pdx = dx.data<T>();
      for (int64_t i = 0; i < rows * m; ++i) pu[i] = pg[i] * py[i];
      if (rows > 0) gemm(backend, false, false, rows, d, m, c, pu, m, pw, d, T(0), pdx, d);
      for (int64_t r = 0; r < rows; ++r) {
        T total = 0;
        for (int64_t j = 0; j < m; ++j) total += pu[r * m + j];
        for (int64_t e = 0; e < d; ++e) pdx[r * d + e] -= c * c * total * px[r * d + e];
        if (query) {
          const T* wk = pw + row_argmax(projections.data<T>() + r * m, m) * d;
          for (int64_t e = 0; e < d; ++e) pdx[r * d + e] -= c * total * wk[e];
        }
      }
    });
    return std::vector<Tensor>{dx};
  });
}

}  // namespace tinygpt
