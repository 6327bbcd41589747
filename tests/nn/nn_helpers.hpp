#pragma once
#include <algorithm>
#include <cmath>

#include "gradcheck_helpers.hpp"
#include "tinygpt/nn.hpp"

namespace tinygpt::testing {

// A small f32 GPT for behaviour tests.
inline nn::GPTConfig tiny_config(int64_t layers = 2) {
  nn::GPTConfig c;
  c.vocab_size = 11;
  c.block_size = 8;
  c.n_layer = layers;
  c.n_head = 2;
  c.n_embd = 8;
  return c;
}

inline Tensor random_ids(const Shape& shape, int64_t vocab, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> ids(static_cast<size_t>(shape.numel()));
  for (auto& id : ids) id = gen.randint(vocab);
  return Tensor::from_ids(ids, shape);
}

// Fails with the largest difference unless every element of got is within tol of want.
inline void require_all_close(const std::vector<double>& got, const std::vector<double>& want,
                              double tol) {
  REQUIRE(got.size() == want.size());
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  INFO("largest difference " << worst);
  REQUIRE(worst <= tol);
}

// Gradient-checks `module`'s forward with respect to all its parameters (and `inputs` that
// require grad), in f64.
template <class M, class F>
void require_module_gradcheck(M& module, std::vector<Tensor> inputs, F forward) {
  module.to(DType::f64);
  std::vector<Tensor> all = inputs;
  for (Tensor p : module.parameters()) all.push_back(p);
  REQUIRE_GRADCHECK([&](const std::vector<Tensor>& in) { return forward(in); }, all);
}

}  // namespace tinygpt::testing
