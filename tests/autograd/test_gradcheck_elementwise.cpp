// float64 gradient checks of the elementwise ops: binary with broadcasting, scalar overloads,
// and every unary op.
#include "autograd_test_utils.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

using BinaryOp = Tensor (*)(const Tensor&, const Tensor&);

// Every broadcasting pattern the binary ops must handle, as (a, b) shape pairs.
const std::vector<std::pair<Shape, Shape>> kBroadcastCases = {
    {{3, 4}, {3, 4}},      // same shape
    {{3, 4}, {4}},         // trailing vector
    {{4}, {3, 4}},         // the other way round
    {{2, 1, 4}, {3, 1}},   // both operands broadcast
    {{}, {2, 3}},          // scalar-shaped ()
    {{2, 3}, {}},
    {{2, 3, 1}, {1, 1, 5}},
};

// Checks op over every broadcast case; b is kept in [0.5, 1.5) so that div is smooth.
void check_broadcasting(BinaryOp op) {
  for (const auto& [sa, sb] : kBroadcastCases) {
    CAPTURE(sa.str(), sb.str());
    REQUIRE_GRADCHECK([op](const Inputs& in) { return op(in[0], in[1]); },
                      {leaf(sa, 1), uniform_leaf(sb, 2, 0.5, 1.5)});
  }
}

Tensor add_op(const Tensor& a, const Tensor& b) { return a + b; }
Tensor sub_op(const Tensor& a, const Tensor& b) { return a - b; }
Tensor mul_op(const Tensor& a, const Tensor& b) { return a * b; }
Tensor div_op(const Tensor& a, const Tensor& b) { return a / b; }

}  // namespace

TEST_CASE("gradcheck add with broadcasting, including () and (3,4)+(4)", "[gradcheck][ops]") {
  check_broadcasting(add_op);
}

TEST_CASE("gradcheck sub with broadcasting", "[gradcheck][ops]") { check_broadcasting(sub_op); }

TEST_CASE("gradcheck mul with broadcasting, including (2,1,4)*(3,1)", "[gradcheck][ops]") {
  check_broadcasting(mul_op);
}

TEST_CASE("gradcheck div with broadcasting", "[gradcheck][ops]") { check_broadcasting(div_op); }

TEST_CASE("gradcheck binary ops with one operand not requiring grad", "[gradcheck][ops]") {
  const Tensor constant = Tensor::from({0.5, 2.0, -1.5, 3.0}, {4}, DType::f64);
  for (BinaryOp op : {add_op, sub_op, mul_op, div_op}) {
    REQUIRE_GRADCHECK([=](const Inputs& in) { return op(in[0], constant); },
                      {leaf({3, 4}, 3)});
    REQUIRE_GRADCHECK([=](const Inputs& in) { return op(constant, in[0]); },
                      {uniform_leaf({2, 1}, 4, 0.5, 1.5)});
  }
}

TEST_CASE("gradcheck the same tensor on both sides of a binary op", "[gradcheck][ops]") {
  for (BinaryOp op : {add_op, sub_op, mul_op, div_op}) {
    REQUIRE_GRADCHECK([op](const Inputs& in) { return op(in[0], in[0]); },
                      {uniform_leaf({5}, 5, 0.5, 1.5)});
  }
}

TEST_CASE("gradcheck the scalar overloads: a+s, s+a, a-s, s-a, a*s, s*a, a/s, s/a",
          "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(
      [](const Inputs& in) {
        const Tensor& a = in[0];
        return (a + 1.5) * (2.5 + a) - (a - 0.5) * (3.0 - a) + a * -2.0 + 4.0 * a + a / 3.0 +
               2.0 / a;
      },
      {uniform_leaf({2, 3}, 6, 0.5, 1.5)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return rsub(2.0, in[0]) * rdiv(3.0, in[0]); },
                    {uniform_leaf({4}, 7, 0.5, 1.5)});
}

TEST_CASE("gradcheck neg", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return -in[0]; }, {leaf({3, 4}, 8)});
}

TEST_CASE("gradcheck pow with integer, fractional and negative exponents", "[gradcheck][ops]") {
  for (double p : {2.0, 3.0, 0.5, -1.5, 1.0, 0.0}) {
    CAPTURE(p);
    REQUIRE_GRADCHECK([p](const Inputs& in) { return pow(in[0], p); },
                      {uniform_leaf({3, 4}, 9, 0.5, 2.0)});
  }
  REQUIRE_GRADCHECK([](const Inputs& in) { return pow(in[0], 3.0); }, {leaf({5}, 10)});
}

TEST_CASE("gradcheck exp", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return exp(in[0]); }, {leaf({3, 4}, 11)});
}

TEST_CASE("gradcheck log on positive inputs", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return log(in[0]); },
                    {uniform_leaf({3, 4}, 12, 0.1, 3.0)});
}

TEST_CASE("gradcheck sqrt on positive inputs", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return sqrt(in[0]); },
                    {uniform_leaf({3, 4}, 13, 0.1, 3.0)});
}

TEST_CASE("gradcheck tanh", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return tanh(in[0]); }, {leaf({3, 4}, 14, 2.0)});
}

TEST_CASE("gradcheck sigmoid on both signs and large magnitudes", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return sigmoid(in[0]); }, {leaf({3, 4}, 15, 3.0)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return sigmoid(in[0]); },
                    {Tensor::from({-30, -8, 8, 30}, {4}, DType::f64).set_requires_grad()});
}

TEST_CASE("gradcheck relu on inputs away from 0", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return relu(in[0]); },
                    {away_from_zero_leaf({4, 5}, 16)});
}

TEST_CASE("gradcheck gelu", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return gelu(in[0]); }, {leaf({4, 5}, 17, 2.0)});
}

TEST_CASE("gradcheck a composite of unary and binary ops", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(
      [](const Inputs& in) {
        return tanh(in[0] * in[1]) + sigmoid(in[0]) * exp(-in[1]) +
               log(sqrt(in[1] * in[1] + 1.0)) / (gelu(in[0]) + 2.0);
      },
      {leaf({3, 4}, 18), leaf({4}, 19)});
}

TEST_CASE("gelu_erf is x Phi(x), BERT's exact GELU", "[ops][gelu]") {
  const Tensor y = gelu_erf(Tensor::from({-2.0, 0.0, 1.0, 3.0}, {4}, DType::f64));
  // x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2 from Python's math.erf
  const std::vector<double> want{-0.04550026389635842, 0.0, 0.8413447460685429, 2.99595030590511};
  for (size_t i = 0; i < want.size(); ++i) CHECK(y.to_vector()[i] == Approx(want[i]).epsilon(1e-14));
}

TEST_CASE("gradcheck gelu_erf", "[gradcheck][ops][gelu]") {
  REQUIRE_GRADCHECK([](const std::vector<Tensor>& in) { return gelu_erf(in[0]); },
                    {leaf({3, 7}, 21, 2.0)});
}
