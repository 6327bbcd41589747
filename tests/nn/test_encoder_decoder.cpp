// Cross-attention (MultiHeadAttention) and the BART-style encoder-decoder built on it.
#include <map>

#include "nn_helpers.hpp"
#include "seq2seq_helpers.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

nn::MultiHeadAttention make_mha(int64_t kv_heads = 0) {
  Generator gen(3);
  return nn::MultiHeadAttention({8, 4, kv_heads, 0.0, true}, gen, std::make_shared<Generator>(4));
}

}  // namespace

TEST_CASE("gradcheck Linear stored (out, in) as nn.Linear", "[gradcheck][nn]") {
  Generator gen(1);
  nn::Linear linear(4, 3, true, gen, nn::WeightLayout::out_in);
  REQUIRE(linear.weight.shape() == Shape{3, 4});
  require_module_gradcheck(linear, {leaf({2, 5, 4}, 2)},
                           [&](const std::vector<Tensor>& in) { return linear.forward(in[0]); });
}

TEST_CASE("gradcheck MultiHeadAttention: queries and a padded memory with grouped heads",
          "[gradcheck][nn][cross]") {
  for (const int64_t kv_heads : {0, 2}) {
    nn::MultiHeadAttention mha(make_mha(kv_heads));
    mha.set_keep_attention_weights(true);
    require_module_gradcheck(mha, {leaf({2, 3, 8}, 5), leaf({2, 6, 8}, 6)},
                             [&](const std::vector<Tensor>& in) {
                               return mha.forward(in[0], in[1], {false, {6, 4}});
                             });
  }
}

TEST_CASE("gradcheck MultiHeadAttention as causal self-attention", "[gradcheck][nn][cross]") {
  nn::MultiHeadAttention mha(make_mha());
  require_module_gradcheck(mha, {leaf({2, 5, 8}, 7)}, [&](const std::vector<Tensor>& in) {
    return mha.forward(in[0], in[0], {true, {}, nullptr});
  });
}

TEST_CASE("gradcheck the encoder-decoder loss with respect to every parameter",
          "[gradcheck][nn][seq2seq]") {
  nn::EncoderDecoder model(tiny_seq2seq(), 5);
  model.to(DType::f64);
  scramble(model, 6, 0.4);
  const Tensor source = Tensor::from_ids({3, 4, 5, 6, 7, 8, 0, 0}, {2, 4});  // second row: 2 + pad
  const Tensor inputs = Tensor::from_ids({1, 4, 5, 1, 6, 0}, {2, 3});
  const Tensor targets = Tensor::from_ids({4, 5, 2, 6, 2, -100}, {2, 3});
  require_module_gradcheck(model, {}, [&](const std::vector<Tensor>&) {
    return model.loss(source, {4, 2}, inputs, targets);
  });
}

TEST_CASE("a padded memory position gets exactly zero weight and changes nothing",
          "[nn][cross]") {
  nn::MultiHeadAttention mha(make_mha());
  scramble(mha, 8, 0.5);
  mha.set_keep_attention_weights(true);
  Generator gen(9);
  const Tensor query = Tensor::randn({2, 3, 8}, gen);
  Tensor memory = Tensor::randn({2, 5, 8}, gen);
  const std::vector<double> y = mha.forward(query, memory, {false, {5, 3}}).to_vector();
  const std::vector<double> w = mha.attention_weights().to_vector();  // (2,4,3,5)
  for (int64_t h = 0; h < 4; ++h) {
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 3; j < 5; ++j) REQUIRE(w[static_cast<size_t>((((1 * 4 + h) * 3 + i) * 5) + j)] == 0.0);
    }
  }
  // Whatever the padding holds, the output is the same bit for bit.
  float* m = memory.data<float>();
  for (int64_t j = 3; j < 5; ++j) {
    for (int64_t c = 0; c < 8; ++c) m[(1 * 5 + j) * 8 + c] = 1e3f;
  }
  REQUIRE(mha.forward(query, memory, {false, {5, 3}}).to_vector() == y);
}

