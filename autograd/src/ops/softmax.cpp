// Softmax and log-softmax along any axis, each fused into one kernel per lane forward and one
// backward; masked_fill, which makes attention masks for them.
#include <cmath>
#include <limits>

#include "common.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail;
using Grads = std::vector<Tensor>;

struct Softmax {
  static constexpr const char* kName = "softmax";

  // A lane that is entirely -inf (fully masked) gets zeros rather than 0/0.
  template <class T, class Step>
  static void forward(const T* x, T* y, int64_t n, Step step) {
    const T m = lane_max(x, n, step);
    if (m == -std::numeric_limits<T>::infinity()) {
      for (int64_t k = 0; k < n; ++k) y[k * step] = T(0);
      return;
    }
    double total = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      const T e = std::exp(x[k * step] - m);
      y[k * step] = e;
      total += e;
    }
    const T scale = static_cast<T>(1.0 / total);
    for (int64_t k = 0; k < n; ++k) y[k * step] *= scale;
  }

  // dx = y * (g - sum(g * y)); zero where y is zero, so masked lanes stay finite.
  template <class T, class Step>
  static void backward(const T* g, const T* y, T* dx, int64_t n, Step step) {
    double dot = 0.0;
    for (int64_t k = 0; k < n; ++k) dot += static_cast<double>(g[k * step]) * y[k * step];
    const T s = static_cast<T>(dot);
    for (int64_t k = 0; k < n; ++k) dx[k * step] = y[k * step] * (g[k * step] - s);
  }
};

struct LogSoftmax {
  static constexpr const char* kName = "log_softmax";

  // A lane that is entirely -inf stays -inf (log of probability zero) instead of -inf - -inf.
  template <class T, class Step>
  static void forward(const T* x, T* y, int64_t n, Step step) {
    const double lse = lane_logsumexp(x, n, step);
    const bool empty = lse == -std::numeric_limits<double>::infinity();
    for (int64_t k = 0; k < n; ++k) {
      y[k * step] = empty ? x[k * step] : static_cast<T>(x[k * step] - lse);
    }
  }

  // dx = g - softmax * sum(g), with softmax = exp(y) (zero where y is -inf).
  template <class T, class Step>
  static void backward(const T* g, const T* y, T* dx, int64_t n, Step step) {
    double total = 0.0;
    for (int64_t k = 0; k < n; ++k) total += g[k * step];
    const T s = static_cast<T>(total);
    for (int64_t k = 0; k < n; ++k) dx[k * step] = g[k * step] - std::exp(y[k * step]) * s;
  }
};

// Runs Op::forward over every lane of x along `axis`; the backward saves only the output.
template <class Op>
Tensor softmax_op(const Tensor& x, int64_t axis) {
  const int64_t ax = normalize_axis(axis, x.shape(), Op::kName);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), Op::kName, [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for_each_lane(x.shape(), ax, [&](int64_t, int64_t offset, int64_t n, auto step) {
      Op::forward(px + offset, py + offset, n, step);
    });
  });
  return record(Op::kName, y, {x}, [ax, y = y.detach()](const Tensor& g) {
    Tensor dx = Tensor::empty(g.shape(), g.dtype());
    dispatch_float(g.dtype(), Op::kName, [&](auto tag) {
      using T = decltype(tag);
      const T* pg = g.data<T>();
      const T* py = y.data<T>();
      T* pd = dx.data<T>();
      for_each_lane(g.shape(), ax, [&](int64_t, int64_t offset, int64_t n, auto step) {
        Op::backward(pg + offset, py + offset, pd + offset, n, step);
      });
    });
    return Grads{dx};
  });
}

// src where mask == 0, `fill` where mask != 0; mask (any dtype) broadcast to src's shape.
Tensor fill_where(const Tensor& src, const Tensor& mask, double fill) {
  Tensor out = Tensor::empty(src.shape(), src.dtype());
  const Shape mask_strides = broadcast_strides(mask.shape(), src.shape());
  dispatch_float(src.dtype(), "masked_fill", [&](auto tag) {
    using T = decltype(tag);
    const T* ps = src.data<T>();
    T* po = out.data<T>();
    const T value = static_cast<T>(fill);
    dispatch_all(mask.dtype(), [&](auto mask_tag) {
      const auto* pm = mask.data<decltype(mask_tag)>();
      for_each_row2(src.shape(), src.shape().strides(), mask_strides,
                    [&](int64_t o, int64_t, int64_t m, int64_t, int64_t m_step, int64_t n) {
                      for (int64_t i = 0; i < n; ++i) {
                        po[o + i] = pm[m + i * m_step] != 0 ? value : ps[o + i];
                      }
                    });
    });
  });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) { return softmax_op<Softmax>(x, axis); }

Tensor log_softmax(const Tensor& x, int64_t axis) { return softmax_op<LogSoftmax>(x, axis); }

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  if (broadcast_shapes(mask.shape(), x.shape(), "masked_fill") != x.shape()) {
    throw ShapeError(fmt::format("masked_fill: mask of shape {} does not broadcast to input {}",
                                 mask.shape().str(), x.shape().str()));
  }
  Tensor out = fill_where(x, mask, value);
  return record("masked_fill", out, {x}, [mask = mask.detach()](const Tensor& g) {
    return Grads{fill_where(g, mask, 0.0)};  // filled positions do not depend on x
  });
}

}  // namespace tinygpt
