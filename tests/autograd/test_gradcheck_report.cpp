// What gradcheck itself decides and says: |analytic - numeric| against atol + rtol * |numeric|,
// as torch.autograd.gradcheck judges it.
#include "autograd_test_utils.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

TEST_CASE("gradcheck passes a zero gradient whose finite difference is round-off, and says so",
          "[gradcheck][report]") {
  // (x + 10) - x: the gradient is exactly 0; the central difference is ~1e-11 of round-off, so a
  // relative error would read 100%.
  const GradcheckResult r =
      gradcheck([](const Inputs& in) { return (in[0] + 10.0) - in[0]; }, {leaf({3, 4}, 1)});
  INFO(r.message());
  CHECK(r.ok);
  CHECK(r.error_ratio <= 1.0);
  CHECK(r.abs_error <= r.tolerance);
  CHECK(r.tolerance == GradcheckOptions{}.atol + GradcheckOptions{}.rtol * std::abs(r.numeric));
  CHECK_THAT(r.message(), Catch::Matchers::StartsWith("gradcheck passed: 12 elements checked") &&
                              Catch::Matchers::Contains("<= atol + rtol * |numeric|"));
}

TEST_CASE("gradcheck fails a wrong gradient and names the worst element", "[gradcheck][report]") {
  // x.detach() * x: the tape sees d/dx = x.detach(), the truth is 2x.
  const GradcheckResult r =
      gradcheck([](const Inputs& in) { return in[0].detach() * in[0]; }, {leaf({5}, 2)});
  INFO(r.message());
  CHECK_FALSE(r.ok);
  CHECK(r.error_ratio > 1.0);
  CHECK(r.numeric == Approx(2.0 * r.analytic).epsilon(1e-6));
  CHECK_THAT(r.message(), Catch::Matchers::StartsWith("gradcheck FAILED: 5 elements checked") &&
                              Catch::Matchers::Contains("> atol + rtol * |numeric|"));
}
