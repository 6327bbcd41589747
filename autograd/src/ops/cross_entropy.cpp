// The training loss: log-softmax and negative log-likelihood fused, so the (..., V)
// log-probabilities are never materialised; the backward needs only the logits and one
// log-sum-exp per row.
#include <algorithm>
#include <cmath>

#include "common.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {
namespace {

using namespace detail;

void check_targets(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
  const Shape& ls = logits.shape();
  Shape rows;  // logits' shape without the class axis
  for (int64_t d = 0; d + 1 < ls.ndim(); ++d) rows.push_back(ls[d]);
  if (ls.ndim() == 0 || targets.shape() != rows) {
    throw ShapeError(fmt::format(
        "cross_entropy: targets of shape {} do not match logits of shape {} (want logits (..., V) "
        "and targets (...))",
        targets.shape().str(), ls.str()));
  }
  const int64_t classes = ls[ls.ndim() - 1];
  const int64_t bad = first_bad_id(targets, classes, "cross_entropy", ignore_index);
  if (bad >= 0) {
    throw IndexError(fmt::format(
        "cross_entropy: target {} at position {} of targets {} is outside [0, {}) for logits {} "
        "(ignore_index {})",
        targets.data<int64_t>()[bad], index_str(targets.shape(), bad), targets.shape().str(),
        classes, ls.str(), ignore_index));
  }
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
  check_targets(logits, targets, ignore_index);
  const int64_t axis = logits.ndim() - 1;
  const int64_t* pt = targets.data<int64_t>();
  Tensor lse = Tensor::empty(targets.shape(), DType::f64);  // (...) log-sum-exp of each row
  double* pl = lse.data<double>();
  int64_t count = 0;
  const double total = dispatch_float(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    const T* px = logits.data<T>();  // (..., V)
    for_each_lane(logits.shape(), axis, [&](int64_t row, int64_t offset, int64_t n, auto step) {
      pl[row] = pt[row] == ignore_index ? 0.0 : lane_logsumexp(px + offset, n, step);
    });
    // Serial, in row order, so the loss does not depend on the thread count.
    double sum = 0.0;
    const int64_t classes = logits.shape()[axis];
    for (int64_t row = 0; row < targets.numel(); ++row) {
      if (pt[row] == ignore_index) continue;
      sum += pl[row] - px[row * classes + pt[row]];
      ++count;
    }
    return sum;
  });
  Tensor out = Tensor::scalar(count > 0 ? total / static_cast<double>(count) : 0.0, logits.dtype());
  return record("cross_entropy", out, {logits},
                [x = logits.detach(), targets = targets.detach(), lse, count,
                 ignore_index](const Tensor& g) {
    // d loss / d logits = (softmax - onehot(target)) * g / count; ignored rows get zeros.
    const double scale = count > 0 ? g.item() / static_cast<double>(count) : 0.0;
    Tensor dx = Tensor::empty(x.shape(), x.dtype());
    dispatch_float(x.dtype(), "cross_entropy", [&](auto tag) {
      using T = decltype(tag);
      const T* px = x.data<T>();  // (..., V)
      const int64_t* pt = targets.data<int64_t>();
      const double* pl = lse.data<double>();
      T* pd = dx.data<T>();  // (..., V)
      for_each_lane(x.shape(), x.ndim() - 1, [&](int64_t row, int64_t offset, int64_t n, auto) {
        const T* xr = px + offset;
        T* dr = pd + offset;
        if (pt[row] == ignore_index) {
          std::fill_n(dr, n, T(0));
          return;
        }
        const T shift = static_cast<T>(pl[row]), s = static_cast<T>(scale);
        for (int64_t k = 0; k < n; ++k) dr[k] = s * std::exp(xr[k] - shift);
        dr[pt[row]] -= s;
      });
    });
    return std::vector<Tensor>{dx};
  });
}

}  // namespace tinygpt
