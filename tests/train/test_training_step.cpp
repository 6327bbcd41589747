// The parallel parts of a training step: gradient clipping and whole Trainer steps give the same
// numbers on any thread count (resuming a run relies on exactness), and a warm step allocates
// nothing from the system.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "threads_scope.hpp"
#include "tinygpt/autograd.hpp"
#include "tinygpt/autograd/precision.hpp"
#include "tinygpt/train/trainer.hpp"

using namespace tinygpt;
using tinygpt::testing::ThreadsScope;

namespace {

std::vector<Tensor> params_with_grads(uint64_t seed) {
  Generator gen(seed);
  std::vector<Tensor> params;
  for (int64_t n : {100000, 7, 70000, 1}) {
    Tensor p = Tensor::zeros({n}).set_requires_grad();
    p.set_grad(Tensor::randn({n}, gen));
    params.push_back(p);
  }
  return params;
}

std::vector<std::vector<double>> grads_of(const std::vector<Tensor>& params) {
  std::vector<std::vector<double>> out;
  for (const Tensor& p : params) out.push_back(p.grad().to_vector());
  return out;
}

}  // namespace

TEST_CASE("clip_grad_norm: the global norm in double, the same on 1 and 2 threads", "[train]") {
  double norms[2];
  std::vector<std::vector<double>> clipped[2];
  for (int threads : {1, 2}) {
    ThreadsScope scope(threads);
    const auto params = params_with_grads(3);
    double want = 0.0;
    for (const Tensor& p : params) {
      for (double g : p.grad().to_vector()) want += g * g;
    }
    norms[threads - 1] = train::clip_grad_norm(params, 1.0);
    REQUIRE(norms[threads - 1] == Approx(std::sqrt(want)).epsilon(1e-12));
    clipped[threads - 1] = grads_of(params);
    double after = 0.0;
    for (const auto& g : clipped[threads - 1]) {
      for (double v : g) after += v * v;
    }
    REQUIRE(std::sqrt(after) == Approx(1.0).epsilon(1e-5));
  }
  REQUIRE(norms[0] == norms[1]);
  REQUIRE(clipped[0] == clipped[1]);
}

TEST_CASE("training steps are bit-identical on 1 and 2 threads and allocate nothing once warm "
          "in f32 and in bf16",
          "[train][slow]") {
  // bf16 on each kernel of its products this CPU has (Bf16Products), whichever it defaults to.
  const std::string run = GENERATE(as<std::string>{}, "f32", "bf16 dot_pairs", "bf16 f32_fma", "bf16 amx");
  const std::string precision = run.substr(0, run.find(' '));
  Bf16Products units_here = bf16_products();
  if (precision == "bf16") {
    const std::vector<Bf16Products> units = available_bf16_products();
    const auto named = std::find_if(units.begin(), units.end(), [&](Bf16Products u) {
      return run == std::string("bf16 ") + bf16_products_name(u);
    });
    if (named == units.end()) return;  // not on this CPU
    units_here = *named;
  }
  const Bf16ProductsGuard units(units_here);
  // Large enough that matmul splits its products across threads, including the tied LM head's
  // narrow weight gradient (which OpenBLAS would compute with other kernels if split too thin).
  std::vector<int64_t> tokens(5000);
  Generator gen(1);
  for (auto& t : tokens) t = gen.randint(34);
  const data::TextDataset dataset(tokens, 80, 0.1);  // 80 > 64: two attention query blocks
  nn::GPTConfig config;
  config.vocab_size = 34;
  config.block_size = 80;
  config.n_layer = 2;
  config.n_head = 4;
  config.n_embd = 64;
  train::TrainOptions options;
  options.batch = 10;  // LM head weight gradient: 34 x 800 x 64, two thin panels on 2 threads
  options.steps = 6;
  options.warmup = 2;
  options.precision = precision;
  std::vector<double> losses[2];
  std::vector<std::vector<double>> weights[2];
  for (int threads : {1, 2}) {
    ThreadsScope scope(threads);
    nn::GPT model(config, 5);
    train::Trainer trainer(model, dataset, options);
    trainer.step();
    trainer.step();
    const int64_t warm = memory_stats().system_allocations;
    while (!trainer.done()) losses[threads - 1].push_back(trainer.step().loss);
    REQUIRE(memory_stats().system_allocations == warm);
    for (const Tensor& p : model.parameters()) weights[threads - 1].push_back(p.to_vector());
  }
  REQUIRE(losses[0] == losses[1]);
  REQUIRE(weights[0] == weights[1]);
}
