// The LLaMA-style model of examples/own_model: its parts and its whole loss gradient-checked in
// float64, its attention causal, its config read back from what it writes.
#include "nn/nn_helpers.hpp"
#include "own_model/own_llama.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

own::OwnLlamaConfig tiny_llama(bool tied) {
  own::OwnLlamaConfig c;
  c.vocab_size = 11;
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 8;
  c.hidden = 12;
  c.tie_weights = tied;
  return c;
}

// Weights far above the initial scale, so that every path carries a gradient above round-off.
void check_whole_loss(bool tied) {
  own::OwnLlama model(tiny_llama(tied), 3);
  scramble(model, 9, 0.5);
  const Tensor tokens = random_ids({2, 6}, 11, 1);
  const Tensor targets = random_ids({2, 6}, 11, 2);
  require_module_gradcheck(model, {},
                           [&](const std::vector<Tensor>&) { return model.loss(tokens, targets); });
}

}  // namespace

TEST_CASE("gradcheck own-llama RMSNorm with its eps", "[gradcheck][own-llama]") {
  custom::RMSNorm norm(6, 1e-2);  // an eps large enough to matter in the gradient
  scramble(norm, 2, 1.0);
  require_module_gradcheck(norm, {leaf({2, 3, 6}, 3, 0.3)},
                           [&](const std::vector<Tensor>& in) { return norm.forward(in[0]); });
}

TEST_CASE("gradcheck own-llama SwiGLU feed-forward", "[gradcheck][own-llama]") {
  Generator gen(4);
  custom::SwiGLU ffn(4, 6, gen);
  require_module_gradcheck(ffn, {leaf({2, 3, 4}, 5)},
                           [&](const std::vector<Tensor>& in) { return ffn.forward(in[0]); });
}

TEST_CASE("gradcheck own-llama rotary causal attention keeping its weights", "[gradcheck][own-llama]") {
  Generator gen(6);
  own::Attention attention(tiny_llama(false), gen);
  attention.set_keep_weights(true);
  require_module_gradcheck(attention, {leaf({2, 5, 8}, 7)},
                           [&](const std::vector<Tensor>& in) { return attention.forward(in[0]); });
}

TEST_CASE("gradcheck own-llama loss with respect to every parameter, untied head", "[gradcheck][own-llama]") {
  check_whole_loss(false);
}

TEST_CASE("gradcheck own-llama loss with respect to every parameter, tied head", "[gradcheck][own-llama]") {
  check_whole_loss(true);
}

TEST_CASE("own-llama attention is causal: a later token leaves earlier logits unchanged", "[own-llama]") {
  own::OwnLlama model(tiny_llama(false), 5);
  scramble(model, 6, 0.5);
  std::vector<int64_t> ids = {1, 4, 2, 7, 3, 9};
  const std::vector<double> before = model.logits(Tensor::from_ids(ids, {1, 6})).to_vector();
  ids[4] = 10;
  const std::vector<double> after = model.logits(Tensor::from_ids(ids, {1, 6})).to_vector();
  const size_t earlier = 4 * 11;  // the logits of positions 0..3
  require_all_close(std::vector<double>(after.begin(), after.begin() + earlier),
                    std::vector<double>(before.begin(), before.begin() + earlier), 0.0);
  CHECK(after[earlier] != before[earlier]);  // and position 4's do change
}

TEST_CASE("own-llama keeps one (B,H,T,T) causal weight tensor per layer when asked", "[own-llama]") {
  own::OwnLlama model(tiny_llama(true), 5);
  model.logits(random_ids({2, 5}, 11, 1));
  for (const Tensor& w : model.attention_weights()) CHECK_FALSE(w.defined());
  model.set_keep_attention_weights(true);
  model.logits(random_ids({2, 5}, 11, 1));
  const std::vector<Tensor> weights = model.attention_weights();
  REQUIRE(weights.size() == 2);
  for (const Tensor& w : weights) {
    REQUIRE(w.shape() == Shape({2, 2, 5, 5}));
    const std::vector<double> v = w.to_vector();
    CHECK(v[1] == 0.0);  // query 0 never sees key 1
    CHECK(v[5] + v[6] == Approx(1.0));  // query 1 sees keys 0 and 1, weights summing to 1
  }
}

TEST_CASE("own-llama config.json names own-llama and reads back as the same model", "[own-llama]") {
  const own::OwnLlama model(tiny_llama(true), 1);
  const nlohmann::json written = nlohmann::json::parse(model.config_json());
  CHECK(written.at("model_type") == "own-llama");
  CHECK(own::OwnLlamaConfig::from_json(written).to_json() == written);
  CHECK(model.shape().n_layer == 2);
  CHECK(model.shape().n_head == 2);
}

TEST_CASE("own-llama config refuses sizes that cannot work, naming the field", "[own-llama]") {
  const auto refusal = [](const nlohmann::json& j) {
    try {
      own::OwnLlamaConfig::from_json(j);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(refusal({{"vocab_size", 5}, {"n_embd", 10}, {"n_head", 4}}),
             Catch::Contains("n_embd (10) must be a positive multiple of n_head (4)"));
  CHECK_THAT(refusal({{"vocab_size", 5}, {"n_embd", 6}, {"n_head", 2}}),
             Catch::Contains("RoPE needs an even head width"));
  CHECK_THAT(refusal({{"vocab_size", 5}, {"n_layer", "two"}}), Catch::Contains("n_layer"));
  CHECK_THAT(refusal({{"n_layer", 2}}), Catch::Contains("vocab_size must be positive"));
}
