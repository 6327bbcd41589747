#pragma once
// How closely Performer attention (FAVOR+ random features) approximates exact softmax attention:
// the relative error ||performer - softmax|| / ||softmax|| of causal attention outputs on random
// q, k, v, averaged over independent draws of the features. Used by examples/performer_error.cpp
// (the table in docs/ATTENTION_VARIANTS.md) and by the test that asserts its trend.
#include <cmath>
#include <cstdint>

#include "tinygpt/nn/attention.hpp"

namespace tinygpt::examples {

struct PerformerErrorSetup {
  int64_t heads = 4, t = 64, d = 16;
  // Standard deviation of q's and k's entries: 0.5 gives scores q.k / sqrt(d) of std 0.25. The
  // estimator's variance grows as exp(|q + k|^2 / sqrt(d)), so larger q and k need more features.
  double scale = 0.5;
  int64_t draws = 8;   // feature matrices averaged over
  uint64_t seed = 1;
};

// The mean relative error with `features` random features per head (f64 throughout).
inline double performer_error(int64_t features, const PerformerErrorSetup& s = {}) {
  Generator data(s.seed);
  const Shape shape{1, s.heads, s.t, s.d};
  const Tensor q = Tensor::randn(shape, data, DType::f64, 0.0, s.scale);
  const Tensor k = Tensor::randn(shape, data, DType::f64, 0.0, s.scale);
  const Tensor v = Tensor::randn(shape, data, DType::f64);
  const Tensor mask = nn::causal_mask(s.t, s.t).to(DType::f64);
  const Tensor exact = nn::scaled_dot_product_attention(q, k, v, mask).output;
  const double exact_norm = std::sqrt(sum(exact * exact).item());
  double total = 0.0;
  for (int64_t draw = 0; draw < s.draws; ++draw) {
    Generator gen(s.seed * 1000 + static_cast<uint64_t>(draw));
    const Tensor omega = nn::orthogonal_random_features(features, s.d, gen).to(DType::f64);
    const Tensor approx = nn::feature_attention(performer_features(q, omega, true),
                                                performer_features(k, omega, false), v, mask)
                              .output;
    const Tensor diff = approx - exact;
    total += std::sqrt(sum(diff * diff).item()) / exact_norm;
  }
  return total / static_cast<double>(s.draws);
}

}  // namespace tinygpt::examples
