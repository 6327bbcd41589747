// A new differentiable op in a few lines, on the public API only (tinygpt::autograd):
// glu(a, b) = a * sigmoid(b), the gated linear unit (Dauphin et al. 2017). The forward loops over
// raw memory for both float dtypes; record() puts it on the tape with its backward, written right
// beside it. Then the op is checked as the library's own ops are: against the same formula
// composed of built-in ops, and by a float64 gradient check. Exits non-zero on a failure.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tinygpt/autograd.hpp"
#include "tinygpt/autograd/dispatch.hpp"

using tinygpt::Tensor;

Tensor glu(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
    throw tinygpt::ShapeError(fmt::format("glu: a {} ({}) and b {} ({}) must match", a.shape(),
                                          dtype_name(a.dtype()), b.shape(), dtype_name(b.dtype())));
  }
  Tensor y = tinygpt::dispatch_float(a.dtype(), "glu", [&](auto tag) {
    using T = decltype(tag);
    Tensor out = Tensor::empty(a.shape(), a.dtype());
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* py = out.data<T>();
    for (int64_t i = 0; i < a.numel(); ++i) py[i] = pa[i] / (T(1) + std::exp(-pb[i]));
    return out;
  });
  // dy/da = s, dy/db = a s (1 - s) with s = sigmoid(b). The backward captures its inputs
  // detached: it needs their values, not their graph.
  return tinygpt::record("glu", y, {a, b}, [a = a.detach(), b = b.detach()](const Tensor& g) {
    const Tensor s = tinygpt::sigmoid(b);
    return std::vector<Tensor>{g * s, g * a * s * (1.0 - s)};
  });
}

int main() {
  tinygpt::Generator gen(3);

  // Forward, f32: the same values as the composed ops.
  const Tensor a = Tensor::randn({4, 5}, gen), b = Tensor::randn({4, 5}, gen);
  const std::vector<double> got = glu(a, b).to_vector();
  const std::vector<double> want = (a * tinygpt::sigmoid(b)).to_vector();
  double max_diff = 0.0;
  for (size_t i = 0; i < got.size(); ++i) max_diff = std::max(max_diff, std::abs(got[i] - want[i]));

  // Backward, f64: the tape's gradients against central differences, for both inputs.
  const auto f64_leaf = [&] {
    return Tensor::randn({3, 4}, gen, tinygpt::DType::f64).set_requires_grad();
  };
  const tinygpt::GradcheckResult r = tinygpt::gradcheck(
      [](const std::vector<Tensor>& in) { return glu(in[0], in[1]); }, {f64_leaf(), f64_leaf()});

  fmt::print("glu forward: max |glu(a, b) - a * sigmoid(b)| = {:.1e}\n", max_diff);
  fmt::print("glu backward: {}\n", r.message());
  if (max_diff > 1e-6 || !r.ok || r.checked != 2 * 3 * 4) {
    fmt::print(stderr, "custom op glu: FAILED\n");
    return 1;
  }
  fmt::print("custom op glu: ok\n");
  return 0;
}
