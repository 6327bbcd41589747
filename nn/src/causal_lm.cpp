#include "tinygpt/nn/causal_lm.hpp"

#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::nn {

Tensor CausalLM::loss(const Tensor& tokens, const Tensor& targets) {
  return cross_entropy(logits(tokens), targets, kIgnoreIndex);
}

}  // namespace tinygpt::nn
