#pragma once
#include "tinygpt/nn/module.hpp"

namespace tinygpt::nn {

// Normalises the last axis to zero mean and unit variance, then scales and shifts.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool bias = true);
  Tensor forward(const Tensor& x) const;

  Tensor weight;  // (dim), ones
  Tensor bias;    // (dim), zeros; undefined without bias
  double eps;
};

}  // namespace tinygpt::nn
