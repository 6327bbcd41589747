// Ops that move elements around: reshape (shares data), transpose/permute, slicing, concat/split.
#include <algorithm>
#include <numeric>

#include "../tensor_impl.hpp"
#include "common.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail;
using Grads = std::vector<Tensor>;

// Copies the strided view of `src` (element strides `strides` from `offset`, shape `shape`) into
// contiguous `dst`; with `scatter`, copies contiguous `dst` back into that view instead.
template <class T>
void strided_copy(const Shape& shape, const Shape& strides, int64_t offset, T* src, T* dst,
                  bool scatter) {
  for_each_row2(shape, strides, strides,
                [&](int64_t o, int64_t s, int64_t, int64_t step, int64_t, int64_t n) {
                  T* view = src + offset + s;
                  if (scatter) {
                    for (int64_t i = 0; i < n; ++i) view[i * step] = dst[o + i];
                  } else {
                    for (int64_t i = 0; i < n; ++i) dst[o + i] = view[i * step];
                  }
                });
}

Tensor gather_view(const Tensor& x, const Shape& shape, const Shape& strides, int64_t offset) {
  Tensor out = Tensor::empty(shape, x.dtype());
  dispatch_all(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    strided_copy<T>(shape, strides, offset, const_cast<T*>(x.data<T>()), out.data<T>(), false);
  });
  return out;
}

}  // namespace

Tensor reshape(const Tensor& x, const std::vector<int64_t>& dims) {
  Shape shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && infer < 0) {
      infer = static_cast<int64_t>(i);
      shape.push_back(0);
    } else if (dims[i] < 0) {
      throw ShapeError(fmt::format("reshape: bad target ({}) for shape {}",
                                   fmt::join(dims, ", "), x.shape().str()));
    } else {
      shape.push_back(dims[i]);
      known *= dims[i];
    }
  }
  if (infer >= 0 && known > 0 && x.numel() % known == 0) shape[infer] = x.numel() / known;
  if (shape.numel() != x.numel()) {
    throw ShapeError(fmt::format("reshape: cannot view shape {} ({} elements) as ({})",
                                 x.shape().str(), x.numel(), fmt::join(dims, ", ")));
  }
  if (shape == x.shape()) return x;
  Tensor out = x.detach();
  out.impl()->shape = shape;
  return record("reshape", out, {x}, [in = x.shape()](const Tensor& g) {
    return Grads{reshape(g, in.to_vector())};
  });
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& axes) {
  const Shape& in = x.shape();
  if (static_cast<int64_t>(axes.size()) != in.ndim()) {
    throw ShapeError(fmt::format("permute: {} axes given for shape {}", axes.size(), in.str()));
  }
  std::vector<int64_t> inverse(axes.size(), -1);
  Shape shape, strides;
  const Shape own = in.strides();
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = normalize_axis(axes[i], in, "permute");
    if (inverse[static_cast<size_t>(a)] >= 0) {
      throw ShapeError(fmt::format("permute: axis {} repeated in ({}) for shape {}", a,
                                   fmt::join(axes, ", "), in.str()));
    }
    inverse[static_cast<size_t>(a)] = static_cast<int64_t>(i);
    shape.push_back(in[a]);
    strides.push_back(own[a]);
  }
  Tensor out = gather_view(x, shape, strides, 0);
  return record("permute", out, {x},
                [inverse](const Tensor& g) { return Grads{permute(g, inverse)}; });
}

Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1) {
  std::vector<int64_t> axes(static_cast<size_t>(x.ndim()));
  std::iota(axes.begin(), axes.end(), 0);
  std::swap(axes[static_cast<size_t>(normalize_axis(axis0, x.shape(), "transpose"))],
            axes[static_cast<size_t>(normalize_axis(axis1, x.shape(), "transpose"))]);
  return permute(x, axes);
}

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step) {
  const Shape& in = x.shape();
  const int64_t ax = normalize_axis(axis, in, "slice");
  const int64_t len = in[ax];
  if (step <= 0) {
    throw ValueError(fmt::format("slice: step must be positive, got {} (shape {})", step,
                                 in.str()));
  }
  if (start < 0) start += len;
  if (stop < 0) stop += len;
  start = std::clamp<int64_t>(start, 0, len);
  stop = std::clamp<int64_t>(stop, start, len);
  Shape shape = in, strides = in.strides();
  shape[ax] = (stop - start + step - 1) / step;
  const int64_t offset = start * strides[ax];
  strides[ax] *= step;
  Tensor out = gather_view(x, shape, strides, offset);
  return record("slice", out, {x}, [in, shape, strides, offset](const Tensor& g) {
    Tensor gx = Tensor::zeros(in, g.dtype());
    dispatch_float(g.dtype(), "slice", [&](auto tag) {
      using T = decltype(tag);
      strided_copy<T>(shape, strides, offset, gx.data<T>(), const_cast<T*>(g.data<T>()), true);
    });
    return Grads{gx};
  });
}