TEST_CASE("the decoder is causal bit for bit: a later target token changes no earlier logit",
          "[nn][seq2seq]") {
  nn::EncoderDecoder model(tiny_seq2seq(), 1);
  scramble(model, 2, 0.3);
  model.eval();
  const Tensor source = Tensor::from_ids({3, 4, 5, 6}, {1, 4});
  const auto logits = [&](int64_t last) {
    return model.forward(source, {}, Tensor::from_ids({1, 5, 6, last}, {1, 4})).to_vector();
  };
  const std::vector<double> a = logits(7), b = logits(8);
  const size_t earlier = 3 * 9;
  REQUIRE(std::vector<double>(a.begin(), a.begin() + earlier) ==
          std::vector<double>(b.begin(), b.begin() + earlier));
  REQUIRE(a != b);
}

TEST_CASE("cached decoding equals full recomputation", "[nn][seq2seq]") {
  nn::EncoderDecoder model(tiny_seq2seq(), 3);
  model.to(DType::f64);
  scramble(model, 4, 0.4);
  model.eval();
  const Tensor source = Tensor::from_ids({3, 4, 5, 6, 7, 0}, {1, 6});
  const std::vector<int64_t> inputs{1, 8, 3, 3, 6, 5};
  NoGradGuard no_grad;
  const Tensor memory = model.encode(source, {5});
  const std::vector<double> full =
      model.decode(Tensor::from_ids(inputs, {1, 6}), memory, {5}).to_vector();
  nn::DecoderCache cache = model.make_cache();
  std::vector<double> stepped =
      model.decode(Tensor::from_ids({1, 8}, {1, 2}), memory, {5}, &cache).to_vector();
  for (size_t i = 2; i < inputs.size(); ++i) {
    const auto next = model.decode(Tensor::from_ids({inputs[i]}, {1, 1}), memory, {5}, &cache).to_vector();
    stepped.insert(stepped.end(), next.begin(), next.end());
  }
  require_all_close(stepped, full, 1e-12);
  REQUIRE(cache.cross[0].seen == 6);  // the memory's keys: projected once, all 6 positions
  REQUIRE(cache.self[1].seen == 6);
}

TEST_CASE("generation with the caches gives the tokens of full recomputation", "[nn][seq2seq]") {
  nn::EncoderDecoder model(tiny_seq2seq(), 7);
  scramble(model, 8, 0.5);
  for (const double temperature : {0.0, 1.0}) {
    nn::SampleOptions options;
    options.tokens = 20;
    options.temperature = temperature;
    options.seed = 3;
    const std::vector<int64_t> cached = nn::generate(model, {3, 4, 5}, options);
    options.use_cache = false;
    REQUIRE(nn::generate(model, {3, 4, 5}, options) == cached);
    REQUIRE(cached.size() <= 9);  // the decoder's positions, its start token included
  }
}

TEST_CASE("encoder-decoder parameters carry BART's names and nn.Linear's out-by-in shapes",
          "[nn][seq2seq]") {
  nn::EncoderDecoderConfig c = tiny_seq2seq();
  c.encoder_ffn_dim = 16;
  c.decoder_layers = 1;
  nn::EncoderDecoder model(c, 1);
  std::map<std::string, Shape> shapes;
  for (const auto& [name, p] : model.named_parameters()) shapes[name] = p.shape();
  const std::map<std::string, Shape> expected{
      {"model.shared.weight", {9, 8}},
      {"model.encoder.embed_positions.weight", {10, 8}},
      {"model.encoder.layers.1.self_attn.q_proj.weight", {8, 8}},
      {"model.encoder.layers.1.self_attn.out_proj.bias", {8}},
      {"model.encoder.layers.0.self_attn_layer_norm.weight", {8}},
      {"model.encoder.layers.0.fc1.weight", {16, 8}},
      {"model.encoder.layers.0.fc2.weight", {8, 16}},
      {"model.encoder.layers.0.final_layer_norm.bias", {8}},
      {"model.encoder.layer_norm.weight", {8}},
      {"model.decoder.embed_positions.weight", {10, 8}},
      {"model.decoder.layers.0.encoder_attn.k_proj.weight", {8, 8}},
      {"model.decoder.layers.0.encoder_attn.v_proj.bias", {8}},
      {"model.decoder.layers.0.encoder_attn_layer_norm.weight", {8}},
      {"model.decoder.layers.0.fc1.weight", {12, 8}},
      {"model.decoder.layer_norm.bias", {8}},
  };
  for (const auto& [name, shape] : expected) {
    INFO(name);
    REQUIRE(shapes.count(name) == 1);
    REQUIRE(shapes.at(name) == shape);
  }
  // 2 encoder layers x 16 tensors, 1 decoder layer x 26, shared, 2 x positions, 2 x 2 stack norms.
  REQUIRE(shapes.size() == 2 * 16 + 26 + 1 + 2 + 4);
  REQUIRE(shapes.count("model.encoder.embed_tokens.weight") == 0);  // shared, stored once
}

