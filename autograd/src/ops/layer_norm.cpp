// Layer normalisation over the last axis, fused: one pass per row forward (saving its mean and
// 1/std), one pass per row backward giving dx, dweight and dbias together.
#include <cmath>

#include "common.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail;

// weight and bias are optional, but when given must be (C) of x's dtype.
void check_param(const Tensor& x, const Tensor& p, const char* name) {
  if (!p.defined()) return;
  const int64_t c = x.shape()[x.ndim() - 1];
  if (p.shape() != Shape{c}) {
    throw ShapeError(fmt::format("layer_norm: {} of shape {} does not match input {} (want ({},))",
                                 name, p.shape().str(), x.shape().str(), c));
  }
  check_same_dtype(x, p, "layer_norm");
}

template <class T>
const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// y = (x - mean) * rstd * w + b over one row of n; statistics in double, stats = {mean, rstd}.
// The sums are vectorised (omp simd reductions: a fixed order for a given build, whatever the
// thread count); w and b are applied in separate passes over the row, which is in L1 by then.
template <class T>
void norm_row(const T* x, const T* w, const T* b, T* y, int64_t n, double eps, double* stats) {
  double mean = 0.0, var = 0.0;
#pragma omp simd reduction(+ : mean)
  for (int64_t k = 0; k < n; ++k) mean += static_cast<double>(x[k]);
  mean /= static_cast<double>(n);
#pragma omp simd reduction(+ : var)
  for (int64_t k = 0; k < n; ++k) var += (x[k] - mean) * (x[k] - mean);
  const double rstd = 1.0 / std::sqrt(var / static_cast<double>(n) + eps);
  stats[0] = mean;
  stats[1] = rstd;
  const T m = static_cast<T>(mean), r = static_cast<T>(rstd);
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - m) * r;
  if (w != nullptr) {
#pragma omp simd
    for (int64_t k = 0; k < n; ++k) y[k] *= w[k];
  }
  if (b != nullptr) {
#pragma omp simd
    for (int64_t k = 0; k < n; ++k) y[k] += b[k];
  }
}

// With xhat = (x - mean) * rstd and gh = g * w:
//   dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)),  dw += g * xhat,  db += g.
// params (2, C) accumulates dw and db for this row's group (see layer_norm's backward).
template <bool kHasWeight, class T>
void norm_row_backward(const T* x, const T* w, const T* g, const double* stats, T* dx,
                       double* params, int64_t n) {
  const T m = static_cast<T>(stats[0]), r = static_cast<T>(stats[1]);
  double sum_gh = 0.0, sum_gh_xhat = 0.0;
#pragma omp simd reduction(+ : sum_gh, sum_gh_xhat)
  for (int64_t k = 0; k < n; ++k) {
    const T xhat = (x[k] - m) * r, gh = kHasWeight ? g[k] * w[k] : g[k];
    sum_gh += gh;
    sum_gh_xhat += gh * xhat;
    params[k] += g[k] * xhat;
    params[n + k] += g[k];
  }
  const T a = static_cast<T>(sum_gh / static_cast<double>(n));
  const T c = static_cast<T>(sum_gh_xhat / static_cast<double>(n));
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) {
    const T xhat = (x[k] - m) * r, gh = kHasWeight ? g[k] * w[k] : g[k];
    dx[k] = r * (gh - a - xhat * c);
  }
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  if (x.ndim() == 0) throw ShapeError("layer_norm: needs at least one axis, got shape ()");
  check_param(x, weight, "weight");
  check_param(x, bias, "bias");
  const int64_t axis = x.ndim() - 1;
  Shape stats_shape = x.shape();
  stats_shape[axis] = 2;
  Tensor stats = Tensor::empty(stats_shape, DType::f64);  // (..., 2): mean, rstd of each row
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T *pw = data_or_null<T>(weight), *pb = data_or_null<T>(bias);
    T* py = y.data<T>();
    double* ps = stats.data<double>();
    for_each_lane(x.shape(), axis, [&](int64_t row, int64_t offset, int64_t n, auto) {
      norm_row(px + offset, pw, pb, py + offset, n, eps, ps + 2 * row);
    });
  });
  const Tensor w = weight.defined() ? weight.detach() : Tensor{};
  const bool has_bias = bias.defined();
  return record("layer_norm", y, {x, weight, bias},
                [x = x.detach(), w, has_bias, stats](const Tensor& g) {
    const int64_t c = x.shape()[x.ndim() - 1], rows = c == 0 ? 0 : x.numel() / c;
    Tensor dx = Tensor::empty(x.shape(), x.dtype());
    // Rows go in fixed groups of kRows, each with its own running (2, C) dweight and dbias, and
    // the groups' sums are added in group order: the same result for any thread count.
    constexpr int64_t kRows = 32;
    const int64_t groups = (rows + kRows - 1) / kRows;
    Tensor partials = Tensor::empty({groups, 2, c}, DType::f64);
    dispatch_float(x.dtype(), "layer_norm", [&](auto tag) {
      using T = decltype(tag);
      const T *px = x.data<T>(), *pg = g.data<T>(), *pw = data_or_null<T>(w);
      const double* ps = stats.data<double>();
      T* pd = dx.data<T>();
      double* pp = partials.data<double>();
      for_range(rows * c > kParallelGrain && groups > 1, groups, [&](int64_t first, int64_t last) {
        for (int64_t group = first; group < last; ++group) {
          double* acc = pp + group * 2 * c;
          std::fill_n(acc, 2 * c, 0.0);
          for (int64_t row = group * kRows; row < std::min(rows, (group + 1) * kRows); ++row) {
            if (pw != nullptr) {
              norm_row_backward<true>(px + row * c, pw, pg + row * c, ps + 2 * row, pd + row * c,
                                      acc, c);
            } else {
              norm_row_backward<false>(px + row * c, pw, pg + row * c, ps + 2 * row, pd + row * c,
                                       acc, c);
            }
          }
        }
      });
    });
    Tensor dw = w.defined() ? Tensor::empty({c}, x.dtype()) : Tensor{};
    Tensor db = has_bias ? Tensor::empty({c}, x.dtype()) : Tensor{};
    dispatch_float(x.dtype(), "layer_norm", [&](auto tag) {
      using T = decltype(tag);
      const double* pp = partials.data<double>();
      for (int64_t part = 0; part < 2; ++part) {
        Tensor& out = part == 0 ? dw : db;
        if (!out.defined()) continue;
        T* po = out.data<T>();
        for (int64_t k = 0; k < c; ++k) {
          double total = 0.0;
          for (int64_t group = 0; group < groups; ++group) total += pp[(group * 2 + part) * c + k];
          po[k] = static_cast<T>(total);
        }
      }
    });
    return std::vector<Tensor>{dx, dw, db};
  });
}

}  // namespace tinygpt
