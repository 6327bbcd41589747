#pragma once
#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/nn/module.hpp"

namespace tinygpt::nn {

// y = x @ weight + bias over the last axis of x.
//
// weight is stored (in, out), as GPT-2's Conv1D stores it, so checkpoints use Hugging Face's
// GPT-2 shapes unchanged, and x (B,T,in) @ weight (in,out) is one BLAS call with no transpose.
// Initialised as PyTorch does: uniform in +-1/sqrt(in).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias, Generator& gen);
  Tensor forward(const Tensor& x) const;

  Tensor weight;  // (in, out)
  Tensor bias;    // (out), undefined without bias
};

}  // namespace tinygpt::nn
