// Broadcasting: shape rules, the broadcast_to op, and its adjoint sum_to.
#include "common.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace detail {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int64_t nd = std::max(a.ndim(), b.ndim());
  Shape out;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t ia = i - (nd - a.ndim()), ib = i - (nd - b.ndim());
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(fmt::format("{}: shapes {} and {} cannot be broadcast together", op,
                                   a.str(), b.str()));
    }
    out.push_back(da == 1 ? db : da);
  }
  return out;
}

Shape broadcast_strides(const Shape& in, const Shape& out) {
  Shape strides = out;
  const Shape own = in.strides();
  const int64_t lead = out.ndim() - in.ndim();
  for (int64_t i = 0; i < out.ndim(); ++i) {
    const int64_t j = i - lead;
    strides[i] = (j < 0 || in[j] == 1) ? 0 : own[j];
  }
  return strides;
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.dtype() != b.dtype()) {
    throw ValueError(fmt::format("{}: dtypes differ: {} {} and {} {}", op, a.shape().str(),
                                 dtype_name(a.dtype()), b.shape().str(), dtype_name(b.dtype())));
  }
}

}  // namespace detail

using namespace detail;

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  if (broadcast_shapes(shape, x.shape(), "sum_to") != x.shape()) {
    throw ShapeError(fmt::format("sum_to: {} does not broadcast to {}", shape.str(),
                                 x.shape().str()));
  }
  const int64_t lead = x.ndim() - shape.ndim();
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && x.shape()[i] != 1)) axes.push_back(i);
  }
  return reshape(sum(x, axes, /*keepdim=*/true), shape.to_vector());
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  if (broadcast_shapes(x.shape(), shape, "broadcast_to") != shape) {
    throw ShapeError(fmt::format("broadcast_to: {} does not broadcast to {}", x.shape().str(),
                                 shape.str()));
  }
  Tensor out = Tensor::empty(shape, x.dtype());
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const Shape xs = broadcast_strides(x.shape(), shape);
    for_each_row2(shape, xs, xs, [&](int64_t o, int64_t a, int64_t, int64_t step, int64_t,
                                     int64_t n) {
      for (int64_t i = 0; i < n; ++i) po[o + i] = px[a + i * step];
    });
  });
  return record("broadcast_to", out, {x}, [in_shape = x.shape()](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, in_shape)};
  });
}

}  // namespace tinygpt
