#pragma once
#include <memory>

#include "tinygpt/nn/dropout.hpp"
#include "tinygpt/nn/linear.hpp"

namespace tinygpt::nn {

// The transformer's feed-forward: Linear(C, 4C) -> GELU -> Linear(4C, C) -> dropout.
class MLP : public Module {
 public:
  MLP(int64_t dim, double dropout, bool bias, Generator& init, std::shared_ptr<Generator> noise);
  Tensor forward(const Tensor& x) const;  // (..., C) -> (..., C)

  std::shared_ptr<Linear> c_fc;    // (C, 4C)
  std::shared_ptr<Linear> c_proj;  // (4C, C)
  std::shared_ptr<Dropout> drop;
};

}  // namespace tinygpt::nn
