#pragma once
// How close two sets of GPT weights are, for runs that compute the same mathematics with a
// different float rounding (a batch in one piece or in micro-batches, one process or several).
//
// Per tensor, the relative L2 difference ||a - b|| / ||b||: elementwise relative error means
// nothing for a weight that happens to sit near zero. One slice is set apart: the key part of
// each attn.c_attn.bias, whose gradient is zero in exact arithmetic (softmax ignores a shift
// shared by every key), so every run moves it by rounding noise that AdamW, which divides each
// gradient by its own size, turns into steps of up to ~lr / 100. Its largest absolute difference
// is reported on its own.
#include <algorithm>
#include <cmath>
#include <string>

#include "tinygpt/nn/module.hpp"

namespace tinygpt::testing {

struct WeightsDiff {
  double worst_relative = 0.0;  // over every tensor (the key biases' slices left out)
  std::string worst_name;
  double key_bias_abs = 0.0;  // largest |a - b| over the key biases
};

inline WeightsDiff compare_weights(const nn::NamedTensors& a, const nn::NamedTensors& b) {
  WeightsDiff diff;
  if (a.size() != b.size()) throw std::runtime_error("compare_weights: different tensor counts");
  for (size_t t = 0; t < a.size(); ++t) {
    const auto& [name, ta] = a[t];
    const Tensor& tb = b[t].second;
    if (name != b[t].first || ta.shape() != tb.shape()) {
      throw std::runtime_error("compare_weights: " + name + " vs " + b[t].first);
    }
    const std::vector<double> va = ta.to_vector(), vb = tb.to_vector();
    const std::string suffix = "attn.c_attn.bias";
    const bool c_attn_bias = name.size() >= suffix.size() &&
                             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    const size_t width = va.size() / 3;  // (3C,): queries, keys, values
    double d2 = 0.0, n2 = 0.0;
    for (size_t i = 0; i < va.size(); ++i) {
      const double d = va[i] - vb[i];
      if (c_attn_bias && i >= width && i < 2 * width) {
        diff.key_bias_abs = std::max(diff.key_bias_abs, std::abs(d));
        continue;
      }
      d2 += d * d;
      n2 += vb[i] * vb[i];
    }
    const double relative = n2 > 0 ? std::sqrt(d2 / n2) : std::sqrt(d2);
    if (relative >= diff.worst_relative) {
      diff.worst_relative = relative;
      diff.worst_name = name;
    }
  }
  return diff;
}

}  // namespace tinygpt::testing
