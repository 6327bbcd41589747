// Bf16Weight and linear_bf16: generation's one-row products on weights kept in bf16.
#include "tinygpt/autograd/bf16_weight.hpp"

#include <algorithm>
#include <vector>

#include "kernels/avx512_clones.hpp"
#include "kernels/gemv.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {

Bf16Weight::Bf16Weight(const Tensor& weight, bool transposed) {
  if (weight.ndim() != 2 || weight.dtype() != DType::f32) {
    throw ShapeError(Operation("Bf16Weight"), fmt::format("expects an f32 matrix, got {} {}",
                                                          weight.shape().str(),
                                                          dtype_name(weight.dtype())));
  }
  k_ = weight.size(transposed ? 1 : 0);
  n_ = weight.size(transposed ? 0 : 1);
  stride_ = (k_ + 31) / 32 * 32;
  words_.assign(static_cast<size_t>(n_ * stride_), 0);
  const float* pw = weight.data<float>();
  if (transposed) {
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < n_; ++j) {
      for (int64_t i = 0; i < k_; ++i) words_[j * stride_ + i] = kernels::round_to_bf16(pw[j * k_ + i]);
    }
    return;
  }
  // Row j of the layout is column j of W (K, N), taken 16 columns by 32 rows at a time: one cache
  // line of each of the 32 rows of W serves all 16, where a whole column per row would miss the
  // cache at every value.
  const int64_t strips = (n_ + 15) / 16;
#pragma omp parallel for schedule(static)
  for (int64_t strip = 0; strip < strips; ++strip) {
    const int64_t j1 = std::min(n_, 16 * strip + 16);
    for (int64_t i0 = 0; i0 < k_; i0 += 32) {
      const int64_t i1 = std::min(k_, i0 + 32);
      for (int64_t j = 16 * strip; j < j1; ++j) {
        for (int64_t i = i0; i < i1; ++i) words_[j * stride_ + i] = kernels::round_to_bf16(pw[i * n_ + j]);
      }
    }
  }
}

Tensor linear_bf16(const Tensor& x, const Bf16Weight& weight, const Tensor& bias, bool portable) {
  const int64_t k = weight.in_features(), n = weight.out_features();
  if (x.dtype() != DType::f32 || x.ndim() < 1 || x.numel() != k || x.size(-1) != k ||
      (bias.defined() && (bias.shape() != Shape{n} || bias.dtype() != DType::f32))) {
    throw ShapeError(Operation("linear_bf16"),
                     fmt::format("expects one f32 row of {} values and bias ({}), got x {} {}, bias {}",
                                 k, n, x.shape().str(), dtype_name(x.dtype()),
                                 bias.defined() ? bias.shape().str() : "none"));
  }
  if (grad_enabled() && x.requires_grad()) {
    throw ValueError(Operation("linear_bf16"), "records no gradient: run it under NoGradGuard");
  }
  thread_local std::vector<uint16_t> x16;
  x16.assign(static_cast<size_t>(weight.row_stride()), 0);
  for (int64_t i = 0; i < k; ++i) x16[static_cast<size_t>(i)] = kernels::round_to_bf16(x.data<float>()[i]);
  Shape out_shape = x.shape();
  out_shape[out_shape.ndim() - 1] = n;
  Tensor out = Tensor::empty(out_shape, DType::f32);
  kernels::gemv_bf16(x16.data(), weight.rows(), weight.row_stride(), n,
                     bias.defined() ? bias.data<float>() : nullptr, out.data<float>(),
                     !portable && kernels::use_avx512_bf16());
  return out;
}

}  // namespace tinygpt