TEST_CASE("cross-attention refuses bad shapes and lengths and configs in one message",
          "[nn][cross][errors]") {
  nn::MultiHeadAttention mha(make_mha());
  Generator gen(1);
  const Tensor q = Tensor::randn({2, 3, 8}, gen);
  REQUIRE_THROWS_WITH(mha.forward(q, Tensor::randn({2, 5, 6}, gen)),
                      Catch::Contains("MultiHeadAttention") && Catch::Contains("(2, 5, 6)"));
  REQUIRE_THROWS_WITH(mha.forward(q, Tensor::randn({3, 5, 8}, gen)), Catch::Contains("(3, 5, 8)"));
  REQUIRE_THROWS_WITH(mha.forward(q, Tensor()), Catch::Contains("memory none"));
  REQUIRE_THROWS_WITH(mha.forward(q, Tensor::randn({2, 5, 8}, gen), {false, {5}}),
                      Catch::Contains("1 memory lengths for a batch of 2"));
  REQUIRE_THROWS_WITH(mha.forward(q, Tensor::randn({2, 5, 8}, gen), {false, {5, 6}}),
                      Catch::Contains("length 6"));
  REQUIRE_THROWS_WITH(mha.forward(q, Tensor::randn({2, 5, 8}, gen), {true, {}, nullptr}),
                      Catch::Contains("differ in length"));
  REQUIRE_THROWS_AS(nn::MultiHeadAttention({8, 3, 0, 0.0, true}, gen, nullptr), ValueError);
  nn::EncoderDecoderConfig c = tiny_seq2seq();
  c.eos_token_id = 9;
  REQUIRE_THROWS_WITH(nn::EncoderDecoder(c, 1), Catch::Contains("eos_token_id 9"));
  nn::EncoderDecoder model(tiny_seq2seq(), 1);
  REQUIRE_THROWS_WITH(model.encode(Tensor::from_ids(std::vector<int64_t>(11, 3), {1, 11})),
                      Catch::Contains("exceeds max_position_embeddings 10"));
}

TEST_CASE("batched greedy decoding gives each row what generate gives it alone", "[nn][seq2seq]") {
  nn::EncoderDecoder model(tiny_seq2seq(), 9);
  model.to(DType::f64);  // no near-ties decided differently by batched rounding
  scramble(model, 10, 0.6);
  const std::vector<std::vector<int64_t>> sources{{3, 4, 5, 6}, {7, 8}, {5, 5, 5}};
  std::vector<int64_t> padded;
  for (const auto& s : sources) {
    std::vector<int64_t> row = s;
    row.resize(4, 0);
    padded.insert(padded.end(), row.begin(), row.end());
  }
  const auto decoded = nn::greedy_decode(model, Tensor::from_ids(padded, {3, 4}), {4, 2, 3}, 7);
  nn::SampleOptions greedy;
  greedy.temperature = 0.0;
  greedy.tokens = 7;
  for (size_t r = 0; r < sources.size(); ++r) {
    INFO("row " << r);
    CHECK(decoded[r] == nn::generate(model, sources[r], greedy));
    CHECK(decoded[r].size() <= 7);
  }
}
