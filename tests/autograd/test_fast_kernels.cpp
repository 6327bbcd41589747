// The fast kernels of training against their plain references: the vectorised exp, GELU, the
// fused linear op (GEMM starting from the bias) and LayerNorm. Each also has a float64 gradcheck.
#include <cmath>
#include <limits>

#include "autograd_test_utils.hpp"
#include "threads_scope.hpp"
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

TEST_CASE("simd::exp gives the same bits in a vectorised loop as called alone", "[ops][fast]") {
  // The kernels call it in `omp simd` loops, where GCC turns its selects into blends.
  std::vector<float> xs;
  for (double xd = -90.0; xd <= 90.0; xd += 7e-3) xs.push_back(static_cast<float>(xd));
  for (float x : {88.0f, 88.03f, 88.5f, 88.72283935546875f, 88.7229f, -87.33654f, -87.3366f}) {
    xs.push_back(x);
  }
  xs.push_back(std::numeric_limits<float>::infinity());
  xs.push_back(-std::numeric_limits<float>::infinity());
  xs.push_back(std::numeric_limits<float>::quiet_NaN());
  std::vector<float> out(xs.size());
  const float* in = xs.data();
  float* o = out.data();
  const int64_t n = static_cast<int64_t>(xs.size());
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) o[i] = simd::exp(in[i]);
  int64_t differ = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float alone = simd::exp(xs[i]);
    if (std::isnan(alone) ? !std::isnan(out[i]) : alone != out[i]) ++differ;
  }
  CHECK(differ == 0);
  CHECK(std::isnan(out.back()));
  CHECK(out[n - 2] == 0.0f);
  CHECK(out[n - 3] == std::numeric_limits<float>::infinity());
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

TEST_CASE("linear equals matmul plus bias, in f32 and f64", "[ops][fast][linear]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    Generator gen(5);
    const Tensor x = Tensor::randn({3, 70, 24}, gen, dtype);  // big enough to split across threads
    const Tensor w = Tensor::randn({24, 300}, gen, dtype);
    const Tensor b = Tensor::randn({300}, gen, dtype);
    const double tol = dtype == DType::f32 ? 1e-5 : 1e-12;
    for (int threads : {1, 2}) {
      ThreadsScope scope(threads);
      const auto got = linear(x, w, b).to_vector(), want = (matmul(x, w) + b).to_vector();
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(tol));
      REQUIRE(linear(x, w, Tensor{}).to_vector() == matmul(x, w).to_vector());
    }
  }
}

TEST_CASE("linear's gradients match matmul plus bias and do not depend on the thread count",
          "[ops][fast][linear]") {
  Generator gen(6);
  // 360 rows: three of the bias gradient's 128-row blocks, the last one short, split unevenly
  // over two threads.
  const Tensor x0 = Tensor::randn({4, 90, 16}, gen);
  const Tensor w0 = Tensor::randn({16, 200}, gen);
  const Tensor b0 = Tensor::randn({200}, gen);
  const Tensor g = Tensor::randn({4, 90, 200}, gen);
  auto grads = [&](bool fused, int threads) {
    ThreadsScope scope(threads);
    Tensor x = x0.clone().set_requires_grad(), w = w0.clone().set_requires_grad();
    Tensor b = b0.clone().set_requires_grad();
    (fused ? linear(x, w, b) : matmul(x, w) + b).backward(g);
    return std::vector<std::vector<double>>{x.grad().to_vector(), w.grad().to_vector(),
                                            b.grad().to_vector()};
  };
  const auto one = grads(true, 1), two = grads(true, 2), ref = grads(false, 1);
  REQUIRE(one == two);  // bit-identical
  for (size_t k = 0; k < 3; ++k) {
    for (size_t i = 0; i < one[k].size(); ++i) REQUIRE(one[k][i] == Approx(ref[k][i]).margin(1e-4));
  }
}

TEST_CASE("gradcheck linear and gelu_linear with and without bias", "[gradcheck][ops][linear]") {
  using Op = Tensor (*)(const Tensor&, const Tensor&, const Tensor&);
  for (Op op : {Op{&linear}, Op{&gelu_linear}}) {
    REQUIRE_GRADCHECK([op](const Inputs& in) { return op(in[0], in[1], in[2]); },
                      {leaf({2, 3, 4}, 1), leaf({4, 5}, 2), leaf({5}, 3)});
    REQUIRE_GRADCHECK([op](const Inputs& in) { return op(in[0], in[1], Tensor{}); },
                      {leaf({3, 4}, 4), leaf({4, 2}, 5)});
  }
}

TEST_CASE("linear rejects mismatched shapes", "[ops][errors][linear]") {
  const Tensor x = Tensor::zeros({2, 3}), w = Tensor::zeros({3, 4});
  REQUIRE_THROWS_AS(linear(x, w, Tensor::zeros({3})), ShapeError);
  REQUIRE_THROWS_AS(linear(x, Tensor::zeros({2, 4}), Tensor{}), ShapeError);
  REQUIRE_THROWS_AS(linear(Tensor::zeros({3}), w, Tensor{}), ShapeError);
}

TEST_CASE("linear and gelu_linear name themselves as the operation, and the shapes, when x's last "
          "axis is not the weight's rows", "[ops][errors][linear]") {
  using Op = Tensor (*)(const Tensor&, const Tensor&, const Tensor&);
  for (const auto& [op, name] : {std::pair<Op, std::string>{&linear, "linear"},
                                 std::pair<Op, std::string>{&gelu_linear, "gelu_linear"}}) {
    try {
      op(Tensor::zeros({2, 5, 3}), Tensor::zeros({2, 4}), Tensor{});
      FAIL(name << " took x (2, 5, 3) and weight (2, 4)");
    } catch (const ShapeError& e) {
      CHECK(e.operation() == name);
      CHECK_THAT(e.detail(), Catch::Contains("(2, 5, 3)") && Catch::Contains("(2, 4)"));
    }
  }
}

