// Tape mechanics: how gradients flow, accumulate and are released, and how misuse is reported.
#include "autograd_test_utils.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

using Values = std::vector<double>;

namespace {

Tensor leaf_of(const Values& values) {
  return f64(values, Shape{static_cast<int64_t>(values.size())}).set_requires_grad();
}

// A user-defined op y = x^2 through record(); `wrong_shape` makes its backward return a
// gradient of shape () instead of x's.
Tensor custom_square(const Tensor& x, bool wrong_shape) {
  Tensor out = Tensor::empty(x.shape(), DType::f64);
  const double* px = x.data<double>();
  double* po = out.data<double>();
  for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * px[i];
  return record("custom_square", out, {x}, [x = x.detach(), wrong_shape](const Tensor& g) {
    Tensor gx = g * x * 2.0;
    return std::vector<Tensor>{wrong_shape ? sum(gx) : gx};
  });
}

}  // namespace

TEST_CASE("diamond graph: a shared subexpression gets the summed gradient", "[tape]") {
  const Tensor x = leaf_of({1, 2, -3});
  const Tensor s = x * x;              // used by both branches
  sum(s * 3.0 + s).backward();         // d/dx = (3 + 1) * 2x
  REQUIRE(x.grad().to_vector() == Values{8, 16, -24});
}

TEST_CASE("a leaf used twice in one op gets both contributions", "[tape]") {
  const Tensor x = leaf_of({1.5, -2});
  sum(x * x).backward();
  REQUIRE(x.grad().to_vector() == Values{3, -4});
  const Tensor y = leaf_of({1, 1});
  sum(y + y).backward();
  REQUIRE(y.grad().to_vector() == Values{2, 2});
}

TEST_CASE("gradients accumulate across backward calls until zero_grad", "[tape]") {
  Tensor x = leaf_of({1, 2});
  sum(x * 3.0).backward();
  sum(x * 3.0).backward();
  REQUIRE(x.grad().to_vector() == Values{6, 6});
  x.zero_grad();
  REQUIRE_FALSE(x.grad().defined());
  sum(x * x).backward();
  REQUIRE(x.grad().to_vector() == Values{2, 4});
}

TEST_CASE("leaves handed the same gradient buffer each get a private copy", "[tape]") {
  const Tensor x = leaf_of({1, 2});
  const Tensor y = leaf_of({0, 0});
  sum(x + y).backward();  // add hands the same buffer to both inputs
  Tensor gx = x.grad();
  gx.data<double>()[0] = 100.0;
  REQUIRE(y.grad().to_vector() == Values{1, 1});
}

TEST_CASE("NoGradGuard records nothing and restores the previous mode", "[tape]") {
  const Tensor x = leaf_of({1, 2});
  REQUIRE(grad_enabled());
  {
    NoGradGuard outer;
    REQUIRE_FALSE(grad_enabled());
    const Tensor y = exp(x) * 2.0;
    REQUIRE_FALSE(y.requires_grad());
    REQUIRE(y.is_leaf());
    {
      NoGradGuard inner;
      REQUIRE_FALSE(grad_enabled());
    }
    REQUIRE_FALSE(grad_enabled());
  }
  REQUIRE(grad_enabled());
  REQUIRE(exp(x).requires_grad());
}

TEST_CASE("ops on inputs that do not require grad record nothing", "[tape]") {
  const Tensor a = f64({1, 2}, {2});
  const Tensor y = a * a + 1.0;
  REQUIRE_FALSE(y.requires_grad());
  REQUIRE(std::string(y.grad_fn_name()).empty());
  const Tensor x = leaf_of({3, 4});
  const Tensor z = x * a;
  REQUIRE(z.requires_grad());
  sum(z).backward();
  REQUIRE(x.grad().to_vector() == Values{1, 2});
  REQUIRE_FALSE(a.grad().defined());
}

TEST_CASE("detach cuts the graph", "[tape]") {
  const Tensor x = leaf_of({2, -1});
  const Tensor y = x.detach() * x;  // only the second factor carries a gradient
  REQUIRE_FALSE(x.detach().requires_grad());
  sum(y).backward();
  REQUIRE(x.grad().to_vector() == Values{2, -1});
}

TEST_CASE("retain_graph=true allows a second backward that doubles the gradients", "[tape]") {
  const Tensor x = leaf_of({1, 3});
  const Tensor loss = sum(x * x);
  loss.backward(/*retain_graph=*/true);
  REQUIRE(x.grad().to_vector() == Values{2, 6});
  loss.backward();
  REQUIRE(x.grad().to_vector() == Values{4, 12});
}

