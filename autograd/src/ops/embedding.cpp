// Row lookup into a (V, C) table: the token embedding of the model.
#include <algorithm>

#include "common.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {

using namespace detail;

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  if (weight.ndim() != 2) {
    throw ShapeError(fmt::format("embedding: weight must be (V, C), got {} (ids {})",
                                 weight.shape().str(), ids.shape().str()));
  }
  const int64_t vocab = weight.shape()[0], c = weight.shape()[1];
  const int64_t bad = first_bad_id(ids, vocab, "embedding");
  if (bad >= 0) {
    throw IndexError(fmt::format(
        "embedding: id {} at position {} of ids {} is outside [0, {}) for weight {}",
        ids.data<int64_t>()[bad], index_str(ids.shape(), bad), ids.shape().str(), vocab,
        weight.shape().str()));
  }
  Shape shape = ids.shape();
  shape.push_back(c);
  Tensor out = Tensor::empty(shape, weight.dtype());
  dispatch_float(weight.dtype(), "embedding", [&](auto tag) {
    using T = decltype(tag);
    const T* pw = weight.data<T>();  // (V, C)
    const int64_t* pi = ids.data<int64_t>();
    T* po = out.data<T>();  // (N, C)
    const int64_t n = ids.numel();
    for_range(n * c > kParallelGrain, n, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) std::copy_n(pw + pi[i] * c, c, po + i * c);
    });
  });
  return record("embedding", out, {weight}, [vocab, c, ids = ids.detach()](const Tensor& g) {
    Tensor gw = Tensor::zeros({vocab, c}, g.dtype());
    dispatch_float(g.dtype(), "embedding", [&](auto tag) {
      using T = decltype(tag);
      const T* pg = g.data<T>();  // (N, C)
      const int64_t* pi = ids.data<int64_t>();
      T* pw = gw.data<T>();  // (V, C)
      // Serial: a repeated id scatters into the same row, so rows cannot be split by position.
      for (int64_t i = 0; i < ids.numel(); ++i) {
        T* row = pw + pi[i] * c;
        for (int64_t j = 0; j < c; ++j) row[j] += pg[i * c + j];
      }
    });
    return std::vector<Tensor>{gw};
  });
}

}  // namespace tinygpt
