// Inverted dropout: the mask is drawn from the caller's Generator, one draw per element in
// row-major order, so the same generator state gives the same mask.
#include "common.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail;

// x * mask, elementwise (mask holds 0 or 1/(1-p)).
Tensor apply_mask(const Tensor& x, const Tensor& mask) {
  return dispatch_float(x.dtype(), "dropout", [&](auto tag) {
    return map2<decltype(tag)>(x, mask, [](auto v, auto m) { return v * m; });
  });
}

}  // namespace

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  if (!(p >= 0.0 && p < 1.0)) {
    throw ValueError(fmt::format("dropout: p must be in [0, 1), got {} (input {})", p,
                                 x.shape().str()));
  }
  if (!training || p == 0.0) return x;
  Tensor mask = Tensor::empty(x.shape(), x.dtype());
  dispatch_float(x.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    T* pm = mask.data<T>();
    const T keep = static_cast<T>(1.0 / (1.0 - p));
    for (int64_t i = 0; i < mask.numel(); ++i) pm[i] = gen.uniform() < p ? T(0) : keep;
  });
  Tensor out = apply_mask(x, mask);
  return record("dropout", out, {x}, [mask](const Tensor& g) {
    return std::vector<Tensor>{apply_mask(g, mask)};
  });
}

}  // namespace tinygpt
