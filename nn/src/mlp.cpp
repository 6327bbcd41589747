#include "tinygpt/nn/mlp.hpp"

#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::nn {

MLP::MLP(int64_t dim, double dropout, bool bias, Generator& init,
         std::shared_ptr<Generator> noise) {
  c_fc = register_module("c_fc", std::make_shared<Linear>(dim, 4 * dim, bias, init));
  c_proj = register_module("c_proj", std::make_shared<Linear>(4 * dim, dim, bias, init));
  drop = register_module("dropout", std::make_shared<Dropout>(dropout, std::move(noise)));
}

Tensor MLP::forward(const Tensor& x) const {
  return drop->forward(c_proj->forward_gelu(c_fc->forward(x)));
}

}  // namespace tinygpt::nn
