// Forward values against hand-computed numbers, and gradients where they are exact.
#include <cmath>
#include <limits>

#include "autograd_test_utils.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

using Values = std::vector<double>;

namespace {

// Every element of `actual` within 1e-12 (relative) of `expected`.
void require_close(const Tensor& actual, const Values& expected, double tolerance = 1e-12) {
  const Values v = actual.to_vector();
  REQUIRE(v.size() == expected.size());
  for (size_t i = 0; i < v.size(); ++i) {
    CAPTURE(i);
    REQUIRE(v[i] == Approx(expected[i]).epsilon(tolerance).margin(tolerance));
  }
}

}  // namespace

TEST_CASE("binary ops broadcast to the expected values", "[ops]") {
  const Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor row = f64({10, 20, 30}, {3});
  const Tensor column = f64({2, 4}, {2, 1});
  REQUIRE((a + row).to_vector() == Values{11, 22, 33, 14, 25, 36});
  REQUIRE((a - column).to_vector() == Values{-1, 0, 1, 0, 1, 2});
  REQUIRE((a * column).to_vector() == Values{2, 4, 6, 16, 20, 24});
  REQUIRE((a / column).to_vector() == Values{0.5, 1, 1.5, 1, 1.25, 1.5});
  REQUIRE((row * column).shape() == Shape{2, 3});
  REQUIRE((a + Tensor::scalar(1.0, DType::f64)).to_vector() == Values{2, 3, 4, 5, 6, 7});
  REQUIRE((1.0 - a / 2.0).to_vector() == Values{0.5, 0, -0.5, -1, -1.5, -2});
  REQUIRE((12.0 / a).to_vector() == Values{12, 6, 4, 3, 2.4, 2});
}

TEST_CASE("unary ops give the expected values", "[ops]") {
  const Tensor x = f64({-2, -0.5, 0, 0.5, 2}, {5});
  REQUIRE(relu(x).to_vector() == Values{0, 0, 0, 0.5, 2});
  REQUIRE(neg(x).to_vector() == Values{2, 0.5, -0.0, -0.5, -2});
  REQUIRE(pow(x, 2.0).to_vector() == Values{4, 0.25, 0, 0.25, 4});
  require_close(exp(x), {std::exp(-2.0), std::exp(-0.5), 1, std::exp(0.5), std::exp(2.0)});
  require_close(tanh(x), {std::tanh(-2.0), std::tanh(-0.5), 0, std::tanh(0.5), std::tanh(2.0)});
  require_close(sigmoid(f64({0, 0.5, -0.5}, {3})),
                {0.5, 0.6224593312018546, 1 - 0.6224593312018546});
  REQUIRE(sqrt(f64({4, 2.25, 0}, {3})).to_vector() == Values{2, 1.5, 0});
  require_close(log(f64({1, std::exp(1.0), 0.5}, {3})), {0, 1, -std::log(2.0)});
}

TEST_CASE("gelu uses GPT-2's tanh approximation: gelu(1.0) = 0.8411919906...", "[ops]") {
  require_close(gelu(f64({1.0, -1.0, 2.0, 0.0}, {4})),
                {0.8411919906082768, -0.15880800939172324, 1.954597694087775, 0.0});
  REQUIRE(gelu(Tensor::scalar(1.0, DType::f32)).item() == Approx(0.8411919906).epsilon(1e-6));
}

TEST_CASE("reductions give the expected values", "[ops]") {
  const Tensor x = f64({1, 5, 3, 4, 2, 6}, {2, 3});
  REQUIRE(sum(x).item() == 21);
  REQUIRE(sum(x, {0}).to_vector() == Values{5, 7, 9});
  REQUIRE(sum(x, {1}, true).shape() == Shape{2, 1});
  REQUIRE(sum(x, {-1}).to_vector() == Values{9, 12});
  REQUIRE(mean(x, {0}).to_vector() == Values{2.5, 3.5, 4.5});
  REQUIRE(mean(x).item() == 3.5);
  REQUIRE(max(x, {1}).to_vector() == Values{5, 6});
  REQUIRE(max(x, {0, 1}).item() == 6);
  REQUIRE(max(x, {}, true).shape() == Shape{1, 1});
  REQUIRE(sum(Tensor::zeros({0, 3}, DType::f64), {0}).to_vector() == Values{0, 0, 0});
  REQUIRE(sum_to(Tensor::ones({2, 3, 4}, DType::f64), {3, 1}).to_vector() == Values{8, 8, 8});
  REQUIRE(broadcast_to(f64({1, 2}, {2, 1}), {2, 3}).to_vector() == Values{1, 1, 1, 2, 2, 2});
}

TEST_CASE("softmax and log_softmax of (1, 2, 3)", "[ops]") {
  const Tensor x = f64({1, 2, 3}, {3});
  require_close(softmax(x), {0.09003057317038046, 0.24472847105479764, 0.6652409557748218});
  require_close(log_softmax(x), {-2.40760596444438, -1.4076059644443801, -0.40760596444438013});
  // The same rows along axis 0 of the transpose.
  const Tensor columns = transpose(f64({1, 2, 3, 3, 2, 1}, {2, 3}), 0, 1);  // (3, 2)
  require_close(softmax(columns, 0), {0.09003057317038046, 0.6652409557748218,
                                      0.24472847105479764, 0.24472847105479764,
                                      0.6652409557748218, 0.09003057317038046});
  REQUIRE(softmax(Tensor::from({1, 2, 3}, {3}, DType::f32)).at({2}) ==
          Approx(0.6652409557748218).epsilon(1e-6));
}

