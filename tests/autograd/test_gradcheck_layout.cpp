// float64 gradient checks and exact values of the layout ops (ops/layout.cpp), and of other
// ops fed by their outputs (transposed, permuted and sliced inputs).
#include "autograd_test_utils.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

using Values = std::vector<double>;

namespace {

// (2, 3) holding 0..5, for exact-value checks.
Tensor counting() { return Tensor::arange(6, DType::f64); }

}  // namespace

TEST_CASE("gradcheck reshape, with an inferred -1 axis", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return reshape(in[0], {4, -1}); },
                    {leaf({2, 3, 2}, 1)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return reshape(in[0], {}); }, {leaf({1, 1}, 2)});
}

TEST_CASE("reshape shares data and infers -1", "[ops]") {
  Tensor x = counting();
  Tensor r = reshape(x, {-1, 2});
  REQUIRE(r.shape() == Shape{3, 2});
  x.data<double>()[5] = 50;
  REQUIRE(r.at({2, 1}) == 50);
  REQUIRE(reshape(x, {6}).impl() == x.impl());  // same shape: the tensor itself
}

TEST_CASE("gradcheck transpose of two axes, negative ones included", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return transpose(in[0], 0, 2); },
                    {leaf({2, 3, 4}, 3)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return transpose(in[0], -1, -2); },
                    {leaf({2, 3, 4}, 4)});
}

TEST_CASE("gradcheck permute of 4 axes", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return permute(in[0], {2, 0, 3, 1}); },
                    {leaf({2, 3, 4, 2}, 5)});
}

TEST_CASE("transpose and permute move elements as expected", "[ops]") {
  const Tensor x = reshape(counting(), {2, 3});
  REQUIRE(transpose(x, 0, 1).to_vector() == Values{0, 3, 1, 4, 2, 5});
  const Tensor y = reshape(Tensor::arange(24, DType::f64), {2, 3, 4});
  const Tensor p = permute(y, {2, 0, 1});
  REQUIRE(p.shape() == Shape{4, 2, 3});
  REQUIRE(p.at({3, 1, 2}) == y.at({1, 2, 3}));
  REQUIRE(p.at({1, 0, 2}) == y.at({0, 2, 1}));
}

TEST_CASE("gradcheck narrow", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return narrow(in[0], 1, 1, 2); },
                    {leaf({2, 4, 3}, 6)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return narrow(in[0], -1, 0, 1); }, {leaf({3, 3}, 7)});
}

TEST_CASE("gradcheck slice with a step and negative bounds", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return slice(in[0], 0, 1, 7, 2); }, {leaf({8, 3}, 8)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return slice(in[0], -1, -4, -1, 3); },
                    {leaf({2, 9}, 9)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return slice(in[0], 1, 0, 100); }, {leaf({2, 3}, 10)});
}

TEST_CASE("slice picks start:stop:step, clamping out-of-range bounds", "[ops]") {
  const Tensor x = Tensor::arange(10, DType::f64);
  REQUIRE(slice(x, 0, 1, 8, 3).to_vector() == Values{1, 4, 7});
  REQUIRE(slice(x, 0, -3, 10).to_vector() == Values{7, 8, 9});
  REQUIRE(slice(x, 0, 2, -5, 1).to_vector() == Values{2, 3, 4});
  REQUIRE(slice(x, 0, 8, 3).numel() == 0);
  REQUIRE(slice(x, 0, -100, 100, 4).to_vector() == Values{0, 4, 8});
  const Tensor m = reshape(counting(), {2, 3});
  REQUIRE(narrow(m, 1, 1, 2).to_vector() == Values{1, 2, 4, 5});
}

TEST_CASE("gradcheck concat along each axis, three inputs", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return concat(in, 0); },
                    {leaf({1, 3}, 11), leaf({2, 3}, 12), leaf({3, 3}, 13)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return concat(in, -1); },
                    {leaf({2, 2, 1}, 14), leaf({2, 2, 3}, 15), leaf({2, 2, 2}, 16)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return concat({in[0], in[0]}, 1); },
                    {leaf({2, 2}, 17)});
}

