#include "tinygpt/nn/dropout.hpp"

#include "tinygpt/autograd/ops.hpp"

namespace tinygpt::nn {

Dropout::Dropout(double p, std::shared_ptr<Generator> gen) : p_(p), gen_(std::move(gen)) {
  if (!(p >= 0.0 && p < 1.0)) {
    throw ValueError(fmt::format("Dropout: p must be in [0, 1), got {}", p));
  }
  if (!gen_) throw ValueError("Dropout: needs a generator");
}

Tensor Dropout::forward(const Tensor& x) const { return dropout(x, p_, is_training(), *gen_); }

}  // namespace tinygpt::nn
