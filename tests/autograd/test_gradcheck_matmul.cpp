// float64 gradient checks of matmul: plain, batched, mixed ranks, every transpose flag.
#include "autograd_test_utils.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

// batch + the stored (rows, cols) of an operand read as (r, c), or as its transpose.
Shape operand(const Shape& batch, int64_t r, int64_t c, bool transposed) {
  Shape s = batch;
  s.push_back(transposed ? c : r);
  s.push_back(transposed ? r : c);
  return s;
}

// (batch_a..., M, K) @ (batch_b..., K, N) under all four trans_a / trans_b combinations.
void check_matmul(const Shape& batch_a, const Shape& batch_b) {
  constexpr int64_t m = 3, k = 4, n = 2;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      CAPTURE(batch_a.str(), batch_b.str(), ta, tb);
      REQUIRE_GRADCHECK([=](const Inputs& in) { return matmul(in[0], in[1], ta, tb); },
                        {leaf(operand(batch_a, m, k, ta), 1), leaf(operand(batch_b, k, n, tb), 2)});
    }
  }
}

}  // namespace

TEST_CASE("gradcheck matmul 2-D, every trans_a/trans_b", "[gradcheck][ops]") {
  check_matmul({}, {});
}

TEST_CASE("gradcheck matmul batched 3-D, every trans_a/trans_b", "[gradcheck][ops]") {
  check_matmul({2}, {2});
}

TEST_CASE("gradcheck matmul batched 4-D, every trans_a/trans_b", "[gradcheck][ops]") {
  check_matmul({2, 3}, {2, 3});
}

TEST_CASE("gradcheck matmul 3-D @ 2-D, every trans_a/trans_b", "[gradcheck][ops]") {
  check_matmul({2}, {});
}

TEST_CASE("gradcheck matmul 2-D @ 3-D, every trans_a/trans_b", "[gradcheck][ops]") {
  check_matmul({}, {2});
}

TEST_CASE("gradcheck matmul 4-D @ 2-D and 2-D @ 4-D", "[gradcheck][ops]") {
  check_matmul({2, 2}, {});
  check_matmul({}, {2, 2});
}

TEST_CASE("gradcheck matmul with only one operand requiring grad", "[gradcheck][ops]") {
  const Tensor w = Tensor::from({1, -2, 0.5, 3, 0, 1}, {3, 2}, DType::f64);
  REQUIRE_GRADCHECK([w](const Inputs& in) { return matmul(in[0], w); }, {leaf({2, 4, 3}, 3)});
  REQUIRE_GRADCHECK([w](const Inputs& in) { return matmul(w, in[0], true, false); },
                    {leaf({3, 5}, 4)});
}

TEST_CASE("gradcheck matmul of a tensor with its own transpose", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return matmul(in[0], in[0], false, true); },
                    {leaf({2, 3, 4}, 5)});
}

TEST_CASE("matmul values against a hand-computed product", "[ops]") {
  const Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = f64({7, 8, 9, 10, 11, 12}, {3, 2});
  REQUIRE(matmul(a, b).to_vector() == std::vector<double>{58, 64, 139, 154});
  REQUIRE(matmul(b, a, true, true).to_vector() == std::vector<double>{58, 139, 64, 154});
  REQUIRE(matmul(a, a, false, true).to_vector() == std::vector<double>{14, 32, 32, 77});
  const Tensor batched = matmul(reshape(concat({a, a * 2.0}, 0), {2, 2, 3}), b);
  REQUIRE(batched.shape() == Shape{2, 2, 2});
  REQUIRE(batched.to_vector() == std::vector<double>{58, 64, 139, 154, 116, 128, 278, 308});
  REQUIRE(matmul(Tensor::ones({2, 0}, DType::f64), Tensor::ones({0, 3}, DType::f64)).to_vector() ==
          std::vector<double>(6, 0.0));
}

TEST_CASE("matmul in f32 matches f64 closely", "[ops]") {
  Generator gen(9);
  const Tensor a = Tensor::randn({4, 16, 32}, gen, DType::f64);
  const Tensor b = Tensor::randn({32, 8}, gen, DType::f64);
  const std::vector<double> exact = matmul(a, b).to_vector();
  const std::vector<double> single = matmul(a.to(DType::f32), b.to(DType::f32)).to_vector();
  for (size_t i = 0; i < exact.size(); ++i) REQUIRE(single[i] == Approx(exact[i]).margin(1e-4));
}