TEST_CASE("concat, split and chunk values", "[ops]") {
  const Tensor a = f64({1, 2}, {1, 2}), b = f64({3, 4, 5, 6}, {2, 2});
  REQUIRE(concat({a, b}, 0).to_vector() == Values{1, 2, 3, 4, 5, 6});
  REQUIRE(concat({a, a}, 1).to_vector() == Values{1, 2, 1, 2});
  const std::vector<Tensor> parts = split(Tensor::arange(5, DType::f64), {2, 0, 3}, 0);
  REQUIRE(parts.size() == 3);
  REQUIRE(parts[0].to_vector() == Values{0, 1});
  REQUIRE(parts[1].numel() == 0);
  REQUIRE(parts[2].to_vector() == Values{2, 3, 4});
  const std::vector<Tensor> chunks = chunk(Tensor::arange(7, DType::f64), 3, 0);
  REQUIRE(chunks.size() == 3);
  REQUIRE(chunks[0].to_vector() == Values{0, 1, 2});
  REQUIRE(chunks[2].to_vector() == Values{6});
  REQUIRE(chunk(Tensor::arange(2, DType::f64), 4, 0).size() == 2);
}

TEST_CASE("gradcheck split into unequal parts", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(
      [](const Inputs& in) {
        const std::vector<Tensor> p = split(in[0], {1, 3, 2}, 1);
        return concat({p[2] * 2.0, p[0], exp(p[1])}, 1);  // reordered so each part matters
      },
      {leaf({2, 6}, 18)});
}

TEST_CASE("gradcheck chunk, each chunk used differently", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(
      [](const Inputs& in) {
        const std::vector<Tensor> c = chunk(in[0], 3, 0);  // sizes 3, 3, 1
        return sum(c[0] * c[1]) + sum(tanh(c[2]));
      },
      {leaf({7, 2}, 19)});
}

TEST_CASE("gradcheck matmul and softmax of transposed and permuted inputs", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return matmul(transpose(in[0], 0, 1), in[1]); },
                    {leaf({4, 3}, 20), leaf({4, 2}, 21)});
  REQUIRE_GRADCHECK([](const Inputs& in) { return softmax(permute(in[0], {1, 2, 0}), 1); },
                    {leaf({2, 3, 4}, 22)});
  REQUIRE_GRADCHECK(
      [](const Inputs& in) { return layer_norm(transpose(in[0], 0, 1), Tensor{}, Tensor{}); },
      {leaf({5, 3}, 23)});
}

TEST_CASE("gradcheck elementwise and reduce ops of sliced inputs", "[gradcheck][ops]") {
  REQUIRE_GRADCHECK(
      [](const Inputs& in) {
        const Tensor evens = slice(in[0], 1, 0, 6, 2);
        const Tensor odds = slice(in[0], 1, 1, 6, 2);
        return max(evens * odds + narrow(in[1], 0, 1, 2), {0}) + sum(gelu(odds), {1}, true);
      },
      {leaf({2, 6}, 24), leaf({4, 3}, 25)});
}

TEST_CASE("gradcheck cross_entropy and embedding fed through views", "[gradcheck][ops]") {
  const Tensor targets = Tensor::from_ids({0, 2, 1, 2, -100, 0}, {3, 2});
  REQUIRE_GRADCHECK(
      [targets](const Inputs& in) { return cross_entropy(permute(in[0], {1, 0, 2}), targets); },
      {leaf({2, 3, 3}, 26)});
  const Tensor ids = Tensor::from_ids({1, 0, 1}, {3});
  REQUIRE_GRADCHECK([ids](const Inputs& in) { return embedding(transpose(in[0], 0, 1), ids); },
                    {leaf({4, 2}, 27)});
}
