#pragma once
#include <memory>

#include "tinygpt/autograd/generator.hpp"
#include "tinygpt/nn/module.hpp"

namespace tinygpt::nn {

// Inverted dropout in training mode, identity in eval mode. The generator is shared (a model
// hands one to all its dropout layers) so a checkpoint can save one state for all of them.
class Dropout : public Module {
 public:
  Dropout(double p, std::shared_ptr<Generator> gen);
  Tensor forward(const Tensor& x) const;
  double p() const { return p_; }

 private:
  double p_;
  std::shared_ptr<Generator> gen_;
};

}  // namespace tinygpt::nn
