// Gradient accumulation: a step over N micro-batches of batch/N windows is the step over the
// whole batch (token-weighted, so neither the loss nor the clipped norm is scaled by N), to
// rounding: after 10 steps the weights agree within 1e-6 relative (weights_close.hpp says how)
// and so do the logged gradient norm and loss, and the same windows were drawn.
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "tinygpt/autograd.hpp"
#include "tinygpt/train/trainer.hpp"
#include "weights_close.hpp"

using namespace tinygpt;

namespace {

struct AccumulatedRun {
  nn::NamedTensors weights;
  std::vector<double> grad_norms, losses;
  Generator::State data_rng{};
};

// 10 AdamW steps of a small GPT on random tokens, with `grad_accum` micro-batches per step.
AccumulatedRun train_steps(int64_t grad_accum, double grad_clip) {
  std::vector<int64_t> tokens(4000);
  Generator gen(7);
  for (auto& t : tokens) t = gen.randint(29);
  const data::TextDataset dataset(tokens, 24, 0.1);
  nn::GPTConfig config;
  config.vocab_size = 29;
  config.block_size = 24;
  config.n_layer = 2;
  config.n_head = 4;
  config.n_embd = 32;
  train::TrainOptions options;
  options.batch = 8;
  options.grad_accum = grad_accum;
  options.steps = 10;
  options.warmup = 2;
  options.lr = 3e-3;
  options.grad_clip = grad_clip;
  nn::GPT model(config, 11);
  train::Trainer trainer(model, dataset, options);
  AccumulatedRun run;
  while (!trainer.done()) {
    const train::StepStats s = trainer.step();
    run.grad_norms.push_back(s.grad_norm);
    run.losses.push_back(s.loss);
    CHECK(s.tokens == 8 * 24);
  }
  run.weights = model.state_dict();
  run.data_rng = trainer.data_generator().state();
  return run;
}

double worst_relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(std::abs(a[i]), std::abs(b[i])));
  }
  return worst;
}

}  // namespace

TEST_CASE("grad-accum 2 and 4 match one batch of the full size within 1e-6 after 10 steps",
          "[train][grad_accum]") {
  const double clip = GENERATE(1.0, 0.0);  // 1.0 clips every step here; 0 never does
  INFO("grad_clip " << clip);
  const AccumulatedRun whole = train_steps(1, clip);
  for (int64_t n : {2, 4}) {
    INFO("grad_accum " << n);
    const AccumulatedRun split = train_steps(n, clip);
    CHECK(split.data_rng == whole.data_rng);  // the same windows were drawn
    CHECK(worst_relative_error(split.grad_norms, whole.grad_norms) < 1e-6);
    CHECK(worst_relative_error(split.losses, whole.losses) < 1e-6);
    const testing::WeightsDiff diff = testing::compare_weights(split.weights, whole.weights);
    INFO("worst tensor " << diff.worst_name << ": " << diff.worst_relative);
    CHECK(diff.worst_relative < 1e-6);
  }
}

TEST_CASE("grad-accum must divide the batch", "[train][grad_accum][errors]") {
  train::TrainOptions options;
  options.batch = 12;
  options.grad_accum = 5;
  CHECK_THROWS_WITH(options.validate(), Catch::Contains("batch 12 is not divisible by grad-accum 5"));
  options.grad_accum = 0;
  CHECK_THROWS_WITH(options.validate(), Catch::Contains("grad_accum must be in [1, 1048576], got 0"));
  options.grad_accum = 4;
  CHECK_NOTHROW(options.validate());
}
