// Bad calls throw the right exception type, with a message naming the op and the shapes.
#include <limits>

#include "autograd_test_utils.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

Tensor zeros64(const Shape& shape) { return Tensor::zeros(shape, DType::f64); }

}  // namespace

TEST_CASE("add, sub, mul and div of unbroadcastable shapes throw ShapeError", "[errors]") {
  const Tensor a = zeros64({3, 4}), b = zeros64({5});
  REQUIRE_THROWS_NAMING(add(a, b), ShapeError,
                        Contains("add") && Contains("(3, 4)") && Contains("(5,)"));
  REQUIRE_THROWS_NAMING(sub(a, b), ShapeError, Contains("sub") && Contains("(3, 4)"));
  REQUIRE_THROWS_NAMING(zeros64({2, 3}) * zeros64({3, 2}), ShapeError,
                        Contains("mul") && Contains("(2, 3)") && Contains("(3, 2)"));
  REQUIRE_THROWS_NAMING(div(zeros64({2, 1, 3}), zeros64({4, 2})), ShapeError,
                        Contains("div") && Contains("(2, 1, 3)") && Contains("(4, 2)"));
}

TEST_CASE("impossible broadcast_to and sum_to throw ShapeError", "[errors]") {
  REQUIRE_THROWS_NAMING(broadcast_to(zeros64({3}), {2, 4}), ShapeError,
                        Contains("broadcast_to") && Contains("(3,)") && Contains("(2, 4)"));
  REQUIRE_THROWS_NAMING(broadcast_to(zeros64({2, 3}), {3}), ShapeError,
                        Contains("broadcast_to") && Contains("(2, 3)") && Contains("(3,)"));
  REQUIRE_THROWS_NAMING(sum_to(zeros64({2, 3}), {4}), ShapeError,
                        Contains("sum_to") && Contains("(2, 3)") && Contains("(4,)"));
}

TEST_CASE("mixing dtypes throws ValueError naming both", "[errors]") {
  const Tensor a = Tensor::zeros({2}, DType::f32), b = zeros64({2});
  REQUIRE_THROWS_NAMING(add(a, b), ValueError,
                        Contains("add") && Contains("f32") && Contains("f64") && Contains("(2,)"));
  REQUIRE_THROWS_NAMING(matmul(zeros64({2, 2}), Tensor::zeros({2, 2})), ValueError,
                        Contains("matmul") && Contains("f64") && Contains("f32"));
  REQUIRE_THROWS_NAMING(concat({a, b}, 0), ValueError, Contains("concat") && Contains("f64"));
  REQUIRE_THROWS_NAMING(layer_norm(a, b, Tensor{}), ValueError, Contains("layer_norm"));
}

TEST_CASE("floating-point ops reject i64 tensors with ValueError", "[errors]") {
  const Tensor ids = Tensor::from_ids({1, 2}, {2});
  REQUIRE_THROWS_NAMING(exp(ids), ValueError, Contains("exp") && Contains("i64"));
  REQUIRE_THROWS_NAMING(ids * ids, ValueError, Contains("mul") && Contains("i64"));
  REQUIRE_THROWS_NAMING(softmax(ids), ValueError, Contains("softmax") && Contains("i64"));
  REQUIRE_THROWS_NAMING(sum(ids), ValueError, Contains("sum") && Contains("i64"));
  Generator gen(1);
  REQUIRE_THROWS_NAMING(dropout(ids, 0.5, true, gen), ValueError, Contains("dropout"));
}

TEST_CASE("matmul of mismatched inner, batch or rank throws ShapeError", "[errors]") {
  REQUIRE_THROWS_NAMING(matmul(zeros64({2, 3}), zeros64({4, 5})), ShapeError,
                        Contains("matmul") && Contains("(2, 3)") && Contains("(4, 5)"));
  REQUIRE_THROWS_NAMING(matmul(zeros64({2, 3}), zeros64({2, 5}), false, true), ShapeError,
                        Contains("matmul") && Contains("(2, 5)^T"));
  REQUIRE_THROWS_NAMING(matmul(zeros64({2, 3, 4}), zeros64({3, 4, 5})), ShapeError,
                        Contains("matmul") && Contains("batch") && Contains("(2, 3, 4)"));
  REQUIRE_THROWS_NAMING(matmul(zeros64({3}), zeros64({3, 2})), ShapeError,
                        Contains("matmul") && Contains("(3,)"));
  REQUIRE_THROWS_NAMING(matmul(zeros64({1, 1, 1, 2, 3}), zeros64({3, 2})), ShapeError,
                        Contains("matmul") && Contains("(1, 1, 1, 2, 3)"));
}