TEST_CASE("a second backward through a freed graph throws GraphError", "[tape][errors]") {
  const Tensor x = leaf_of({1, 3});
  const Tensor loss = sum(exp(x));
  loss.backward();
  REQUIRE_THROWS_NAMING(loss.backward(), GraphError,
                        Contains("backward") && Contains("retain_graph") && Contains("sum"));
}

TEST_CASE("backward on a non-scalar without a gradient throws GraphError", "[tape][errors]") {
  const Tensor x = leaf_of({1, 2, 3});
  const Tensor y = x * 2.0;
  REQUIRE_THROWS_NAMING(y.backward(), GraphError, Contains("backward") && Contains("(3,)"));
  REQUIRE_FALSE(x.grad().defined());
}

TEST_CASE("backward on a tensor that does not require grad throws GraphError",
          "[tape][errors]") {
  const Tensor c = Tensor::scalar(1.0, DType::f64);
  REQUIRE_THROWS_NAMING(c.backward(), GraphError,
                        Contains("backward") && Contains("does not require grad"));
}

TEST_CASE("backward on an undefined tensor throws ValueError", "[tape][errors]") {
  const Tensor undefined;
  REQUIRE_THROWS_AS(undefined.backward(), ValueError);
  REQUIRE_THROWS_AS(undefined.backward(Tensor::ones({1}, DType::f64)), ValueError);
}

TEST_CASE("backward with an explicit gradient scales by it", "[tape]") {
  const Tensor x = f64({1, 2, 3, 4}, {2, 2}).set_requires_grad();
  const Tensor y = x * x;
  y.backward(f64({1, 0, -1, 0.5}, {2, 2}));
  REQUIRE(x.grad().to_vector() == Values{2, 0, -6, 4});
  REQUIRE_THROWS_NAMING((x * 3.0).backward(f64({1, 2}, {2})), GraphError,
                        Contains("(2,)") && Contains("(2, 2)"));
  REQUIRE_THROWS_AS((x * 3.0).backward(Tensor::ones({2, 2}, DType::f32)), GraphError);
}

TEST_CASE("backward on a leaf adds the seed to its own gradient", "[tape]") {
  const Tensor x = leaf_of({5});
  x.backward();
  x.backward(f64({2}, {1}));
  REQUIRE(x.grad().to_vector() == Values{3});
}

TEST_CASE("gradients computed by backward do not themselves require grad", "[tape]") {
  const Tensor x = leaf_of({1, 2});
  sum(x * x).backward();
  REQUIRE_FALSE(x.grad().requires_grad());
  REQUIRE(x.grad().is_leaf());
}

TEST_CASE("a custom op written with record() passes gradcheck", "[tape][gradcheck]") {
  REQUIRE_GRADCHECK([](const Inputs& in) { return custom_square(in[0], false); },
                    {leaf({3, 2}, 5)});
  const Tensor y = custom_square(leaf({2}, 6), false);
  REQUIRE(std::string(y.grad_fn_name()) == "custom_square");
}

TEST_CASE("a custom op whose backward returns a wrong shape throws GraphError",
          "[tape][errors]") {
  const Tensor x = leaf({3, 2}, 7);
  REQUIRE_THROWS_NAMING(sum(custom_square(x, true)).backward(), GraphError,
                        Contains("custom_square") && Contains("()") && Contains("(3, 2)"));
}

TEST_CASE("a custom op whose backward returns too few gradients throws GraphError",
          "[tape][errors]") {
  const Tensor a = leaf({2}, 8), b = leaf({2}, 9);
  const Tensor out = record("two_inputs", Tensor::zeros({2}, DType::f64), {a, b},
                            [](const Tensor& g) { return std::vector<Tensor>{g}; });
  REQUIRE_THROWS_NAMING(sum(out).backward(), GraphError,
                        Contains("two_inputs") && Contains("1 gradients for 2 inputs"));
}

TEST_CASE("record rejects an output that is already part of the graph", "[tape][errors]") {
  const Tensor x = leaf({2}, 10);
  auto identity = [](const Tensor& g) { return std::vector<Tensor>{g}; };
  REQUIRE_THROWS_NAMING(record("alias", x, {x}, identity), GraphError, Contains("alias"));
  const Tensor y = exp(x);
  REQUIRE_THROWS_AS(record("again", y, {x}, identity), GraphError);
}

TEST_CASE("a chain of 100000 ops backpropagates and is freed without deep recursion", "[tape]") {
  const Tensor x = leaf_of({1.0});
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y * 1.0;
  y = sum(y);
  y.backward();
  REQUIRE(x.grad().to_vector() == Values{1.0});
  y = Tensor();  // drops the whole chain
  REQUIRE(x.grad().item() == 1.0);
}

