// Pruning heads for good: the pruned copy computes what the original computes with those heads
// zeroed, in Hugging Face GPT-2's pruned layout.
#include <catch2/catch.hpp>

#include "nn/nn_helpers.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/heads/head_analysis.hpp"
#include "tinygpt/heads/pruning.hpp"

using namespace tinygpt;

namespace {

std::unique_ptr<nn::GPT> four_head_model() {
  nn::GPTConfig config = testing::tiny_config(2);
  config.n_head = 4;
  config.n_embd = 16;
  auto model = std::make_unique<nn::GPT>(config, 6);
  testing::scramble(*model, 8, 0.3);
  model->to(DType::f64);
  return model;
}

}  // namespace

TEST_CASE("pruning: smaller c_attn and c_proj, the same logits as the heads zeroed", "[heads][prune]") {
  auto model = four_head_model();
  const std::vector<heads::HeadRef> removed = {{0, 1}, {1, 0}, {1, 3}};
  const auto pruned = heads::prune_heads(*model, removed);
  CHECK(pruned->config().pruned_heads == std::map<int64_t, std::vector<int64_t>>{{0, {1}}, {1, {0, 3}}});
  const auto& layer1 = *(*pruned->transformer->h)[1].attn;
  CHECK(layer1.c_attn->weight.shape() == Shape{16, 3 * 2 * 4});
  CHECK(layer1.c_attn->bias.shape() == Shape{3 * 2 * 4});
  CHECK(layer1.c_proj->weight.shape() == Shape{2 * 4, 16});
  CHECK(pruned->num_parameters() == model->num_parameters() - 3 * (4 * 16 * 3 + 4 * 3 + 4 * 16));
  const Tensor tokens = testing::random_ids({2, 8}, 11, 3);
  model->eval();
  pruned->eval();
  Tensor zeroed;
  {
    nn::ScopedHooks hooks(*model);
    for (int64_t layer = 0; layer < 2; ++layer) {
      const Tensor mask = heads::head_keep_mask(model->config(), layer, removed, DType::f64);
      hooks.add(nn::hook_name(layer, nn::HookPoint::attn_z), [mask](const Tensor& z) { return z * mask; });
    }
    zeroed = model->forward(tokens);
  }
  testing::require_all_close(pruned->forward(tokens).to_vector(), zeroed.to_vector(), 1e-12);
}

TEST_CASE("pruning: a layer left without heads, a pruned model and grouped queries are refused",
          "[heads][prune]") {
  auto model = four_head_model();
  CHECK_THROWS_AS(heads::prune_heads(*model, {{0, 0}, {0, 1}, {0, 2}, {0, 3}}), ValueError);
  const auto pruned = heads::prune_heads(*model, {{0, 0}});
  CHECK_THROWS_AS(heads::prune_heads(*pruned, {{1, 0}}), ValueError);
  nn::GPTConfig grouped = testing::tiny_config(2);
  grouped.n_head = 4;
  grouped.n_embd = 16;
  grouped.n_kv_head = 2;
  nn::GPT gqa(grouped, 1);
  CHECK_THROWS_AS(heads::prune_heads(gqa, {{0, 0}}), ValueError);
}

TEST_CASE("pruning: the head report and the maps keep each head at its original number", "[heads][prune]") {
  auto model = four_head_model();
  const auto pruned = heads::prune_heads(*model, {{0, 1}, {1, 3}});
  const std::vector<int64_t> ids = {1, 2, 3, 1, 2, 3, 4};
  const std::vector<Tensor> intact = heads::attention_maps(*model, ids);
  const std::vector<Tensor> maps = heads::attention_maps(*pruned, ids);
  REQUIRE(maps[0].shape() == Shape{4, 7, 7});
  REQUIRE(maps[1].shape() == Shape{4, 7, 7});
  const auto head_map = [](const Tensor& m, int64_t h) { return narrow(m, 0, h, 1).to_vector(); };
  CHECK(sum(narrow(maps[0], 0, 1, 1)).item() == 0.0);  // the pruned head attends nowhere
  CHECK(sum(narrow(maps[1], 0, 3, 1)).item() == 0.0);
  // Layer 0's heads left are the original's, in their own places (layer 1 reads a changed stream).
  for (int64_t h : {0, 2, 3}) testing::require_all_close(head_map(maps[0], h), head_map(intact[0], h), 1e-6);
  heads::HeadProbes probes;
  probes.texts = {ids};
  probes.alphabet = {1, 2, 3, 4, 5, 6};
  probes.num_random = 2;
  const heads::HeadReport report = heads::analyze_heads(*pruned, probes);
  REQUIRE(report.heads.size() == 8);
  CHECK(report.heads[1].role == "pruned");
  CHECK(report.heads[7].role == "pruned");
  CHECK(report.heads[2].role != "pruned");
  CHECK(report.heads[2].head == 2);
}
