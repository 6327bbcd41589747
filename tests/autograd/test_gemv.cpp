// Products of one row (kernels/gemv.cpp: the decode step's products) against float64: linear on a
// (K, N) weight and matmul on a transposed (N, K) one, and linear_bf16 on a Bf16Weight of either,
// at sizes with tails of every kind (a (K, N) weight's rows in several 128-row blocks, the last
// partial, with rows left over from passes of 16; columns not a multiple of 16; rows of the bf16
// layout padded to 32 values), on one thread and on two.
#include <algorithm>
#include <cmath>

#include "autograd_test_utils.hpp"
#include "threads_scope.hpp"
#include "tinygpt/autograd/bf16_weight.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

struct RowProduct {
  int64_t k, n;
};

// x W (+ bias) in float64, W (k, n) or, `transposed`, (n, k), the operands rounded to bf16 first
// with `bf16`: got must be within f32 rounding of the sum of |x_i w_ij| (the worst case of any
// summation order; the products of bf16 values are exact in f32).
void require_close_to_f64(const Tensor& got, const Tensor& x, const Tensor& w, bool transposed,
                          const float* bias, bool bf16 = false) {
  const auto operand = [bf16](float v) { return bf16 ? bf16_of(v) : static_cast<double>(v); };
  const int64_t k = x.numel(), n = got.numel();
  const float* px = x.data<float>();
  const float* pw = w.data<float>();
  for (int64_t j = 0; j < n; ++j) {
    double sum = bias != nullptr ? bias[j] : 0.0, magnitude = std::abs(sum);
    for (int64_t i = 0; i < k; ++i) {
      const double product = operand(px[i]) * operand(pw[transposed ? j * k + i : i * n + j]);
      sum += product;
      magnitude += std::abs(product);
    }
    INFO("output " << j);
    REQUIRE(std::abs(got.data<float>()[j] - sum) <= 1e-6 * (magnitude + 1.0));
  }
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::equal(a.data<float>(), a.data<float>() + a.numel(), b.data<float>());
}

}  // namespace

TEST_CASE("one-row products match float64 and do not depend on the thread count",
          "[ops][gemv]") {
  const RowProduct shape = GENERATE(RowProduct{1, 1}, RowProduct{3, 5}, RowProduct{4, 16},
                                    RowProduct{7, 17}, RowProduct{33, 47}, RowProduct{64, 129},
                                    RowProduct{131, 257}, RowProduct{258, 301},
                                    RowProduct{300, 130});
  INFO("k " << shape.k << ", n " << shape.n);
  Generator gen(static_cast<uint64_t>(shape.k * 1000 + shape.n));
  const Tensor x = Tensor::randn({1, shape.k}, gen);
  const Tensor w = Tensor::randn({shape.k, shape.n}, gen);
  const Tensor w_t = Tensor::randn({shape.n, shape.k}, gen);
  const Tensor bias = Tensor::randn({shape.n}, gen);

  Tensor rows_1, dots_1;
  {
    ThreadsScope one(1);
    rows_1 = linear(x, w, bias);
    dots_1 = matmul(x, w_t, false, true);
  }
  require_close_to_f64(rows_1, x, w, false, bias.data<float>());
  require_close_to_f64(dots_1, x, w_t, true, nullptr);
  ThreadsScope two(2);
  CHECK(same_bits(linear(x, w, bias), rows_1));
  CHECK(same_bits(matmul(x, w_t, false, true), dots_1));
}

