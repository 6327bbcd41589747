// Elementwise ops of two operands (broadcasting) and of a tensor and a scalar.
#include <cmath>

#include "common.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail;
using Grads = std::vector<Tensor>;

// out = f(a, b) over the broadcast shape of a and b.
template <class F>
Tensor broadcast_map(const Tensor& a, const Tensor& b, const char* op, F f) {
  check_same_dtype(a, b, op);
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  return dispatch_float(a.dtype(), op, [&](auto tag) {
    using T = decltype(tag);
    if (a.shape() == b.shape()) return map2<T>(a, b, f);
    Tensor out = Tensor::empty(shape, a.dtype());
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    for_each_row2(shape, broadcast_strides(a.shape(), shape), broadcast_strides(b.shape(), shape),
                  [&](int64_t o, int64_t ao, int64_t bo, int64_t as, int64_t bs, int64_t n) {
                    for (int64_t i = 0; i < n; ++i) po[o + i] = f(pa[ao + i * as], pb[bo + i * bs]);
                  });
    return out;
  });
}

// out = f(x) with the scalar baked into f.
template <class F>
Tensor scalar_map(const Tensor& x, const char* op, F f) {
  return dispatch_float(x.dtype(), op, [&](auto tag) { return map1<decltype(tag)>(x, f); });
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_map(a, b, "add", [](auto x, auto y) { return x + y; });
  return record("add", out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
    return Grads{sum_to(g, sa), sum_to(g, sb)};
  });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_map(a, b, "sub", [](auto x, auto y) { return x - y; });
  return record("sub", out, {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& g) {
    return Grads{sum_to(g, sa), sum_to(neg(g), sb)};
  });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_map(a, b, "mul", [](auto x, auto y) { return x * y; });
  return record("mul", out, {a, b}, [a = a.detach(), b = b.detach()](const Tensor& g) {
    return Grads{sum_to(g * b, a.shape()), sum_to(g * a, b.shape())};
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = broadcast_map(a, b, "div", [](auto x, auto y) { return x / y; });
  return record("div", out, {a, b},
                [a = a.detach(), b = b.detach(), out = out.detach()](const Tensor& g) {
                  Tensor ga = g / b;  // d(a/b)/db = -(a/b)/b
                  return Grads{sum_to(ga, a.shape()), sum_to(neg(ga * out), b.shape())};
                });
}

Tensor add(const Tensor& a, double s) {
  Tensor out = scalar_map(a, "add", [s](auto x) { return x + static_cast<decltype(x)>(s); });
  return record("add_scalar", out, {a}, [](const Tensor& g) { return Grads{g}; });
}

Tensor mul(const Tensor& a, double s) {
  Tensor out = scalar_map(a, "mul", [s](auto x) { return x * static_cast<decltype(x)>(s); });
  return record("mul_scalar", out, {a}, [s](const Tensor& g) { return Grads{g * s}; });
}

Tensor rsub(double s, const Tensor& a) {
  Tensor out = scalar_map(a, "rsub", [s](auto x) { return static_cast<decltype(x)>(s) - x; });
  return record("rsub_scalar", out, {a}, [](const Tensor& g) { return Grads{neg(g)}; });
}

Tensor rdiv(double s, const Tensor& a) {
  Tensor out = scalar_map(a, "rdiv", [s](auto x) { return static_cast<decltype(x)>(s) / x; });
  return record("rdiv_scalar", out, {a}, [a = a.detach(), out = out.detach()](const Tensor& g) {
    return Grads{neg(g * out / a)};  // d(s/a)/da = -(s/a)/a
  });
}

}  // namespace tinygpt
