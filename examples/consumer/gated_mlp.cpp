// A custom module written outside the tinygpt tree, against the installed package: a gated MLP
// (GLU, Dauphin et al. 2017) made of existing ops, with its parameters registered by name,
// gradient-checked in float64 with tinygpt's public gradcheck, then trained with AdamW until it
// fits a target. Exits non-zero on a failure.
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "tinygpt/autograd.hpp"
#include "tinygpt/nn.hpp"
#include "tinygpt/train.hpp"
#include "tinygpt/version.hpp"

using tinygpt::Tensor;

// y = (sigmoid(x W_gate + b_gate) * (x W_value)) W_out + x: the gate decides, per hidden unit,
// how much of the value path passes; the residual keeps the input.
class GatedMLP : public tinygpt::nn::Module {
 public:
  GatedMLP(int64_t dim, int64_t hidden, tinygpt::Generator& gen) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
    w_gate = register_parameter("gate.weight", Tensor::randn({dim, hidden}, gen) * scale);
    b_gate = register_parameter("gate.bias", Tensor::zeros({hidden}));
    w_value = register_parameter("value.weight", Tensor::randn({dim, hidden}, gen) * scale);
    out = register_module("out", std::make_shared<tinygpt::nn::Linear>(hidden, dim, true, gen));
  }

  Tensor forward(const Tensor& x) const {  // x (B,T,C) -> (B,T,C)
    const Tensor gate = tinygpt::sigmoid(tinygpt::linear(x, w_gate, b_gate));  // (B,T,H)
    const Tensor value = tinygpt::matmul(x, w_value);                          // (B,T,H)
    return out->forward(gate * value) + x;
  }

  Tensor w_gate, b_gate, w_value;  // (C,H), (H), (C,H)
  std::shared_ptr<tinygpt::nn::Linear> out;
};

int main() {
  tinygpt::Generator gen(7);
  GatedMLP block(4, 6, gen);
  block.to(tinygpt::DType::f64);

  fmt::print("tinygpt {}: GatedMLP with {} parameters\n", TINYGPT_VERSION, block.num_parameters());
  for (const auto& [name, p] : block.named_parameters()) fmt::print("  {:<14} {}\n", name, p.shape());

  // Checks the input's gradient and every parameter's: gradcheck perturbs these tensors in
  // place, and forward reads the parameters through the module.
  std::vector<Tensor> inputs{
      Tensor::randn({2, 3, 4}, gen, tinygpt::DType::f64).set_requires_grad()};
  for (const Tensor& p : block.parameters()) inputs.push_back(p);
  const tinygpt::GradcheckResult r = tinygpt::gradcheck(
      [&](const std::vector<Tensor>& in) { return block.forward(in[0]); }, inputs);

  if (!r.ok || r.checked != 2 * 3 * 4 + block.num_parameters()) {
    fmt::print(stderr, "gradcheck GatedMLP: FAILED ({} elements checked): {}\n", r.checked,
               r.message());
    return 1;
  }
  fmt::print("gradcheck GatedMLP: ok; {}\n", r.message());

  // The same module in float32 learns a target with the library's AdamW: the loss must fall.
  GatedMLP model(4, 16, gen);
  tinygpt::train::AdamW optimizer(tinygpt::train::decay_groups(model, 0.0), {1e-2, 0.9, 0.99, 1e-8});
  const Tensor x = Tensor::randn({64, 4}, gen);
  const Tensor target = tinygpt::tanh(x * 2.0);
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 200; ++step) {
    optimizer.zero_grad();
    const Tensor loss = tinygpt::mean(tinygpt::pow(model.forward(x) - target, 2.0));
    loss.backward();
    optimizer.step();
    (step == 0 ? first : last) = loss.item();
  }
  if (!(last < 0.2 * first)) {
    fmt::print(stderr, "AdamW on GatedMLP: FAILED (mse {:.4f} -> {:.4f})\n", first, last);
    return 1;
  }
  fmt::print("AdamW on GatedMLP: ok (mse {:.4f} -> {:.4f} in 200 steps)\n", first, last);
  return 0;
}