TEST_CASE("batched one-row products (a decode step's attention) match float64 per item, on any team",
          "[ops][gemv]") {
  // (B,H,1,d) queries against (B,H,Tk,d) keys, then (B,H,1,Tk) weights times (B,H,Tk,d) values;
  // sizes on both sides of the team's threshold; and one row shared by every item's matrix.
  const RowProduct shape = GENERATE(RowProduct{5, 7}, RowProduct{64, 129}, RowProduct{64, 512});
  INFO("k " << shape.k << ", n " << shape.n);
  Generator gen(static_cast<uint64_t>(shape.k * 7 + shape.n));
  const Tensor q = Tensor::randn({2, 3, 1, shape.k}, gen);
  const Tensor keys = Tensor::randn({2, 3, shape.n, shape.k}, gen);
  const Tensor values = Tensor::randn({2, 3, shape.k, shape.n}, gen);
  const Tensor shared = Tensor::randn({1, shape.k}, gen);
  const auto products = [&] {
    return std::vector<Tensor>{matmul(q, keys, false, true), matmul(q, values),
                               matmul(shared, values)};
  };
  std::vector<Tensor> one;
  {
    ThreadsScope single(1);
    one = products();
  }
  for (int64_t i = 0; i < 6; ++i) {
    INFO("item " << i);
    const auto item = [i](const Tensor& t) { return narrow(reshape(t, {6, t.numel() / 6}), 0, i, 1); };
    require_close_to_f64(item(one[0]), item(q), item(keys), true, nullptr);
    require_close_to_f64(item(one[1]), item(q), item(values), false, nullptr);
    require_close_to_f64(item(one[2]), shared, item(values), false, nullptr);
  }
  ThreadsScope two(2);
  const std::vector<Tensor> both = products();
  for (size_t p = 0; p < both.size(); ++p) CHECK(same_bits(both[p], one[p]));
}

TEST_CASE("linear_bf16 matches float64 on the rounded operands, natively and portably alike",
          "[ops][gemv][bf16]") {
  const RowProduct shape = GENERATE(RowProduct{1, 1}, RowProduct{3, 5}, RowProduct{31, 17},
                                    RowProduct{33, 47}, RowProduct{64, 129}, RowProduct{258, 301});
  INFO("k " << shape.k << ", n " << shape.n);
  Generator gen(static_cast<uint64_t>(shape.k * 1000 + shape.n));
  const Tensor x = Tensor::randn({1, 1, shape.k}, gen);
  const Tensor w = Tensor::randn({shape.k, shape.n}, gen);
  const Tensor w_t = Tensor::randn({shape.n, shape.k}, gen);
  const Tensor bias = Tensor::randn({shape.n}, gen);
  const Bf16Weight rows(w, false), dots(w_t, true);
  CHECK(rows.in_features() == shape.k);
  CHECK(rows.out_features() == shape.n);
  CHECK(rows.row_stride() % 32 == 0);

  Tensor native, portable, transposed;
  {
    ThreadsScope one(1);
    native = linear_bf16(x, rows, bias);
    portable = linear_bf16(x, rows, bias, true);
    transposed = linear_bf16(x, dots);
  }
  CHECK(native.shape() == Shape{1, 1, shape.n});
  require_close_to_f64(native, x, w, false, bias.data<float>(), true);
  require_close_to_f64(transposed, x, w_t, true, nullptr, true);
  // The portable loop adds the pairs in vdpbf16ps's order: the same bits on normal values.
  CHECK(same_bits(portable, native));
  ThreadsScope two(2);
  CHECK(same_bits(linear_bf16(x, rows, bias), native));
  CHECK(same_bits(linear_bf16(x, rows, bias, true), portable));
}

TEST_CASE("linear_bf16 names a bad row or bias, and refuses to run on the tape", "[ops][gemv][bf16]") {
  Generator gen(3);
  const Bf16Weight w(Tensor::randn({4, 6}, gen), false);
  REQUIRE_THROWS_NAMING(linear_bf16(Tensor::randn({2, 4}, gen), w), ShapeError,
                        Contains("linear_bf16") && Contains("(2, 4)"));
  REQUIRE_THROWS_NAMING(linear_bf16(Tensor::randn({1, 4}, gen), w, Tensor::randn({4}, gen)), ShapeError,
                        Contains("linear_bf16") && Contains("bias (4,)"));
  REQUIRE_THROWS_NAMING(linear_bf16(Tensor::randn({1, 4}, gen).set_requires_grad(), w), ValueError,
                        Contains("linear_bf16") && Contains("NoGradGuard"));
  REQUIRE_THROWS_NAMING(Bf16Weight(Tensor::randn({4}, gen), false), ShapeError,
                        Contains("Bf16Weight") && Contains("(4,)"));
}
