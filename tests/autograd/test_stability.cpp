// Numerical stability of the fused ops: huge logits, fully masked rows, degenerate rows, f32
// against f64, and kernels large enough to take their parallel paths.
#include <cmath>
#include <limits>

#include "autograd_test_utils.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

using Values = std::vector<double>;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

void require_finite(const Tensor& t) {
  for (double v : t.to_vector()) REQUIRE(std::isfinite(v));
}

// (2, 4) logits of +-1e4 in the given dtype, requiring grad.
Tensor huge_logits(DType dtype) {
  return Tensor::from({1e4, -1e4, 1e4 - 1, 0, -1e4, -1e4, -1e4 + 2, 1e4}, {2, 4}, dtype)
      .set_requires_grad();
}

}  // namespace

TEST_CASE("softmax and log_softmax of logits of +-1e4 are finite, forward and backward",
          "[ops]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    const Tensor x = huge_logits(dtype);
    const Tensor p = softmax(x);
    const Tensor lp = log_softmax(x);
    require_finite(p);
    require_finite(lp);
    REQUIRE(p.at({0, 0}) == Approx(1 / (1 + std::exp(-1.0))).epsilon(1e-6));
    REQUIRE(lp.at({0, 1}) == Approx(-2e4 - std::log1p(std::exp(-1.0))).epsilon(1e-6));
    sum(p * p).backward();
    require_finite(x.grad());
    Tensor(x).zero_grad();
    sum(lp * Tensor::full({2, 4}, 0.5, dtype)).backward();
    require_finite(x.grad());
  }
}

TEST_CASE("cross_entropy of logits of +-1e4 is finite, forward and backward", "[ops]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    const Tensor x = huge_logits(dtype);
    const Tensor loss = cross_entropy(x, Tensor::from_ids({1, 3}, {2}));
    // Row 0 picks a logit 2e4 below the best two; row 1 picks the best by a margin of 2e4 - 2.
    REQUIRE(loss.item() == Approx((2e4 + std::log1p(std::exp(-1.0))) / 2).epsilon(1e-7));
    loss.backward();
    require_finite(x.grad());
    const Tensor ignored = huge_logits(dtype);
    cross_entropy(ignored, Tensor::from_ids({-100, 0}, {2})).backward();
    require_finite(ignored.grad());
  }
}

TEST_CASE("a fully masked softmax row gives zeros and no NaN, forward and backward", "[ops]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    CAPTURE(dtype_name(dtype));
    const Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}, dtype).set_requires_grad();
    const Tensor mask = Tensor::from_ids({1, 1, 1, 0, 1, 0}, {2, 3});
    const Tensor p = softmax(masked_fill(x, mask, -kInfinity));
    REQUIRE(p.to_vector() == Values{0, 0, 0, p.at({1, 0}), 0, p.at({1, 2})});
    REQUIRE(p.at({1, 0}) + p.at({1, 2}) == Approx(1.0));
    p.backward(Tensor::from({1, -2, 3, 4, 5, -6}, {2, 3}, dtype));
    require_finite(x.grad());
    REQUIRE(x.grad().at({0, 0}) == 0.0);
    REQUIRE(x.grad().at({0, 2}) == 0.0);
  }
}

TEST_CASE("a fully masked log_softmax row is -inf without NaN, backward finite", "[ops]") {
  const Tensor x = Tensor::from({1, 2, 3, 4}, {2, 2}, DType::f64).set_requires_grad();
  const Tensor mask = Tensor::from_ids({1, 1, 0, 0}, {2, 2});
  const Tensor lp = log_softmax(masked_fill(x, mask, -kInfinity));
  REQUIRE(lp.at({0, 0}) == -kInfinity);
  REQUIRE(lp.at({0, 1}) == -kInfinity);
  REQUIRE(lp.at({1, 1}) == Approx(-std::log1p(std::exp(-1.0))));
  lp.backward(Tensor::ones({2, 2}, DType::f64));
  require_finite(x.grad());
  REQUIRE(x.grad().at({0, 0}) == 0.0);
}

TEST_CASE("sigmoid and gelu saturate without overflow", "[ops]") {
  const Tensor x = Tensor::from({-1000, -80, 80, 1000}, {4}, DType::f32).set_requires_grad();
  REQUIRE(sigmoid(x).to_vector() == Values{0, std::exp(-80.0f) / (1 + std::exp(-80.0f)), 1, 1});
  REQUIRE(gelu(x).to_vector() == Values{-0.0, -0.0, 80, 1000});
  sum(sigmoid(x) + gelu(x)).backward();
  require_finite(x.grad());
}

TEST_CASE("layer_norm of a constant row is zero with a finite gradient", "[ops]") {
  const Tensor x = Tensor::full({2, 8}, 3.0, DType::f32).set_requires_grad();
  const Tensor y = layer_norm(x, Tensor{}, Tensor{});
  REQUIRE(y.to_vector() == Values(16, 0.0));
  y.backward(Tensor::ones({2, 8}, DType::f32));
  require_finite(x.grad());
}

TEST_CASE("layer_norm in f32 keeps precision on rows with a large mean", "[ops]") {
  // A shared offset of 1e4 on values of spread ~1: the statistics are computed in double.
  Generator gen(4);
  const Tensor noise = Tensor::randn({4, 64}, gen, DType::f64);
  const Tensor exact = layer_norm(noise, Tensor{}, Tensor{});
  const Tensor shifted = layer_norm((noise + 1e4).to(DType::f32), Tensor{}, Tensor{});
  const Values a = exact.to_vector(), b = shifted.to_vector();
  for (size_t i = 0; i < a.size(); ++i) REQUIRE(b[i] == Approx(a[i]).margin(2e-3));
}

// Above kParallelGrain elements the kernels run their OpenMP paths; the results must match
// the f64 single-threaded ones closely whatever the thread count.
TEST_CASE("large f32 softmax, cross_entropy and layer_norm match f64 with 1 and 2 threads",
          "[ops]") {
  Generator gen(6);
  const Tensor x64 = Tensor::randn({64, 1024}, gen, DType::f64, 0.0, 3.0);
  Tensor ids = Tensor::empty({64}, DType::i64);
  for (int64_t i = 0; i < 64; ++i) ids.data<int64_t>()[i] = gen.randint(1024);
  const Tensor w64 = Tensor::randn({1024}, gen, DType::f64).set_requires_grad();

  const int threads_before = num_threads();
  set_num_threads(1);
  auto run = [&](DType dtype) {
    const Tensor x = x64.to(dtype).set_requires_grad();
    const Tensor w = w64.to(dtype).set_requires_grad();
    const Tensor loss = cross_entropy(softmax(x, 0) * 50.0 + layer_norm(x, w, Tensor{}), ids);
    loss.backward();
    return std::vector<Values>{{loss.item()}, x.grad().to_vector(), w.grad().to_vector()};
  };
  const std::vector<Values> reference = run(DType::f64);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    const std::vector<Values> got = run(DType::f32);
    for (size_t k = 0; k < got.size(); ++k) {
      for (size_t i = 0; i < got[k].size(); ++i) {
        CAPTURE(threads, k, i);
        REQUIRE(got[k][i] == Approx(reference[k][i]).margin(1e-5).epsilon(1e-3));
      }
    }
  }
  set_num_threads(threads_before);
}
