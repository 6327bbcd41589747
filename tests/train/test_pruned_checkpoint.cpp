// A GPT with pruned heads: config.json records them as GPT-2's config does, and the folder loads
// back into the same model.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "nn/nn_helpers.hpp"
#include "scratch_dir.hpp"
#include "tinygpt/io/atomic_file.hpp"
#include "tinygpt/train/checkpoint.hpp"

using namespace tinygpt;

TEST_CASE("pruned heads: config.json's pruned_heads, loaded back to the same logits", "[checkpoint][prune]") {
  nn::GPTConfig config = testing::tiny_config(2);
  config.n_head = 4;
  config.n_embd = 16;
  config.pruned_heads = {{1, {0, 2}}};
  nn::GPT model(config, 4);
  CHECK((*model.transformer->h)[1].attn->c_attn->weight.shape() == Shape{16, 24});
  CHECK((*model.transformer->h)[0].attn->c_attn->weight.shape() == Shape{16, 48});
  const nlohmann::json j = nlohmann::json::parse(train::config_to_json(config));
  CHECK(j["pruned_heads"] == nlohmann::json{{"1", {0, 2}}});
  CHECK_FALSE(nlohmann::json::parse(train::config_to_json(testing::tiny_config(2))).contains("pruned_heads"));
  testing::ScratchDir dir;
  const data::CharTokenizer tokenizer = data::CharTokenizer::fit("abcdefghijk");
  train::save_checkpoint(dir.file("pruned"), model, model.config_json(), tokenizer);
  train::LoadedModel loaded = train::load_model(dir.file("pruned"));
  CHECK(loaded.config.pruned_heads == config.pruned_heads);
  const Tensor tokens = testing::random_ids({1, 8}, 11, 2);
  testing::require_all_close(loaded.model->forward(tokens).to_vector(), model.forward(tokens).to_vector(), 0.0);
  config.pruned_heads = {{1, {0, 1, 2, 3}}};
  CHECK_THROWS_AS(nn::GPT(config, 1), ValueError);
  config.pruned_heads = {{2, {0}}};
  CHECK_THROWS_AS(config.validate(), ValueError);
  const std::string bad = train::config_to_json(testing::tiny_config(2));
  nlohmann::json wrong = nlohmann::json::parse(bad);
  wrong["pruned_heads"] = {{"x", {0}}};
  CHECK_THROWS_AS(train::config_from_json(wrong.dump(), "config.json"), Error);
}
