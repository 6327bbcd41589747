// float64 gradient checks of the reductions over every axis, several axes and all axes, with
// and without keepdim, and of broadcast_to / sum_to.
#include "autograd_test_utils.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

using Axes = std::vector<int64_t>;
using Reduce = Tensor (*)(const Tensor&, const Axes&, bool);

// Every way of choosing axes of a (2, 3, 4) tensor, negative ones included; {} means all.
const std::vector<Axes> kAxisCases = {{0}, {1}, {2}, {-1}, {0, 2}, {1, -1}, {2, 0}, {0, 1, 2}, {}};

// Reduces over each axis choice, keepdim both ways. max needs an input without ties.
void check_axes(Reduce reduce, const Tensor& input) {
  for (const Axes& axes : kAxisCases) {
    for (bool keepdim : {false, true}) {
      CAPTURE(axes, keepdim);
      REQUIRE_GRADCHECK([&](const Inputs& in) { return reduce(in[0], axes, keepdim); }, {input});
    }
  }
}

Tensor sum_op(const Tensor& x, const Axes& axes, bool keepdim) { return sum(x, axes, keepdim); }
Tensor mean_op(const Tensor& x, const Axes& axes, bool keepdim) { return mean(x, axes, keepdim); }
Tensor max_op(const Tensor& x, const Axes& axes, bool keepdim) { return max(x, axes, keepdim); }

// (2, 3, 4) with distinct values at least 0.1 apart, so no finite difference crosses a tie.
Tensor distinct_leaf() {
  Tensor t = Tensor::arange(24, DType::f64) * 0.1;
  Generator gen(3);
  std::vector<double> v = t.to_vector();
  for (size_t i = v.size() - 1; i > 0; --i) {
    std::swap(v[i], v[static_cast<size_t>(gen.randint(static_cast<int64_t>(i) + 1))]);
  }
  return Tensor::from(v, {2, 3, 4}, DType::f64).set_requires_grad();
}

}  // namespace

TEST_CASE("gradcheck sum over each axis, several axes and all, keepdim both ways",
          "[gradcheck][ops]") {
  check_axes(sum_op, leaf({2, 3, 4}, 1));
  REQUIRE_GRADCHECK([](const Inputs& in) { return sum(in[0]); }, {leaf({2, 3}, 2)});
}

TEST_CASE("gradcheck mean over each axis, several axes and all, keepdim both ways",
          "[gradcheck][ops]") {
  check_axes(mean_op, leaf({2, 3, 4}, 3));
  REQUIRE_GRADCHECK([](const Inputs& in) { return mean(in[0]); }, {leaf({2, 3}, 4)});
}

TEST_CASE("gradcheck max over each axis, several axes and all, keepdim both ways",
          "[gradcheck][ops]") {
  check_axes(max_op, distinct_leaf());
}

TEST_CASE("max shares the gradient equally among tied maxima", "[ops]") {
  const Tensor x = Tensor::from({1, 3, 3, 2, 5, 5, 5, 0}, {2, 4}, DType::f64).set_requires_grad();
  const Tensor m = max(x, {1});
  REQUIRE(m.to_vector() == std::vector<double>{3, 5});
  sum(m).backward();
  REQUIRE(x.grad().to_vector() ==
          std::vector<double>{0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0});
}

TEST_CASE("gradcheck reductions of a 0-d and a 1-element tensor", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return sum(in[0]) + mean(in[0]); }, {leaf({}, 5)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return max(in[0], {0}, true); }, {leaf({1, 3}, 6)});
}

TEST_CASE("gradcheck broadcast_to over new leading and size-1 axes", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return broadcast_to(in[0], {2, 3, 4}); },
                    {leaf({3, 1}, 7)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return broadcast_to(in[0], {5, 2}); }, {leaf({}, 8)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return broadcast_to(in[0], {2, 3}); },
                    {leaf({2, 3}, 9)});
}

TEST_CASE("gradcheck sum_to over leading and size-1 axes", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return sum_to(in[0], {3, 1}); },
                    {leaf({2, 3, 4}, 10)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return sum_to(in[0], {}); }, {leaf({2, 3}, 11)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return sum_to(in[0], {1, 4}); },
                    {leaf({2, 3, 4}, 12)});
}
