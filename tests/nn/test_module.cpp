#include "nn_helpers.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;
using Catch::Matchers::Contains;

TEST_CASE("GPT state dict uses Hugging Face GPT-2 names and shapes", "[nn][module][gpt]") {
  nn::GPTConfig config = tiny_config(2);  // V=11, T=8, C=8
  nn::GPT model(config, 1);
  std::vector<std::pair<std::string, Shape>> expected = {
      {"transformer.wte.weight", {11, 8}}, {"transformer.wpe.weight", {8, 8}}};
  for (int i = 0; i < 2; ++i) {
    const std::string h = "transformer.h." + std::to_string(i) + ".";
    for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{
             {"ln_1.weight", {8}}, {"ln_1.bias", {8}},
             {"attn.c_attn.weight", {8, 24}}, {"attn.c_attn.bias", {24}},
             {"attn.c_proj.weight", {8, 8}}, {"attn.c_proj.bias", {8}},
             {"ln_2.weight", {8}}, {"ln_2.bias", {8}},
             {"mlp.c_fc.weight", {8, 32}}, {"mlp.c_fc.bias", {32}},
             {"mlp.c_proj.weight", {32, 8}}, {"mlp.c_proj.bias", {8}}}) {
      expected.emplace_back(h + name, shape);
    }
  }
  expected.emplace_back("transformer.ln_f.weight", Shape{8});
  expected.emplace_back("transformer.ln_f.bias", Shape{8});
  const auto state = model.state_dict();
  REQUIRE(state.size() == expected.size());
  for (size_t i = 0; i < state.size(); ++i) {
    REQUIRE(state[i].first == expected[i].first);
    REQUIRE(state[i].second.shape() == expected[i].second);
  }
  config.tie_weights = false;
  nn::GPT untied(config, 1);
  REQUIRE(untied.state_dict().back().first == "lm_head.weight");
  REQUIRE(untied.state_dict().back().second.shape() == Shape{11, 8});
}

TEST_CASE("GPT-2 initialisation: std 0.02, residual projections scaled, LayerNorm 1 and 0", "[nn][gpt]") {
  nn::GPTConfig config = tiny_config(2);
  config.n_embd = 64;
  config.n_head = 4;
  config.vocab_size = 200;
  nn::GPT model(config, 1);
  auto std_of = [](const Tensor& t) {
    double s = 0, s2 = 0;
    for (double v : t.to_vector()) s += v, s2 += v * v;
    const double n = static_cast<double>(t.numel());
    return std::sqrt(s2 / n - (s / n) * (s / n));
  };
  for (auto& [name, p] : model.named_parameters()) {
    INFO(name);
    if (name.find("c_proj.weight") != std::string::npos) {
      REQUIRE(std_of(p) == Approx(0.02 / 2.0).epsilon(0.1));
    } else if (p.ndim() == 2) {
      REQUIRE(std_of(p) == Approx(0.02).epsilon(0.1));
    } else if (name.find("ln_") != std::string::npos && name.find(".weight") != std::string::npos) {
      for (double v : p.to_vector()) REQUIRE(v == 1.0);
    } else {
      for (double v : p.to_vector()) REQUIRE(v == 0.0);
    }
  }
}

TEST_CASE("load_state_dict rejects missing, unexpected and mis-shaped tensors", "[nn][module][errors]") {
  nn::GPT model(tiny_config(1), 1);
  auto state = model.state_dict();
  auto missing = state;
  missing.pop_back();
  REQUIRE_THROWS_WITH(model.load_state_dict(missing), Contains("missing tensor 'transformer.ln_f.bias'"));
  auto extra = state;
  extra.emplace_back("lm_head.weight", Tensor::zeros({11, 8}));
  REQUIRE_THROWS_WITH(model.load_state_dict(extra), Contains("unexpected tensor 'lm_head.weight'"));
  auto wrong = state;
  wrong[0].second = Tensor::zeros({12, 8});
  REQUIRE_THROWS_AS(model.load_state_dict(wrong), ShapeError);
  REQUIRE_THROWS_WITH(model.load_state_dict(wrong), Contains("(12, 8)") && Contains("(11, 8)"));
}

