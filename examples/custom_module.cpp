// Trains the custom layers of custom_layers.hpp (a SiLU op, RMSNorm, SwiGLU) to fit a smooth
// function with AdamW: the loss falls as with any built-in module.
#include <fmt/format.h>

#include "custom_layers.hpp"
#include "tinygpt/train/optim.hpp"

using namespace tinygpt;

int main() {
  Generator gen(0);
  custom::ResidualSwiGLU model(8, 32, gen);
  train::AdamW optimizer(train::decay_groups(model, 0.0), {3e-3, 0.9, 0.99, 1e-8});
  fmt::print("ResidualSwiGLU: {} parameters\n", model.num_parameters());
  for (const auto& [name, p] : model.named_parameters()) fmt::print("  {:<16} {}\n", name, p.shape());

  const Tensor x = Tensor::randn({256, 8}, gen);
  const Tensor target = tanh(x * 2.0) + 0.1 * x * x;  // a target the block must learn to produce
  for (int step = 0; step <= 300; ++step) {
    optimizer.zero_grad();
    const Tensor loss = mean(pow(model.forward(x) - target, 2.0));
    loss.backward();
    optimizer.step();
    if (step % 50 == 0) fmt::print("step {:>3}  mse {:.5f}\n", step, loss.item());
  }
}
