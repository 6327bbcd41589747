// scale_attn_weights false (train --no-attention-scale): the weights are the softmax of the raw
// dot products q.k, on the fused and the general path alike, and the GPT's loss gradchecks.
#include <cmath>

#include "nn_helpers.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

nn::GPTConfig unscaled_config() {
  nn::GPTConfig c = tiny_config(2);
  c.n_head = 2;
  c.n_embd = 8;
  c.scale_attn_weights = false;
  return c;
}

}  // namespace

TEST_CASE("unscaled attention weighs by softmax(q.k), checked by hand", "[nn][attention][scale]") {
  nn::AttentionOptions options;
  options.d_model = 8;
  options.n_heads = 2;
  options.scale_scores = false;
  Generator init(5);
  nn::MultiHeadSelfAttention attention(options, init, std::make_shared<Generator>(1));
  attention.to(DType::f64);
  scramble(attention, 6, 0.5);
  attention.set_keep_attention_weights(true);
  Generator gen(7);
  const Tensor x = Tensor::randn({1, 5, 8}, gen, DType::f64);
  attention.forward(x);
  const Tensor packed = attention.c_attn->forward(x);  // (1, 5, q 8 | k 8 | v 8)
  const Tensor& weights = attention.attention_weights();
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i = 0; i < 5; ++i) {
      std::vector<double> e;
      double total = 0.0;
      for (int64_t j = 0; j <= i; ++j) {
        double dot = 0.0;
        for (int64_t d = 0; d < 4; ++d) dot += packed.at({0, i, h * 4 + d}) * packed.at({0, j, 8 + h * 4 + d});
        e.push_back(std::exp(dot));
        total += e.back();
      }
      for (int64_t j = 0; j <= i; ++j) {
        CHECK(weights.at({0, h, i, j}) == Approx(e[static_cast<size_t>(j)] / total).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("unscaled attention: fused equals general, and the GPT's loss gradchecks",
          "[gradcheck][nn][attention][scale]") {
  nn::GPTConfig config = unscaled_config();
  config.block_size = 80;  // the fused kernel's query blocks of 64 and a partial one
  std::vector<double> losses;
  for (bool fused : {true, false}) {
    nn::GPT model(config, 11);
    model.to(DType::f64);
    scramble(model, 12, 0.2);
    model.set_keep_attention_weights(!fused);
    losses.push_back(model.loss(random_ids({2, 80}, 11, 6), random_ids({2, 80}, 11, 7)).item());
  }
  CHECK(losses[0] == Approx(losses[1]).epsilon(1e-12));
  for (bool fused : {true, false}) {
    INFO((fused ? "fused" : "general"));
    nn::GPT model(unscaled_config(), 3);
    model.set_keep_attention_weights(!fused);
    const Tensor tokens = random_ids({2, 6}, 11, 1);
    const Tensor targets = random_ids({2, 6}, 11, 2);
    scramble(model, 9, 0.5);
    require_module_gradcheck(model, {}, [&](const std::vector<Tensor>&) { return model.loss(tokens, targets); });
  }
}

TEST_CASE("linear attention has no scale to leave out", "[nn][attention][scale]") {
  nn::GPTConfig config = unscaled_config();
  config.vocab_size = 11;
  config.attention = AttentionPattern::linear_attention();
  CHECK_THROWS_AS(config.validate(), SettingError);
}
