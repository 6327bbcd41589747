#pragma once
// Gradient check: compares the tape's gradients with central finite differences in float64.
//
//   auto r = tinygpt::gradcheck([](const std::vector<Tensor>& in) { return my_op(in[0], in[1]); },
//                               {x, w});                 // f64 inputs; checks those requiring grad
//   if (!r.ok) fmt::print("{}\n", r.message());
//
// The function may return any shape: it is reduced to the scalar sum(f(x) * R) with a fixed
// random R, so every output element's gradient is exercised.
#include <functional>
#include <string>
#include <vector>

#include "tinygpt/autograd/tensor.hpp"

namespace tinygpt {

struct GradcheckOptions {
  double eps = 1e-5;   // finite-difference step
  double atol = 1e-8;  // pass when |analytic - numeric| <= atol + rtol * |numeric|
  double rtol = 1e-6;
  uint64_t seed = 1234;  // for the random projection R
};

struct GradcheckResult {
  bool ok = true;
  int64_t checked = 0;       // number of input elements checked
  // The worst element (largest |analytic - numeric| / (atol + rtol * |numeric|)):
  int64_t input = -1;        // which input
  int64_t index = -1;        // flat index inside that input
  double analytic = 0.0;
  double numeric = 0.0;
  double abs_error = 0.0;    // |analytic - numeric|
  double tolerance = 0.0;    // what it may be: atol + rtol * |numeric|, as torch.autograd.gradcheck
  // abs_error / tolerance: <= 1 passes. (A relative error would call a passing 1e-12 against an
  // exact zero gradient "100% off".)
  double error_ratio = 0.0;
  std::string message() const;
};

using GradcheckFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Inputs must be f64; only those with requires_grad() are checked.
GradcheckResult gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

}  // namespace tinygpt