TEST_CASE("softmax backward is y * (g - sum(g * y))", "[ops]") {
  const Tensor x = f64({1, 2, 3}, {3}).set_requires_grad();
  const Tensor y = softmax(x);
  y.backward(f64({1, 0, 0}, {3}));
  const Values p = y.to_vector();
  require_close(x.grad(), {p[0] * (1 - p[0]), -p[1] * p[0], -p[2] * p[0]});
}

TEST_CASE("masked_fill fills where the mask is nonzero, with any mask dtype", "[ops]") {
  const Tensor x = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor i64_mask = Tensor::from_ids({0, 7, 0}, {3});
  REQUIRE(masked_fill(x, i64_mask, -1).to_vector() == Values{1, -1, 3, 4, -1, 6});
  const Tensor f32_mask = Tensor::from({0.5, 0}, {2, 1}, DType::f32);
  REQUIRE(masked_fill(x, f32_mask, 9).to_vector() == Values{9, 9, 9, 4, 5, 6});
  const Tensor inf = masked_fill(x, Tensor::scalar(1.0, DType::f64),
                                 -std::numeric_limits<double>::infinity());
  for (double v : inf.to_vector()) REQUIRE(v == -std::numeric_limits<double>::infinity());
  const Tensor leafx = f64({1, 2, 3}, {3}).set_requires_grad();
  sum(masked_fill(leafx, i64_mask, 0.0) * 5.0).backward();
  REQUIRE(leafx.grad().to_vector() == Values{5, 0, 5});
}

TEST_CASE("embedding copies rows and scatter-adds repeated ids in backward", "[ops]") {
  const Tensor w = f64({0, 1, 10, 11, 20, 21}, {3, 2}).set_requires_grad();
  const Tensor ids = Tensor::from_ids({2, 0, 2, 2}, {2, 2});
  const Tensor out = embedding(w, ids);
  REQUIRE(out.shape() == Shape{2, 2, 2});
  REQUIRE(out.to_vector() == Values{20, 21, 0, 1, 20, 21, 20, 21});
  out.backward(f64({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}));
  REQUIRE(w.grad().to_vector() == Values{3, 4, 0, 0, 13, 16});
}

TEST_CASE("cross_entropy of known logits, and its gradient softmax - onehot", "[ops]") {
  const Tensor logits = f64({1, 2, 3, 1, 1, 1}, {2, 3}).set_requires_grad();
  const Tensor loss = cross_entropy(logits, Tensor::from_ids({2, 0}, {2}));
  REQUIRE(loss.shape() == Shape{});
  REQUIRE(loss.item() == Approx((0.40760596444438013 + std::log(3.0)) / 2).epsilon(1e-14));
  loss.backward();
  require_close(logits.grad(), {0.09003057317038046 / 2, 0.24472847105479764 / 2,
                                (0.6652409557748218 - 1) / 2, (1.0 / 3 - 1) / 2, 1.0 / 6,
                                1.0 / 6});
}

TEST_CASE("cross_entropy averages over non-ignored targets only", "[ops]") {
  const Tensor logits = f64({1, 2, 3, 5, -5, 0, 1, 1, 1}, {3, 3}).set_requires_grad();
  const Tensor loss = cross_entropy(logits, Tensor::from_ids({2, -100, 0}, {3}));
  REQUIRE(loss.item() == Approx((0.40760596444438013 + std::log(3.0)) / 2).epsilon(1e-14));
  loss.backward();
  const Values g = logits.grad().to_vector();
  REQUIRE(Values(g.begin() + 3, g.begin() + 6) == Values{0, 0, 0});  // the ignored row
  REQUIRE(cross_entropy(Tensor::from({0, 0}, {1, 2}), Tensor::from_ids({1}, {1})).item() ==
          Approx(std::log(2.0)).epsilon(1e-7));
}

TEST_CASE("cross_entropy is 0 with a zero gradient when every target is ignored", "[ops]") {
  const Tensor logits = f64({1, 2, 3, 4}, {2, 2}).set_requires_grad();
  const Tensor loss = cross_entropy(logits, Tensor::from_ids({7, 7}, {2}), 7);
  REQUIRE(loss.item() == 0.0);
  loss.backward();
  REQUIRE(logits.grad().to_vector() == Values{0, 0, 0, 0});
}

TEST_CASE("layer_norm of the row (1, 2, 3, 4) with and without weight and bias", "[ops]") {
  const Tensor x = f64({1, 2, 3, 4}, {1, 4});
  require_close(layer_norm(x, Tensor{}, Tensor{}),
                {-1.3416354199689269, -0.447211806656309, 0.447211806656309, 1.3416354199689269});
  const Tensor w = f64({1, 2, -1, 0.5}, {4}), b = f64({0, 1, 2, 3}, {4});
  require_close(layer_norm(x, w, b),
                {-1.3416354199689269, 0.105576386687382, 1.552788193343691, 3.6708177099844637});
  require_close(layer_norm(x, Tensor{}, b), {-1.3416354199689269, 0.552788193343691,
                                             2.447211806656309, 4.3416354199689269});
}

