#include "tinygpt/nn/layer_norm.hpp"

#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::nn {

LayerNorm::LayerNorm(int64_t dim, double eps_, bool with_bias) : eps(eps_) {
  if (dim <= 0) throw ValueError(Operation("LayerNorm"), fmt::format("dim must be positive, got {}", dim));
  weight = register_parameter("weight", Tensor::ones({dim}));
  if (with_bias) bias = register_parameter("bias", Tensor::zeros({dim}));
}

Tensor LayerNorm::forward(const Tensor& x) const { return layer_norm(x, weight, bias, eps); }

}  // namespace tinygpt::nn
