// Precision::bf16 as a training step sees it: the loss and every gradient of a GPT stay close to
// f32's (the products round their inputs to bf16, 8 significant bits, and accumulate in f32), and
// f64 -- the gradient checks -- is not touched by the setting.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "tinygpt/autograd.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/nn/gpt.hpp"

using namespace tinygpt;

namespace {

struct LossAndGrads {
  double loss = 0.0;
  std::vector<std::vector<double>> grads;
};

LossAndGrads loss_and_grads(nn::GPT& model, const Tensor& x, const Tensor& y) {
  model.zero_grad();
  Tensor loss = model.loss(x, y);
  loss.backward();
  LossAndGrads out{loss.item(), {}};
  for (const Tensor& p : model.parameters()) out.grads.push_back(p.grad().to_vector());
  return out;
}

double norm(const std::vector<double>& v) {
  double s = 0.0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

}  // namespace

TEST_CASE("a bf16 step's loss and gradients stay within 1% of f32's", "[train][bf16]") {
  if (!bf16_unsupported_reason().empty()) {
    WARN("skipped: " << bf16_unsupported_reason());
    return;
  }
  nn::GPTConfig config;
  config.vocab_size = 65;
  config.block_size = 64;
  config.n_layer = 2;
  config.n_head = 4;
  config.n_embd = 128;
  nn::GPT model(config, 3);
  Generator gen(11);
  std::vector<int64_t> ids(4 * 65);
  for (auto& id : ids) id = gen.randint(65);
  const Tensor tokens = Tensor::from_ids(ids, {4, 65});
  const Tensor x = slice(tokens, 1, 0, 64), y = slice(tokens, 1, 1, 65);

  const LossAndGrads f32 = loss_and_grads(model, x, y);
  LossAndGrads bf16;
  {
    const Bf16ProductsGuard units(GENERATE(from_range(available_bf16_products())));
    const PrecisionGuard precision(Precision::bf16);
    bf16 = loss_and_grads(model, x, y);
  }
  CHECK(matmul_precision() == Precision::f32);  // the guard put it back
  INFO("f32 loss " << f32.loss << ", bf16 loss " << bf16.loss);
  CHECK(bf16.loss != f32.loss);  // the products did round their inputs
  CHECK(std::abs(bf16.loss - f32.loss) <= 1e-3 * f32.loss);
  const auto params = model.named_parameters();
  for (size_t i = 0; i < f32.grads.size(); ++i) {
    std::vector<double> diff(f32.grads[i].size());
    for (size_t j = 0; j < diff.size(); ++j) diff[j] = bf16.grads[i][j] - f32.grads[i][j];
    INFO(params[i].first << ": |bf16 - f32| / |f32| = " << norm(diff) / norm(f32.grads[i]));
    CHECK(norm(diff) <= 1e-2 * norm(f32.grads[i]));
  }
}

TEST_CASE("f64 products ignore the bf16 setting", "[train][bf16]") {
  if (!bf16_unsupported_reason().empty()) return;
  Generator gen(5);
  const Tensor a = Tensor::randn({70, 50}, gen, DType::f64);
  const Tensor b = Tensor::randn({50, 90}, gen, DType::f64);
  const std::vector<double> plain = matmul(a, b).to_vector();
  const PrecisionGuard precision(Precision::bf16);
  CHECK(matmul(a, b).to_vector() == plain);
}
