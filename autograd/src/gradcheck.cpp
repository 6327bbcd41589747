#include "tinygpt/autograd/gradcheck.hpp"

#include <cmath>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt {

std::string GradcheckResult::message() const {
  if (checked == 0) return "gradcheck: no input requires grad";
  return fmt::format(
      "gradcheck {}: {} elements checked; worst is input {} element {}: analytic {:.12g}, "
      "numeric {:.12g}, |error| {:.3g} {} atol + rtol * |numeric| = {:.3g} ({:.3g} of it)",
      ok ? "passed" : "FAILED", checked, input, index, analytic, numeric, abs_error,
      ok ? "<=" : ">", tolerance, error_ratio);
}

GradcheckResult gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].requires_grad() && inputs[i].dtype() != DType::f64) {
      throw ValueError(fmt::format("gradcheck: input {} of shape {} is {}; finite differences "
                                   "need f64 inputs",
                                   i, inputs[i].shape().str(), dtype_name(inputs[i].dtype())));
    }
  }
  // Reduce any output to a scalar with a fixed random projection R.
  Tensor projection;
  {
    NoGradGuard no_grad;
    const Tensor out = f(inputs);
    if (out.dtype() != DType::f64) {
      throw ValueError(fmt::format("gradcheck: the function returned {}, not f64",
                                   dtype_name(out.dtype())));
    }
    Generator gen(options.seed);
    projection = Tensor::randn(out.shape(), gen, DType::f64);
  }
  auto objective = [&] {
    NoGradGuard no_grad;
    return sum(f(inputs) * projection).item();
  };

  // Analytic gradients, keeping whatever .grad the caller had.
  std::vector<Tensor> saved;
  for (Tensor in : inputs) {
    saved.push_back(in.grad());
    in.zero_grad();
  }
  sum(f(inputs) * projection).backward();

  GradcheckResult r;
  double worst = -1.0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor in = inputs[i];
    if (!in.requires_grad()) continue;
    const Tensor analytic = in.grad().defined() ? in.grad() : Tensor::zeros(in.shape(), DType::f64);
    const double* a = analytic.data<double>();
    double* x = in.data<double>();
    for (int64_t j = 0; j < in.numel(); ++j) {
      const double original = x[j];
      x[j] = original + options.eps;
      const double plus = objective();
      x[j] = original - options.eps;
      const double minus = objective();
      x[j] = original;
      const double numeric = (plus - minus) / (2 * options.eps);
      const double err = std::abs(a[j] - numeric);
      const double tolerance = options.atol + options.rtol * std::abs(numeric);
      const double score = err / tolerance;
      ++r.checked;
      if (!(score <= 1.0)) r.ok = false;  // also catches NaN
      if (!(score <= worst)) {
        worst = std::isnan(score) ? INFINITY : score;
        r.input = static_cast<int64_t>(i);
        r.index = j;
        r.analytic = a[j];
        r.numeric = numeric;
        r.abs_error = err;
        r.tolerance = tolerance;
        r.error_ratio = score;
      }
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) Tensor(inputs[i]).set_grad(saved[i]);
  return r;
}

}  // namespace tinygpt