TEST_CASE("concat of mismatched shapes or no tensors throws", "[errors]") {
  REQUIRE_THROWS_NAMING(concat({zeros64({2, 3}), zeros64({2, 4})}, 0), ShapeError,
                        Contains("concat") && Contains("(2, 4)") && Contains("(2, 3)"));
  REQUIRE_THROWS_NAMING(concat({zeros64({2, 3}), zeros64({2, 3, 1})}, 1), ShapeError,
                        Contains("concat") && Contains("(2, 3, 1)"));
  REQUIRE_THROWS_NAMING(concat({}, 0), ValueError, Contains("concat"));
}

TEST_CASE("an axis out of range throws ShapeError naming the op, axis and shape", "[errors]") {
  const Tensor x = zeros64({2, 3});
  REQUIRE_THROWS_NAMING(sum(x, {2}), ShapeError,
                        Contains("sum") && Contains("axis 2") && Contains("(2, 3)"));
  REQUIRE_THROWS_NAMING(mean(x, {-3}), ShapeError, Contains("mean") && Contains("axis -3"));
  REQUIRE_THROWS_NAMING(max(x, {0, 0}), ShapeError,
                        Contains("max") && Contains("twice") && Contains("(2, 3)"));
  REQUIRE_THROWS_NAMING(softmax(x, 2), ShapeError, Contains("softmax") && Contains("(2, 3)"));
  REQUIRE_THROWS_NAMING(log_softmax(x, -3), ShapeError, Contains("log_softmax"));
  REQUIRE_THROWS_NAMING(softmax(Tensor::scalar(1.0, DType::f64)), ShapeError,
                        Contains("softmax") && Contains("()"));
  REQUIRE_THROWS_NAMING(transpose(x, 0, 5), ShapeError, Contains("transpose") && Contains("5"));
  REQUIRE_THROWS_NAMING(permute(x, {0}), ShapeError, Contains("permute") && Contains("(2, 3)"));
  REQUIRE_THROWS_NAMING(permute(x, {1, 1}), ShapeError,
                        Contains("permute") && Contains("repeated"));
  REQUIRE_THROWS_NAMING(narrow(x, 2, 0, 1), ShapeError, Contains("narrow"));
  REQUIRE_THROWS_NAMING(concat({x, x}, 2), ShapeError, Contains("concat"));
  REQUIRE_THROWS_NAMING(split(x, {1, 1}, -3), ShapeError, Contains("split"));
}

TEST_CASE("a bad reshape throws ShapeError naming both shapes", "[errors]") {
  const Tensor x = zeros64({2, 3});
  REQUIRE_THROWS_NAMING(reshape(x, {4, -1}), ShapeError,
                        Contains("reshape") && Contains("(2, 3)") && Contains("(4, -1)"));
  REQUIRE_THROWS_NAMING(reshape(x, {5}), ShapeError, Contains("reshape") && Contains("(5)"));
  REQUIRE_THROWS_NAMING(reshape(x, {-1, -1}), ShapeError, Contains("reshape"));
  REQUIRE_THROWS_NAMING(reshape(x, {-2, -3}), ShapeError, Contains("reshape"));
}

TEST_CASE("bad slices, narrows, splits and chunks throw", "[errors]") {
  const Tensor x = zeros64({4, 3});
  REQUIRE_THROWS_NAMING(narrow(x, 0, 2, 3), IndexError,
                        Contains("narrow") && Contains("[2, 5)") && Contains("(4, 3)"));
  REQUIRE_THROWS_NAMING(narrow(x, 1, -1, 1), IndexError, Contains("narrow"));
  REQUIRE_THROWS_NAMING(slice(x, 0, 0, 4, 0), ValueError, Contains("slice") && Contains("step"));
  REQUIRE_THROWS_NAMING(split(x, {1, 2}, 0), ShapeError,
                        Contains("split") && Contains("(1, 2)") && Contains("(4, 3)"));
  REQUIRE_THROWS_NAMING(chunk(x, 0, 0), ValueError, Contains("chunk"));
}

TEST_CASE("mean and max over zero elements throw ShapeError", "[errors]") {
  REQUIRE_THROWS_NAMING(mean(zeros64({0, 3}), {0}), ShapeError,
                        Contains("mean") && Contains("(0, 3)"));
  REQUIRE_THROWS_NAMING(max(zeros64({2, 0}), {1}), ShapeError,
                        Contains("max") && Contains("(2, 0)"));
}

TEST_CASE("an out-of-range embedding id throws IndexError naming id, position and V",
          "[errors]") {
  const Tensor w = zeros64({5, 4});
  REQUIRE_THROWS_NAMING(embedding(w, Tensor::from_ids({0, 4, 2, 5, 1, 1}, {2, 3})), IndexError,
                        Contains("embedding") && Contains("id 5") && Contains("(1, 0)") &&
                            Contains("[0, 5)") && Contains("(5, 4)") && Contains("(2, 3)"));
  REQUIRE_THROWS_NAMING(embedding(w, Tensor::from_ids({-1}, {1})), IndexError,
                        Contains("embedding") && Contains("id -1") && Contains("(0)"));
}

