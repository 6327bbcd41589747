#include "tinygpt/nn/dropout.hpp"

#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::nn {

Dropout::Dropout(double p, std::shared_ptr<Generator> gen) : p_(p), gen_(std::move(gen)) {
  if (!(p >= 0.0 && p < 1.0)) {
    throw ValueError(Operation("Dropout"), fmt::format("p must be in [0, 1), got {}", p));
  }
  if (!gen_) throw ValueError(Operation("Dropout"), "needs a generator");
}

Tensor Dropout::forward(const Tensor& x) const { return dropout(x, p_, is_training(), *gen_); }

}  // namespace tinygpt::nn