Tensor narrow(const Tensor& x, int64_t axis, int64_t start, int64_t length) {
  const int64_t ax = normalize_axis(axis, x.shape(), "narrow");
  if (start < 0 || length < 0 || start + length > x.shape()[ax]) {
    throw IndexError(fmt::format("narrow: [{}, {}) is outside axis {} of shape {}", start,
                                 start + length, ax, x.shape().str()));
  }
  return slice(x, ax, start, start + length, 1);
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) throw ValueError("concat: needs at least one tensor");
  const Shape& first = xs[0].shape();
  const int64_t ax = normalize_axis(axis, first, "concat");
  Shape shape = first;
  shape[ax] = 0;
  std::vector<int64_t> sizes;
  for (const Tensor& x : xs) {
    check_same_dtype(xs[0], x, "concat");
    bool ok = x.ndim() == first.ndim();
    for (int64_t d = 0; ok && d < first.ndim(); ++d) ok = d == ax || x.shape()[d] == first[d];
    if (!ok) {
      throw ShapeError(fmt::format("concat: shape {} does not match {} outside axis {}",
                                   x.shape().str(), first.str(), ax));
    }
    sizes.push_back(x.shape()[ax]);
    shape[ax] += x.shape()[ax];
  }
  const int64_t outer = std::accumulate(first.begin(), first.begin() + ax, int64_t{1},
                                        std::multiplies<>());
  const int64_t inner = std::accumulate(first.begin() + ax + 1, first.end(), int64_t{1},
                                        std::multiplies<>());
  Tensor out = Tensor::empty(shape, xs[0].dtype());
  dispatch_all(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* po = out.data<T>();
    int64_t col = 0;
    for (const Tensor& x : xs) {
      const int64_t block = x.shape()[ax] * inner;
      const T* px = x.data<T>();
      for (int64_t o = 0; o < outer; ++o) {
        std::copy_n(px + o * block, block, po + o * shape[ax] * inner + col);
      }
      col += block;
    }
  });
  return record("concat", out, xs, [sizes, ax](const Tensor& g) { return split(g, sizes, ax); });
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  const int64_t ax = normalize_axis(axis, x.shape(), "split");
  const int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  if (total != x.shape()[ax] ||
      std::any_of(sizes.begin(), sizes.end(), [](int64_t s) { return s < 0; })) {
    throw ShapeError(fmt::format("split: sizes ({}) do not add up to axis {} of shape {}",
                                 fmt::join(sizes, ", "), ax, x.shape().str()));
  }
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t s : sizes) {
    parts.push_back(narrow(x, ax, start, s));
    start += s;
  }
  return parts;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t axis) {
  const int64_t ax = normalize_axis(axis, x.shape(), "chunk");
  if (chunks <= 0) {
    throw ValueError(fmt::format("chunk: chunks must be positive, got {}", chunks));
  }
  const int64_t len = x.shape()[ax], each = (len + chunks - 1) / chunks;
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < len; start += each) sizes.push_back(std::min(each, len - start));
  if (sizes.empty()) sizes.push_back(0);
  return split(x, sizes, ax);
}

// Grouped-query attention's sharing: head h of the output is head h / repeats of x, the key/value
// head a group of query heads shares. The backward sums each group's gradients onto its head.
Tensor repeat_heads(const Tensor& x, int64_t repeats) {
  if (x.ndim() != 4 || repeats <= 0) {
    throw ShapeError(fmt::format("repeat_heads: expects x (B,H,T,d) and repeats > 0, got {} and {}",
                                 x.shape().str(), repeats));
  }
  if (repeats == 1) return x;
  const int64_t b = x.size(0), h = x.size(1), block = x.size(2) * x.size(3);
  Tensor out = Tensor::empty({b, h * repeats, x.size(2), x.size(3)}, x.dtype());
  dispatch_float(x.dtype(), "repeat_heads", [&](auto tag) {
    using T = decltype(tag);
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    for (int64_t bh = 0; bh < b * h; ++bh) {
      for (int64_t r = 0; r < repeats; ++r) {
        std::copy_n(src + bh * block, block, dst + (bh * repeats + r) * block);
      }
    }
  });
  return record("repeat_heads", out, {x}, [shape = x.shape(), repeats](const Tensor& g) {
    // (B,H*r,T,d) -> (B,H,r,T,d), summed over r
    return Grads{sum(reshape(g, {shape[0], shape[1], repeats, shape[2], shape[3]}), {2})};
  });
}

}  // namespace tinygpt
