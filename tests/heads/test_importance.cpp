// Head importance: the gate's gradient is checked against finite differences in float64, and
// the importance is the mean of its absolute value over the windows, normalised per layer.
#include <cmath>

#include <catch2/catch.hpp>

#include "nn/nn_helpers.hpp"
#include "tinygpt/autograd/gradcheck.hpp"
#include "tinygpt/heads/importance.hpp"

using namespace tinygpt;

namespace {

std::unique_ptr<nn::GPT> scrambled_f64_model() {
  auto model = std::make_unique<nn::GPT>(testing::tiny_config(2), 5);
  testing::scramble(*model, 9, 0.4);
  model->to(DType::f64);
  return model;
}

}  // namespace

TEST_CASE("importance: the head gates' gradient passes a float64 gradcheck", "[heads][importance]") {
  const auto owned = scrambled_f64_model();
  nn::GPT& model = *owned;
  model.eval();
  const std::vector<int64_t> window = {1, 4, 2, 8, 5, 7, 3, 9};
  Generator gen(2);
  std::vector<Tensor> gates = {Tensor::uniform({2}, gen, 0.5, 1.5, DType::f64).set_requires_grad(),
                               Tensor::uniform({2}, gen, 0.5, 1.5, DType::f64).set_requires_grad()};
  const GradcheckResult r = gradcheck(
      [&](const std::vector<Tensor>& in) { return heads::gated_loss(model, in, window); }, gates);
  INFO(r.message());
  CHECK(r.ok);
  CHECK(r.checked == 4);
}

TEST_CASE("importance: mean |dL/dgate| over the windows, divided by the layer's l2 norm",
          "[heads][importance]") {
  const auto owned = scrambled_f64_model();
  nn::GPT& model = *owned;
  const std::vector<std::vector<int64_t>> windows = {{1, 4, 2, 8, 5}, {3, 3, 7, 0, 10}};
  const std::vector<heads::HeadImportance> importance = heads::head_importance(model, windows);
  REQUIRE(importance.size() == 4);
  // Layer 1 head 0 by central differences of the gate around 1.
  double expected = 0.0;
  for (const auto& window : windows) {
    const auto loss_at = [&](double g) {
      const std::vector<Tensor> gates = {Tensor::ones({2}, DType::f64),
                                         Tensor::from({g, 1.0}, {2}, DType::f64)};
      return heads::gated_loss(model, gates, window).item();
    };
    expected += std::abs(loss_at(1.0 + 1e-6) - loss_at(1.0 - 1e-6)) / 2e-6 / 2.0;
  }
  CHECK(importance[2].head == heads::HeadRef{1, 0});
  CHECK(importance[2].raw == Approx(expected).epsilon(1e-5));
  const double norm = std::hypot(importance[2].raw, importance[3].raw);
  CHECK(importance[3].normalised == Approx(importance[3].raw / norm));
  for (const Tensor& p : model.parameters()) CHECK_FALSE(p.grad().defined());
  const nlohmann::json json = heads::importance_json(importance);
  CHECK(json[3]["layer"] == 1);
  CHECK(json[3]["normalised"].get<double>() == Approx(importance[3].normalised));
  CHECK_THROWS_AS(heads::head_importance(model, {}), ValueError);
}
