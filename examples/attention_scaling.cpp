// Why attention divides scores by sqrt(d_k): dot products of random unit-variance vectors have
// variance d_k, so unscaled softmax saturates (one key takes nearly all the weight, gradients
// vanish) as d_k grows, while scaled scores keep unit variance at every width.
#include <fmt/format.h>

#include "tinygpt/autograd/ops.hpp"

using namespace tinygpt;

int main() {
  constexpr int64_t kKeys = 16, kTrials = 200;
  Generator gen(7);
  fmt::print("mean max softmax probability over {} keys ({} random queries each)\n", kKeys, kTrials);
  fmt::print("{:>6} {:>12} {:>12}\n", "d_k", "unscaled", "scaled");
  for (int64_t d : {8, 64, 512}) {
    const Tensor q = Tensor::randn({kTrials, 1, d}, gen, DType::f64);
    const Tensor k = Tensor::randn({kTrials, kKeys, d}, gen, DType::f64);
    const Tensor scores = matmul(q, k, false, true);  // (trials, 1, keys)
    const double unscaled = mean(max(softmax(scores, -1), {-1})).item();
    const double scaled = mean(max(softmax(scores / std::sqrt(static_cast<double>(d)), -1), {-1})).item();
    fmt::print("{:>6} {:>12.4f} {:>12.4f}\n", d, unscaled, scaled);
  }
  fmt::print("(uniform attention would be {:.4f})\n", 1.0 / kKeys);
}
