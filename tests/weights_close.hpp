#pragma once
// How close two sets of GPT weights are, for runs that compute the same mathematics with a
// different float rounding (a batch in one piece or in micro-batches, one process or several).
//
// Per tensor, the relative L2 difference ||a - b|| / ||b||: an elementwise relative error means
// nothing for a weight that happens to sit near zero, and AdamW, which divides each gradient by
// its own size, turns the rounding of a tiny gradient into a step of a few lr x 1e-4. (The key
// biases take part too: their gradient is the exact zero, nn/src/attention.cpp says why.)
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "tinygpt/nn/module.hpp"

namespace tinygpt::testing {

struct WeightsDiff {
  double worst_relative = 0.0;  // over every tensor
  std::string worst_name;
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
    double d2 = 0.0, n2 = 0.0;
    for (size_t i = 0; i < va.size(); ++i) {
      d2 += (va[i] - vb[i]) * (va[i] - vb[i]);
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
