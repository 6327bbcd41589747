#pragma once
// Building blocks shared by the op families: broadcasting walks and elementwise maps over raw
// contiguous memory. Functors are template parameters, so the inner loops inline (no
// std::function or virtual call per element).

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "parallel_for.hpp"
#include "tinygpt/autograd/dispatch.hpp"
#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt::detail {

// Elementwise loops below this many elements stay on one thread: waking the others costs more
// than a shorter loop takes.
constexpr int64_t kParallelGrain = 1 << 15;

// NumPy broadcasting of two shapes; throws ShapeError naming `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Strides (in elements) of a contiguous tensor of shape `in` read as the broadcast shape `out`:
// 0 along broadcast axes; `in` is aligned to the right of `out`.
Shape broadcast_strides(const Shape& in, const Shape& out);

// Walks `out` (row-major) one row of its last axis at a time, calling
// row(out_offset, a_offset, b_offset, a_step, b_step, n), where a_step/b_step (0 or 1) step the
// operands along the row.
template <class Row>
void for_each_row2(const Shape& out, const Shape& a_strides, const Shape& b_strides, Row&& row) {
  const int64_t nd = out.ndim();
  if (nd == 0) {
    row(0, 0, 0, 0, 0, 1);
    return;
  }
  const int64_t n = out[nd - 1];
  const int64_t rows = n == 0 ? 0 : out.numel() / n;
  Shape index = out;  // the odometer over the leading axes
  for (int64_t d = 0; d < nd; ++d) index[d] = 0;
  int64_t a_off = 0, b_off = 0;
  for (int64_t r = 0; r < rows; ++r) {
    row(r * n, a_off, b_off, a_strides[nd - 1], b_strides[nd - 1], n);
    for (int64_t d = nd - 2; d >= 0; --d) {
      a_off += a_strides[d];
      b_off += b_strides[d];
      if (++index[d] < out[d]) break;
      a_off -= a_strides[d] * out[d];
      b_off -= b_strides[d] * out[d];
      index[d] = 0;
    }
  }
}

// out[i] = f(x[i]) over a new tensor of x's shape and dtype.
template <class T, class F>
Tensor map1(const Tensor& x, F f) {
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  const T* px = x.data<T>();
  T* po = out.data<T>();
  const int64_t n = x.numel();
  for_range(n > kParallelGrain, n, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = f(px[i]);
  });
  return out;
}

// out[i] = f(a[i], b[i]) for two tensors of one shape (used by backward passes).
template <class T, class F>
Tensor map2(const Tensor& a, const Tensor& b, F f) {
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  const int64_t n = a.numel();
  for_range(n > kParallelGrain, n, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) po[i] = f(pa[i], pb[i]);
  });
  return out;
}

// Walks the lanes of `shape` along `axis` (the runs of elements that differ only in their index
// on `axis`), in row-major order of the other axes, calling f(lane, offset, n, step): the lane's
// n elements sit at offset + k * step. When the lane is contiguous, step is the compile-time
// constant 1 so that f's inner loops vectorise. Lanes run in parallel when the tensor is large,
// so f must not throw.
template <class F>
void for_each_lane(const Shape& shape, int64_t axis, F&& f) {
  const int64_t n = shape[axis];
  int64_t inner = 1, lanes = 1;
  for (int64_t d = 0; d < shape.ndim(); ++d) {
    if (d > axis) inner *= shape[d];
    if (d != axis) lanes *= shape[d];
  }
  const bool parallel = lanes * n > kParallelGrain;
  // Empty lanes (n == 0) all start at offset 0: an empty tensor's data may be null, and even an
  // unused null + offset is undefined behaviour.
  if (inner == 1 || n == 0) {
    for_range(parallel, lanes, [&](int64_t lo, int64_t hi) {
      for (int64_t l = lo; l < hi; ++l) f(l, l * n, n, std::integral_constant<int64_t, 1>{});
    });
  } else {
    for_range(parallel, lanes, [&](int64_t lo, int64_t hi) {
      for (int64_t l = lo; l < hi; ++l) f(l, l / inner * n * inner + l % inner, n, inner);
    });
  }
}

// Largest of x[k * step] for k < n; -inf for an empty lane.
template <class T, class Step>
T lane_max(const T* x, int64_t n, Step step) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t k = 0; k < n; ++k) m = x[k * step] > m ? x[k * step] : m;
  return m;
}

// log(sum(exp(x))) over a lane, shifted by the lane maximum so that no exp overflows, and summed
// in double. -inf when every element is -inf (probability zero everywhere), not NaN.
template <class T, class Step>
double lane_logsumexp(const T* x, int64_t n, Step step) {
  const T m = lane_max(x, n, step);
  if (m == -std::numeric_limits<T>::infinity()) return -std::numeric_limits<double>::infinity();
  double total = 0.0;
  for (int64_t k = 0; k < n; ++k) total += std::exp(x[k * step] - m);
  return static_cast<double>(m) + std::log(total);
}

// Throws ValueError unless a and b have the same dtype.
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);

// Flat position of the first id outside [0, limit), ids equal to `skip` aside; -1 when all are
// valid. Throws ValueError naming `op` unless ids is i64.
int64_t first_bad_id(const Tensor& ids, int64_t limit, const char* op,
                     std::optional<int64_t> skip = std::nullopt);

// The multi-index of flat position `flat` inside `shape`, as "(1, 2)".
std::string index_str(const Shape& shape, int64_t flat);

}  // namespace tinygpt::detail
