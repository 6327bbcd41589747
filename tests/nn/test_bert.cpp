// The encoder-only masked LM (BertForMaskedLM): gradients, padding, dropout, bidirectionality and
// the position schemes.
#include "nn_helpers.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

nn::BertConfig tiny_bert(nn::PositionEmbedding position = nn::PositionEmbedding::learned) {
  nn::BertConfig c;
  c.vocab_size = 9;
  c.hidden_size = 8;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 12;
  c.max_position_embeddings = 10;
  c.position = position;
  return c;
}

}  // namespace

TEST_CASE("the BERT model's parameters carry BertForMaskedLM's names", "[nn][bert]") {
  nn::BertForMaskedLM model(tiny_bert(), 1);
  std::vector<std::string> names;
  for (const auto& [name, p] : model.state_dict()) names.push_back(name);
  const std::vector<std::string> expected_some{
      "bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
      "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm.weight",
      "bert.encoder.layer.1.attention.self.q_proj.weight",
      "bert.encoder.layer.1.attention.output.LayerNorm.bias",
      "bert.encoder.layer.0.intermediate.dense.weight", "bert.encoder.layer.0.output.dense.bias",
      "bert.encoder.layer.0.output.LayerNorm.weight", "cls.predictions.transform.dense.weight",
      "cls.predictions.transform.LayerNorm.bias", "cls.predictions.bias"};
  for (const auto& name : expected_some) {
    INFO(name);
    CHECK(std::find(names.begin(), names.end(), name) != names.end());
  }
  CHECK(names.size() == 5 + 2 * 16 + 5);
  CHECK(model.forward(random_ids({2, 5}, 9, 2)).shape() == Shape{2, 5, 9});
}

TEST_CASE("gradcheck the BERT masked LM loss for every position scheme, post-LN and pre-LN",
          "[gradcheck][nn][bert][exhaustive]") {
  for (const auto position : kPositionSchemes) {
    for (const bool pre_ln : {false, true}) {
      INFO(nn::position_embedding_name(position) << (pre_ln ? " pre-LN" : " post-LN"));
      nn::BertConfig config = tiny_bert(position);
      config.pre_layer_norm = pre_ln;
      nn::BertForMaskedLM model(config, 5);
      model.to(DType::f64);
      scramble(model, 6, 0.4);
      const Tensor tokens = Tensor::from_ids({2, 4, 5, 6, 3, 2, 7, 3, 0, 0}, {2, 5});
      const Tensor labels = Tensor::from_ids({-100, 4, -100, 8, -100, -100, 7, -100, -100, -100}, {2, 5});
      require_module_gradcheck(model, {}, [&](const std::vector<Tensor>&) {
        return model.loss(tokens, {5, 3}, labels);
      });
    }
  }
}

TEST_CASE("BERT padding keys get exactly zero weight and change no valid position",
          "[nn][bert]") {
  nn::BertForMaskedLM model(tiny_bert(), 3);
  scramble(model, 4, 0.5);
  model.eval();
  model.set_keep_attention_weights(true);
  Tensor tokens = Tensor::from_ids({2, 4, 5, 6, 1, 1}, {1, 6});
  const std::vector<double> before = model.forward(tokens, {4}).to_vector();
  for (const Tensor& w : model.attention_weights()) {
    const float* p = w.data<float>();  // (1,H,6,6)
    for (int64_t row = 0; row < w.numel() / 6; ++row) {
      CHECK(p[row * 6 + 4] == 0.0f);
      CHECK(p[row * 6 + 5] == 0.0f);
    }
  }
  tokens = Tensor::from_ids({2, 4, 5, 6, 7, 8}, {1, 6});
  const std::vector<double> after = model.forward(tokens, {4}).to_vector();
  const int64_t valid = 4 * 9;  // positions 0..3, 9 logits each
  require_all_close(std::vector<double>(after.begin(), after.begin() + valid),
                    std::vector<double>(before.begin(), before.begin() + valid), 0.0);
}

TEST_CASE("BERT attention is bidirectional: a later token changes an earlier position",
          "[nn][bert]") {
  for (const auto position : kPositionSchemes) {
    INFO(nn::position_embedding_name(position));
    nn::BertForMaskedLM model(tiny_bert(position), 3);
    scramble(model, 4, 0.5);
    model.eval();
    const std::vector<double> a = model.forward(Tensor::from_ids({2, 4, 5, 6}, {1, 4})).to_vector();
    const std::vector<double> b = model.forward(Tensor::from_ids({2, 4, 5, 7}, {1, 4})).to_vector();
    double change = 0.0;
    for (size_t i = 0; i < 9; ++i) change = std::max(change, std::abs(a[i] - b[i]));  // position 0
    CHECK(change > 1e-4);
  }
}

TEST_CASE("BERT dropout is active in training and off in eval", "[nn][bert]") {
  nn::BertConfig config = tiny_bert();
  config.hidden_dropout_prob = 0.3;
  config.attention_probs_dropout_prob = 0.3;
  nn::BertForMaskedLM model(config, 3);
  const Tensor tokens = Tensor::from_ids({2, 4, 5, 6, 3}, {1, 5});
  model.eval();
  const std::vector<double> first = model.forward(tokens).to_vector();
  CHECK(model.forward(tokens).to_vector() == first);
  model.train();
  CHECK(model.forward(tokens).to_vector() != first);
}

TEST_CASE("BERT refuses a sequence past its learned positions and bad settings by name",
          "[nn][bert]") {
  nn::BertForMaskedLM model(tiny_bert(), 3);
  CHECK_THROWS_WITH(model.forward(random_ids({1, 11}, 9, 1)),
                    Catch::Contains("exceeds max_position_embeddings 10"));
  nn::BertConfig config = tiny_bert();
  config.num_attention_heads = 3;
  CHECK_THROWS_WITH(nn::BertForMaskedLM(config, 1), Catch::Contains("num_attention_heads"));
  config = tiny_bert();
  config.pad_token_id = 9;
  CHECK_THROWS_AS(nn::BertForMaskedLM(config, 1), SettingError);
  // Positions other than learned run on any length.
  nn::BertForMaskedLM rope(tiny_bert(nn::PositionEmbedding::rope), 3);
  CHECK(rope.forward(random_ids({1, 14}, 9, 1)).shape() == Shape{1, 14, 9});
}