TEST_CASE("layer_norm gives dbias = sum of g and dweight = sum of g * xhat over rows", "[ops]") {
  const Tensor x = f64({1, 2, 3, 4, 4, 3, 2, 1}, {2, 4});
  const Tensor w = f64({1, 1, 1, 1}, {4}).set_requires_grad();
  const Tensor b = f64({0, 0, 0, 0}, {4}).set_requires_grad();
  layer_norm(x, w, b).backward(f64({1, 2, 3, 4, 1, 1, 1, 1}, {2, 4}));
  require_close(b.grad(), {2, 3, 4, 5});
  const double h = 1.3416354199689269, l = 0.447211806656309;  // |xhat| of the two kinds
  require_close(w.grad(), {-h + h, -2 * l + l, 3 * l - l, 4 * h - h});
}

TEST_CASE("dropout zeroes about p of the elements and scales the rest by 1/(1-p)", "[ops]") {
  const Tensor x = Tensor::ones({100, 100}, DType::f64);
  Generator gen(1);
  const Values y = dropout(x, 0.3, true, gen).to_vector();
  int64_t zeros = 0;
  for (double v : y) {
    REQUIRE((v == 0.0 || v == 1.0 / 0.7));
    zeros += v == 0.0;
  }
  REQUIRE(zeros == Approx(3000).margin(200));
}

TEST_CASE("dropout repeats its mask with the same generator state", "[ops]") {
  const Tensor x = Tensor::ones({64}, DType::f32);
  Generator a(5), b(5);
  const Values first = dropout(x, 0.5, true, a).to_vector();
  REQUIRE(first == dropout(x, 0.5, true, b).to_vector());
  REQUIRE(first != dropout(x, 0.5, true, a).to_vector());  // the state moved on
}

TEST_CASE("dropout backward multiplies by the saved mask", "[ops]") {
  const Tensor x = Tensor::ones({50}, DType::f64).set_requires_grad();
  Generator gen(2);
  const Tensor y = dropout(x, 0.5, true, gen);
  sum(y * 3.0).backward();
  const Values out = y.to_vector(), g = x.grad().to_vector();
  for (size_t i = 0; i < out.size(); ++i) REQUIRE(g[i] == 3.0 * out[i]);
}

TEST_CASE("dropout is the identity when not training or p == 0", "[ops]") {
  const Tensor x = leaf({3, 3}, 4);
  Generator gen(3);
  const Generator::State before = gen.state();
  REQUIRE(dropout(x, 0.5, false, gen).impl() == x.impl());
  REQUIRE(dropout(x, 0.0, true, gen).impl() == x.impl());
  REQUIRE(gen.state() == before);  // no draws
}

TEST_CASE("ops on tensors with a zero-size axis give empty results and gradients", "[ops]") {
  const Tensor x = Tensor::zeros({0, 3}, DType::f64).set_requires_grad();
  const Tensor w = Tensor::ones({3, 2}, DType::f64).set_requires_grad();
  const Tensor ids = Tensor::zeros({0}, DType::i64);
  const Tensor y = softmax(x, 0) + log_softmax(x) + layer_norm(x, Tensor{}, Tensor{}) +
                   masked_fill(gelu(x), Tensor::ones({3}, DType::i64), 1.0);
  REQUIRE(y.shape() == Shape{0, 3});
  const Tensor loss = sum(matmul(y, w)) + sum(max(x, {1})) + sum(sum(x, {0})) +
                      cross_entropy(x, ids) + sum(embedding(w, ids)) +
                      sum(concat({x, slice(x, 0, 0, 0)}, 0));
  REQUIRE(loss.item() == 0.0);
  loss.backward();
  REQUIRE(x.grad().shape() == Shape{0, 3});
  REQUIRE(w.grad().to_vector() == Values(6, 0.0));
}

TEST_CASE("linear and gelu_linear with no input features give the bias, and gradients of their "
          "shapes",
          "[ops]") {
  for (const bool gelu : {false, true}) {
    const Tensor x = Tensor::zeros({2, 3, 0}, DType::f64).set_requires_grad();
    const Tensor w = Tensor::zeros({0, 4}, DType::f64).set_requires_grad();
    const Tensor b = f64({1, 2, 3, 4}, {4}).set_requires_grad();
    const Tensor y = gelu ? gelu_linear(x, w, b) : linear(x, w, b);
    REQUIRE(y.shape() == Shape{2, 3, 4});
    REQUIRE(sum(y, {0, 1}).to_vector() == Values{6, 12, 18, 24});
    sum(y).backward();
    REQUIRE(x.grad().shape() == x.shape());
    REQUIRE(w.grad().shape() == w.shape());
    REQUIRE(b.grad().to_vector() == Values{6, 6, 6, 6});
  }
}