TEST_CASE("load_state_dict copies values and round-trips through another model", "[nn][module]") {
  nn::GPT a(tiny_config(1), 1), b(tiny_config(1), 2);
  const Tensor ids = random_ids({1, 8}, 11, 3);
  REQUIRE(a.forward(ids).to_vector() != b.forward(ids).to_vector());
  b.load_state_dict(a.state_dict());
  REQUIRE(a.forward(ids).to_vector() == b.forward(ids).to_vector());
}

TEST_CASE("take_state_dict gives the parameters the tensors' own data, or a copy of another dtype",
          "[nn][module]") {
  nn::GPT a(tiny_config(1), 1), b(tiny_config(1), 2);
  const Tensor ids = random_ids({1, 8}, 11, 3);
  nn::NamedTensors state;
  for (const auto& [name, p] : a.state_dict()) state.emplace_back(name, p.clone());
  state[0].second = state[0].second.to(DType::f64);
  b.take_state_dict(state);
  REQUIRE(a.forward(ids).to_vector() == b.forward(ids).to_vector());
  const nn::NamedTensors taken = b.state_dict();
  CHECK(taken[0].second.dtype() == DType::f32);  // converted, so copied
  for (size_t i = 1; i < state.size(); ++i) CHECK(taken[i].second.data<float>() == state[i].second.data<float>());
  auto wrong = state;
  wrong[1].second = Tensor::zeros({12, 8});
  REQUIRE_THROWS_AS(b.take_state_dict(wrong), ShapeError);
}

TEST_CASE("train and eval propagate to every submodule", "[nn][module]") {
  nn::GPT model(tiny_config(2), 1);
  model.eval();
  REQUIRE_FALSE(model.transformer->h->operator[](1).mlp->drop->is_training());
  model.train();
  REQUIRE(model.transformer->h->operator[](1).attn->is_training());
}

TEST_CASE("parameter count, zero_grad and conversion to f64", "[nn][module]") {
  Generator gen(1);
  nn::Linear linear(4, 3, true, gen);
  REQUIRE(linear.num_parameters() == 15);
  sum(linear.forward(Tensor::ones({2, 4}))).backward();
  REQUIRE(linear.weight.grad().defined());
  linear.zero_grad();
  REQUIRE_FALSE(linear.weight.grad().defined());
  linear.to(DType::f64);
  REQUIRE(linear.weight.dtype() == DType::f64);
  REQUIRE(linear.parameters()[0].dtype() == DType::f64);  // the registry sees the same tensor
}

TEST_CASE("module construction errors name the bad size", "[nn][errors]") {
  Generator gen(1);
  REQUIRE_THROWS_WITH(nn::MultiHeadSelfAttention({10, 3, 0.0, true, true}, gen, std::make_shared<Generator>(1)),
                      Contains("d_model 10") && Contains("n_heads 3"));
  REQUIRE_THROWS_AS(nn::Dropout(1.0, std::make_shared<Generator>(1)), ValueError);
  nn::GPTConfig config = tiny_config(1);
  config.n_head = 3;
  REQUIRE_THROWS_WITH(nn::GPT(config, 1), Contains("not divisible"));
}

TEST_CASE("GPT rejects a sequence longer than its context", "[nn][gpt][errors]") {
  nn::GPT model(tiny_config(1), 1);
  REQUIRE_THROWS_WITH(model.forward(random_ids({1, 9}, 11, 1)),
                      Contains("sequence length 9 exceeds the context length 8"));
  REQUIRE_THROWS_AS(model.forward(Tensor::from_ids({1, 99}, {1, 2})), IndexError);
}

TEST_CASE("Linear rejects an input of the wrong width", "[nn][errors]") {
  Generator gen(1);
  nn::Linear linear(4, 3, true, gen);
  REQUIRE_THROWS_WITH(linear.forward(Tensor::ones({2, 5})), Contains("(2, 5)") && Contains("in_features=4"));
}
