// Reductions over chosen axes: sum, mean, max.
#include <algorithm>
#include <limits>

#include "common.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail;
using Grads = std::vector<Tensor>;

struct Reduction {
  Shape keep;     // x's shape with the reduced axes set to 1
  Shape out;      // the result's shape (keep, or keep without the reduced axes)
  int64_t count;  // elements folded into each output
};

// Validates axes (empty = all) and works out the shapes.
Reduction plan(const Shape& x, const std::vector<int64_t>& axes, bool keepdim, const char* op) {
  std::vector<bool> reduced(static_cast<size_t>(x.ndim()), axes.empty());
  for (int64_t a : axes) {
    const int64_t ax = normalize_axis(a, x, op);
    if (reduced[static_cast<size_t>(ax)]) {
      throw ShapeError(fmt::format("{}: axis {} is given twice for shape {}", op, a, x.str()));
    }
    reduced[static_cast<size_t>(ax)] = true;
  }
  Reduction r{x, Shape{}, 1};
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (reduced[static_cast<size_t>(i)]) {
      r.count *= x[i];
      r.keep[i] = 1;
      if (keepdim) r.out.push_back(1);
    } else {
      r.out.push_back(x[i]);
    }
  }
  return r;
}

// out[j] = fold over the x[i] that reduce into j, starting from `init`. Rows along x's last axis
// that fold into one output are first folded into a local accumulator of type Acc.
template <class T, class Acc, class Fold>
void reduce_into(const Tensor& x, const Shape& keep, T* out, Acc init, Fold fold) {
  const T* px = x.data<T>();
  std::fill_n(out, keep.numel(), static_cast<T>(init));
  const Shape xs = x.shape().strides();
  for_each_row2(x.shape(), xs, broadcast_strides(keep, x.shape()),
                [&](int64_t o, int64_t, int64_t ko, int64_t, int64_t ks, int64_t n) {
                  if (ks == 0) {
                    Acc acc = static_cast<Acc>(out[ko]);
                    for (int64_t i = 0; i < n; ++i) acc = fold(acc, static_cast<Acc>(px[o + i]));
                    out[ko] = static_cast<T>(acc);
                  } else {
                    for (int64_t i = 0; i < n; ++i) out[ko + i] = fold(out[ko + i], px[o + i]);
                  }
                });
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  const Reduction r = plan(x.shape(), axes, keepdim, "sum");
  Tensor out = Tensor::empty(r.out, x.dtype());
  dispatch_float(x.dtype(), "sum", [&](auto tag) {
    using T = decltype(tag);
    reduce_into<T>(x, r.keep, out.data<T>(), 0.0, [](auto acc, auto v) { return acc + v; });
  });
  return record("sum", out, {x}, [r, in_shape = x.shape()](const Tensor& g) {
    return Grads{broadcast_to(reshape(g, r.keep.to_vector()), in_shape)};
  });
}

Tensor sum(const Tensor& x) { return sum(x, {}, false); }

Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  const Reduction r = plan(x.shape(), axes, keepdim, "mean");
  if (r.count == 0) {
    throw ShapeError(fmt::format("mean: reduces over zero elements of shape {}", x.shape().str()));
  }
  return sum(x, axes, keepdim) * (1.0 / static_cast<double>(r.count));
}

Tensor mean(const Tensor& x) { return mean(x, {}, false); }

Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdim) {
  const Reduction r = plan(x.shape(), axes, keepdim, "max");
  if (r.count == 0) {
    throw ShapeError(fmt::format("max: reduces over zero elements of shape {}", x.shape().str()));
  }
  Tensor out = Tensor::empty(r.out, x.dtype());
  dispatch_float(x.dtype(), "max", [&](auto tag) {
    using T = decltype(tag);
    reduce_into<T>(x, r.keep, out.data<T>(), -std::numeric_limits<T>::infinity(),
                   [](auto acc, auto v) { return v > acc ? v : acc; });
  });
  return record("max", out, {x}, [r, x = x.detach(), m = out.detach()](const Tensor& g) {
    // Ties share the gradient equally.
    const Tensor m_full = broadcast_to(reshape(m, r.keep.to_vector()), x.shape());
    const Tensor is_max = dispatch_float(x.dtype(), "max", [&](auto tag) {
      return map2<decltype(tag)>(x, m_full, [](auto a, auto b) { return decltype(a)(a == b); });
    });
    const Tensor ties = sum_to(is_max, r.keep);
    return Grads{broadcast_to(reshape(g, r.keep.to_vector()) / ties, x.shape()) * is_max};
  });
}

}  // namespace tinygpt