TEST_CASE("gelu_linear equals linear after gelu bit for bit, forward and backward, in f32 and f64 "
          "on 1 and 2 threads", "[ops][fast][linear]") {
  for (DType dtype : {DType::f32, DType::f64}) {
    Generator gen(7);
    // Split across threads; a few inputs far out, where exp(-2u) saturates to 0 or inf.
    std::vector<double> h_values = Tensor::randn({3, 70, 48}, gen, dtype, 0.0, 2.0).to_vector();
    const std::vector<double> far{-3000.0, -100.0, -30.0, -12.0, -10.5, 10.5, 12.0, 30.0, 100.0, 3000.0};
    for (size_t i = 0; i < far.size(); ++i) h_values[i * 997] = far[i];
    const Tensor h0 = Tensor::from(h_values, {3, 70, 48}, dtype);
    const Tensor w0 = Tensor::randn({48, 200}, gen, dtype);
    const Tensor b0 = Tensor::randn({200}, gen, dtype);
    const Tensor g = Tensor::randn({3, 70, 200}, gen, dtype);
    auto run = [&](bool fused, int threads, bool with_bias) {
      ThreadsScope scope(threads);
      Tensor h = h0.clone().set_requires_grad(), w = w0.clone().set_requires_grad();
      Tensor b = with_bias ? b0.clone().set_requires_grad() : Tensor{};
      const Tensor y = fused ? gelu_linear(h, w, b) : linear(gelu(h), w, b);
      y.backward(g);
      std::vector<std::vector<double>> out{y.to_vector(), h.grad().to_vector(), w.grad().to_vector()};
      if (with_bias) out.push_back(b.grad().to_vector());
      return out;
    };
    for (bool with_bias : {true, false}) {
      const auto ref = run(false, 1, with_bias);
      REQUIRE(run(true, 1, with_bias) == ref);
      REQUIRE(run(true, 2, with_bias) == ref);
    }
  }
}

TEST_CASE("gelu_linear rejects mismatched shapes, naming itself and the shapes", "[ops][errors][linear]") {
  const Tensor h = Tensor::zeros({2, 3}), w = Tensor::zeros({3, 4});
  REQUIRE_THROWS_WITH(gelu_linear(h, w, Tensor::zeros({3})),
                      Catch::Contains("gelu_linear") && Catch::Contains("(2, 3)") && Catch::Contains("(3,)"));
  REQUIRE_THROWS_AS(gelu_linear(h, Tensor::zeros({2, 4}), Tensor{}), ShapeError);
  REQUIRE_THROWS_AS(gelu_linear(Tensor::zeros({3}), w, Tensor{}), ShapeError);
  REQUIRE_THROWS_AS(gelu_linear(h, w.to(DType::f64), Tensor{}), Error);
  const Tensor ids = Tensor::zeros({2, 3}, DType::i64);
  REQUIRE_THROWS_WITH(gelu_linear(ids, Tensor::zeros({3, 4}, DType::i64), Tensor{}),
                      Catch::Contains("gelu_linear"));
  REQUIRE_THROWS_WITH(linear(ids, Tensor::zeros({3, 4}, DType::i64), Tensor{}),
                      Catch::Contains("linear"));
}

TEST_CASE("layer_norm equals its composition from plain ops, forward and backward, on 1 and 2 "
          "threads", "[ops][fast][layer_norm]") {
  auto composed = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    const Tensor centred = x - mean(x, {-1}, true);
    const Tensor var = mean(centred * centred, {-1}, true);
    return centred / sqrt(var + 1e-5) * w + b;
  };
  for (DType dtype : {DType::f64, DType::f32}) {
    Generator gen(8);
    // 150 rows: several of the backward's 32-row groups, and a partial last one.
    const Tensor x0 = Tensor::randn({3, 50, 40}, gen, dtype, 0.5, 2.0);
    const Tensor w0 = Tensor::randn({40}, gen, dtype), b0 = Tensor::randn({40}, gen, dtype);
    const Tensor g = Tensor::randn({3, 50, 40}, gen, dtype);
    auto run = [&](bool fused, int threads) {
      ThreadsScope scope(threads);
      Tensor x = x0.clone().set_requires_grad(), w = w0.clone().set_requires_grad();
      Tensor b = b0.clone().set_requires_grad();
      const Tensor y = fused ? layer_norm(x, w, b) : composed(x, w, b);
      y.backward(g);
      return std::vector<std::vector<double>>{y.to_vector(), x.grad().to_vector(),
                                              w.grad().to_vector(), b.grad().to_vector()};
    };
    const auto one = run(true, 1), two = run(true, 2), ref = run(false, 1);
    REQUIRE(one == two);
    const double tol = dtype == DType::f64 ? 1e-10 : 2e-4;
    for (size_t k = 0; k < ref.size(); ++k) {
      INFO("dtype " << dtype_name(dtype) << ", output " << k);
      for (size_t i = 0; i < ref[k].size(); ++i) REQUIRE(one[k][i] == Approx(ref[k][i]).margin(tol));
    }
  }
}

TEST_CASE("gradcheck layer_norm over more rows than one backward group", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return layer_norm(in[0], in[1], in[2]); },
                    {leaf({70, 3}, 21, 2.0), leaf({3}, 22), leaf({3}, 23)});
}
