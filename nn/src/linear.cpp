#include "tinygpt/nn/linear.hpp"

#include <cmath>

#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias, Generator& gen,
               WeightLayout layout)
    : layout_(layout) {
  if (in_features <= 0 || out_features <= 0) {
    throw ValueError(Operation("Linear"), fmt::format("sizes must be positive, got in={} out={}", in_features,
                                 out_features));
  }
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = register_parameter(
      "weight", layout == WeightLayout::in_out
                    ? Tensor::uniform({in_features, out_features}, gen, -bound, bound)
                    : Tensor::uniform({out_features, in_features}, gen, -bound, bound));
  if (with_bias) {
    bias = register_parameter("bias", Tensor::uniform({out_features}, gen, -bound, bound));
  }
}

Tensor Linear::forward(const Tensor& x, const Tensor& with_bias) const {
  if (x.ndim() < 1 || x.size(-1) != in_features()) {
    throw ShapeError(Operation("Linear"), fmt::format("input {} does not end in in_features={} (weight {})",
                                 x.shape().str(), in_features(), weight.shape().str()));
  }
  if (weight_bf16_ != nullptr && x.numel() == in_features()) {
    return linear_bf16(x, *weight_bf16_, with_bias);
  }
  if (x.ndim() == 1) return reshape(forward(reshape(x, {1, -1}), with_bias), {-1});
  if (layout_ == WeightLayout::in_out) return linear(x, weight, with_bias);
  const Tensor y = matmul(x, weight, false, true);  // (..., in) @ (out, in)^T
  return with_bias.defined() ? y + with_bias : y;
}

Tensor Linear::forward_gelu(const Tensor& h) const {
  if (layout_ == WeightLayout::in_out && weight_bf16_ == nullptr && h.ndim() >= 2 &&
      h.size(-1) == in_features()) {
    return gelu_linear(h, weight, bias);
  }
  return forward(gelu(h));  // which also names a bad shape
}

void Linear::keep_bf16_weight(bool keep) {
  weight_bf16_ = keep ? std::make_shared<const Bf16Weight>(weight, layout_ == WeightLayout::out_in)
                      : nullptr;
}

}  // namespace tinygpt::nn