TEST_CASE("embedding rejects non-i64 ids and a weight that is not 2-D", "[errors]") {
  REQUIRE_THROWS_NAMING(embedding(zeros64({5, 4}), Tensor::from({1, 2}, {2})), ValueError,
                        Contains("embedding") && Contains("i64") && Contains("f32"));
  REQUIRE_THROWS_NAMING(embedding(zeros64({5}), Tensor::from_ids({1}, {1})), ShapeError,
                        Contains("embedding") && Contains("(5,)"));
}

TEST_CASE("an out-of-range cross_entropy target throws IndexError", "[errors]") {
  const Tensor logits = zeros64({4, 3});
  REQUIRE_THROWS_NAMING(cross_entropy(logits, Tensor::from_ids({0, 2, 3, 1}, {4})), IndexError,
                        Contains("cross_entropy") && Contains("target 3") && Contains("(2)") &&
                            Contains("[0, 3)") && Contains("(4, 3)"));
  // -1 is not the ignore_index here, so it is out of range too.
  REQUIRE_THROWS_NAMING(cross_entropy(logits, Tensor::from_ids({0, -1, 0, 0}, {4})), IndexError,
                        Contains("cross_entropy") && Contains("target -1"));
  REQUIRE_NOTHROW(cross_entropy(logits, Tensor::from_ids({0, -1, 0, 0}, {4}), -1));
}

TEST_CASE("cross_entropy with mismatched shapes or float targets throws", "[errors]") {
  REQUIRE_THROWS_NAMING(cross_entropy(zeros64({4, 3}), Tensor::from_ids({0, 1, 2}, {3})),
                        ShapeError,
                        Contains("cross_entropy") && Contains("(3,)") && Contains("(4, 3)"));
  REQUIRE_THROWS_NAMING(cross_entropy(zeros64({2, 2, 3}), Tensor::from_ids({0, 1}, {2})),
                        ShapeError, Contains("cross_entropy") && Contains("(2, 2, 3)"));
  REQUIRE_THROWS_NAMING(cross_entropy(zeros64({2, 3}), Tensor::from({0, 1}, {2})), ValueError,
                        Contains("cross_entropy") && Contains("i64"));
}

TEST_CASE("layer_norm with a mismatched weight or bias throws ShapeError", "[errors]") {
  const Tensor x = zeros64({2, 4});
  REQUIRE_THROWS_NAMING(layer_norm(x, zeros64({3}), Tensor{}), ShapeError,
                        Contains("layer_norm") && Contains("weight") && Contains("(3,)") &&
                            Contains("(2, 4)"));
  REQUIRE_THROWS_NAMING(layer_norm(x, Tensor{}, zeros64({1, 4})), ShapeError,
                        Contains("layer_norm") && Contains("bias") && Contains("(1, 4)"));
  REQUIRE_THROWS_NAMING(layer_norm(Tensor::scalar(1.0, DType::f64), Tensor{}, Tensor{}),
                        ShapeError, Contains("layer_norm") && Contains("()"));
}

TEST_CASE("masked_fill with a mask that does not broadcast to x throws ShapeError",
          "[errors]") {
  const Tensor x = zeros64({2, 3});
  REQUIRE_THROWS_NAMING(masked_fill(x, Tensor::from_ids({1, 0}, {2}), 0.0), ShapeError,
                        Contains("masked_fill") && Contains("(2,)") && Contains("(2, 3)"));
  // Broadcasting the mask is fine, growing x is not.
  REQUIRE_THROWS_NAMING(masked_fill(x, Tensor::from_ids({1, 0, 1, 0, 1, 0}, {1, 2, 3}), 0.0),
                        ShapeError, Contains("masked_fill") && Contains("(1, 2, 3)"));
}

TEST_CASE("dropout with p outside 0 <= p < 1 throws ValueError", "[errors]") {
  const Tensor x = zeros64({2});
  Generator gen(1);
  for (double p : {1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    CAPTURE(p);
    REQUIRE_THROWS_NAMING(dropout(x, p, true, gen), ValueError,
                          Contains("dropout") && Contains("(2,)"));
    REQUIRE_THROWS_AS(dropout(x, p, false, gen), ValueError);
  }
}

TEST_CASE("gradcheck refuses f32 inputs", "[errors]") {
  const Tensor x = Tensor::ones({2}).set_requires_grad();
  REQUIRE_THROWS_NAMING(gradcheck([](const Inputs& in) { return in[0]; }, {x}), ValueError,
                        Contains("gradcheck") && Contains("f32"));
}