TEST_CASE("op profiler: charges forward and backward time per op, only when on", "[tape]") {
  reset_op_profile();
  Tensor x = leaf_of({1.0, 2.0, 3.0});
  sum(exp(x)).backward();
  CHECK(op_profile().empty());  // off by default

  set_op_profiling(true);
  profile_mark(nullptr);
  sum(exp(x) * 2.0).backward();
  profile_mark("after");
  set_op_profiling(false);
  const auto entries = op_profile();
  auto find = [&](const std::string& name) -> const OpProfileEntry* {
    for (const auto& e : entries) {
      if (e.name == name) return &e;
    }
    return nullptr;
  };
  for (const char* op : {"exp", "mul_scalar", "sum"}) {
    INFO(op);
    const OpProfileEntry* e = find(op);
    REQUIRE(e != nullptr);
    CHECK(e->forward_calls == 1);
    CHECK(e->backward_calls == 1);  // backward's own inner ops are not counted as forward calls
    CHECK(e->forward_seconds >= 0.0);
  }
  REQUIRE(find("after") != nullptr);
  CHECK(find("after")->forward_calls == 1);
  reset_op_profile();
  CHECK(op_profile().empty());
}

TEST_CASE("op profiler: times each product whole and charges it to its op and pass", "[tape]") {
  reset_op_profile();
  Generator gen(3);
  Tensor x = Tensor::randn({6, 5}, gen).set_requires_grad();
  Tensor w = Tensor::randn({5, 4}, gen).set_requires_grad();
  Tensor b = Tensor::randn({4}, gen).set_requires_grad();
  set_op_profiling(true);
  profile_mark(nullptr);
  sum(linear(x, w, b)).backward();
  set_op_profiling(false);
  const auto products = product_profile();
  auto find = [&](bool backward, bool ta, bool tb) -> const ProductProfileEntry* {
    for (const auto& e : products) {
      if (e.op == "linear" && e.backward == backward && e.ta == ta && e.tb == tb) return &e;
    }
    return nullptr;
  };
  const ProductProfileEntry* forward = find(false, false, false);  // x W + b
  const ProductProfileEntry* dx = find(true, false, true);         // g W^T
  const ProductProfileEntry* dw = find(true, true, false);         // x^T g
  REQUIRE(forward != nullptr);
  REQUIRE(dx != nullptr);
  REQUIRE(dw != nullptr);
  CHECK(products.size() == 3);
  CHECK((forward->m == 6 && forward->n == 4 && forward->k == 5 && forward->bias));
  CHECK((dx->m == 6 && dx->n == 5 && dx->k == 4));
  CHECK((dw->m == 5 && dw->n == 4 && dw->k == 6));
  CHECK(forward->calls == 1);
  CHECK(forward->flops() == 2.0 * 6 * 4 * 5);
  const auto ops = op_profile();
  const auto linear_op = std::find_if(ops.begin(), ops.end(), [](const auto& e) { return e.name == "linear"; });
  REQUIRE(linear_op != ops.end());
  CHECK(linear_op->forward_flops == forward->flops());
  CHECK(linear_op->backward_flops == dx->flops() + dw->flops());
  CHECK(time_product_alone(*dw, 2) > 0.0);
  CHECK(time_product_alone(*dw, 2, true) > 0.0);  // on operands flushed to memory first
  reset_op_profile();
  CHECK(product_profile().empty());
}

TEST_CASE("leaf gradients never share a buffer, even when one op hands both the same one",
          "[tape]") {
  // add's backward passes its incoming gradient to both inputs; the leaves must still get
  // buffers of their own (optimisers scale .grad in place).
  Tensor x = leaf_of({1.0, 2.0}), y = leaf_of({3.0, 4.0});
  (x + y).backward(f64({1.0, 1.0}, Shape{2}));
  REQUIRE(x.grad().data<double>() != y.grad().data<double>());
  Tensor(x.grad()).data<double>()[0] = 5.0;
  REQUIRE(y.grad().to_vector() == Values{1.0, 1.0});
}

TEST_CASE("a second backward adds into .grad, without touching a handle the caller kept",
          "[tape]") {
  Tensor x = leaf_of({1.0, 2.0});
  sum(x * 3.0).backward();
  const Tensor first = x.grad();  // the caller keeps the first gradient
  sum(x * 2.0).backward();
  REQUIRE(x.grad().to_vector() == Values{5.0, 5.0});
  REQUIRE(first.to_vector() == Values{3.0, 3.0});
  // With no outside handle the sum is made in place, with the same values.
  Tensor z = leaf_of({1.0});
  sum(z * 3.0).backward();
  sum(z * 2.0).backward();
  sum(z * 1.0).backward();
  REQUIRE(z.grad().to_vector() == Values{6.0});
}
