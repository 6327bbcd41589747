// Elementwise ops of one tensor. Each backward is a second elementwise map over saved values.
#include <cmath>

#include "common.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/simd_math.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail;
using Grads = std::vector<Tensor>;

template <class F>
Tensor unary_map(const Tensor& x, const char* op, F f) {
  return dispatch_float(x.dtype(), op, [&](auto tag) { return map1<decltype(tag)>(x, f); });
}

// grad_in[i] = f(grad_out[i], saved[i]).
template <class F>
Tensor grad_map(const Tensor& g, const Tensor& saved, F f) {
  return dispatch_float(g.dtype(), "backward", [&](auto tag) {
    return map2<decltype(tag)>(g, saved, f);
  });
}

}  // namespace

Tensor neg(const Tensor& x) {
  Tensor out = unary_map(x, "neg", [](auto v) { return -v; });
  return record("neg", out, {x}, [](const Tensor& g) { return Grads{neg(g)}; });
}

Tensor pow(const Tensor& x, double p) {
  Tensor out = unary_map(x, "pow", [p](auto v) { return static_cast<decltype(v)>(std::pow(v, p)); });
  return record("pow", out, {x}, [x = x.detach(), p](const Tensor& g) {
    return Grads{grad_map(g, x, [p](auto gv, auto v) {
      return static_cast<decltype(v)>(gv * p * std::pow(v, p - 1));
    })};
  });
}

Tensor exp(const Tensor& x) {
  Tensor out = unary_map(x, "exp", [](auto v) { return std::exp(v); });
  return record("exp", out, {x}, [y = out.detach()](const Tensor& g) { return Grads{g * y}; });
}

Tensor elu_plus_one(const Tensor& x) {
  Tensor out = unary_map(x, "elu_plus_one", [](auto v) { return simd::elu_plus_one(v); });
  return record("elu_plus_one", out, {x}, [y = out.detach()](const Tensor& g) {
    return Grads{grad_map(g, y, [](auto gv, auto yv) { return gv * simd::elu_plus_one_slope(yv); })};
  });
}

Tensor log(const Tensor& x) {
  Tensor out = unary_map(x, "log", [](auto v) { return std::log(v); });
  return record("log", out, {x}, [x = x.detach()](const Tensor& g) { return Grads{g / x}; });
}

Tensor sqrt(const Tensor& x) {
  Tensor out = unary_map(x, "sqrt", [](auto v) { return std::sqrt(v); });
  return record("sqrt", out, {x}, [y = out.detach()](const Tensor& g) {
    return Grads{grad_map(g, y, [](auto gv, auto yv) { return gv / (yv + yv); })};
  });
}

Tensor tanh(const Tensor& x) {
  Tensor out = unary_map(x, "tanh", [](auto v) { return std::tanh(v); });
  return record("tanh", out, {x}, [y = out.detach()](const Tensor& g) {
    return Grads{grad_map(g, y, [](auto gv, auto yv) { return gv * (1 - yv * yv); })};
  });
}

Tensor sigmoid(const Tensor& x) {
  // Both branches keep exp's argument <= 0, so no overflow for large |x|.
  Tensor out = unary_map(x, "sigmoid", [](auto v) {
    using T = decltype(v);
    if (v >= 0) return T(1) / (T(1) + std::exp(-v));
    const T e = std::exp(v);
    return e / (T(1) + e);
  });
  return record("sigmoid", out, {x}, [y = out.detach()](const Tensor& g) {
    return Grads{grad_map(g, y, [](auto gv, auto yv) { return gv * yv * (1 - yv); })};
  });
}

Tensor relu(const Tensor& x) {
  Tensor out = unary_map(x, "relu", [](auto v) { return v > 0 ? v : decltype(v)(0); });
  return record("relu", out, {x}, [x = x.detach()](const Tensor& g) {
    return Grads{grad_map(g, x, [](auto gv, auto v) { return v > 0 ? gv : decltype(v)(0); })};
  });
}

// GPT-2's tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed as
// x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) with the vectorised exp of simd_math.hpp. The
// backward recomputes from the saved input rather than saving a second tensor.
Tensor gelu(const Tensor& x) {
  Tensor out = unary_map(x, "gelu", [](auto v) { return simd::gelu(v); });
  return record("gelu", out, {x}, [x = x.detach()](const Tensor& g) {
    return Grads{grad_map(g, x, [](auto gv, auto v) { return gv * simd::gelu_grad(v); })};
  });
}

// BERT's GELU, the exact x Phi(x) with Phi the normal CDF through erf (Hugging Face's "gelu").
// d/dx = Phi(x) + x phi(x), phi the normal density.
Tensor gelu_erf(const Tensor& x) {
  Tensor out = unary_map(x, "gelu_erf", [](auto v) {
    using T = decltype(v);
    return static_cast<T>(0.5) * v * (T(1) + std::erf(v * static_cast<T>(M_SQRT1_2)));
  });
  return record("gelu_erf", out, {x}, [x = x.detach()](const Tensor& g) {
    return Grads{grad_map(g, x, [](auto gv, auto v) {
      using T = decltype(v);
      const T cdf = static_cast<T>(0.5) * (T(1) + std::erf(v * static_cast<T>(M_SQRT1_2)));
      const T density = std::exp(static_cast<T>(-0.5) * v * v) * static_cast<T>(0.5 * M_2_SQRTPI * M_SQRT1_2);
      return gv * (cdf + v * density);
    })};
  });
}

}  // namespace tinygpt
