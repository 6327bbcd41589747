// Hook points: names, caching, editing hooks (with gradients through the replacement), and the
// fused path staying in place when no attention hook is registered.
#include "nn_helpers.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

std::vector<double> logits_of(nn::GPT& model, const Tensor& ids) {
  NoGradGuard no_grad;
  return model.forward(ids).to_vector();
}

// (1,H,1,1) multipliers: 0 for `head`, 1 for the others.
Tensor head_mask(int64_t heads, int64_t head, DType dtype) {
  std::vector<double> m(static_cast<size_t>(heads), 1.0);
  m[static_cast<size_t>(head)] = 0.0;
  return Tensor::from(m, {1, heads, 1, 1}, dtype);
}

}  // namespace

TEST_CASE("hooks: every layer has the ten points, named blocks.L.point in forward order",
          "[nn][hooks]") {
  nn::GPT model(tiny_config(), 1);
  const auto names = model.hook_names();
  REQUIRE(names.size() == 20);
  CHECK(names[0] == "blocks.0.resid_pre");
  CHECK(names[1] == "blocks.0.attn.q");
  CHECK(names[4] == "blocks.0.attn.pattern");
  CHECK(names[5] == "blocks.0.attn.z");
  CHECK(names[6] == "blocks.0.attn_out");
  CHECK(names[9] == "blocks.0.resid_post");
  CHECK(names[19] == "blocks.1.resid_post");
  CHECK_THROWS_AS(model.add_hook("blocks.2.attn.q", [](const Tensor& x) { return x; }), ValueError);
  CHECK_THROWS_WITH(model.add_hook("blocks.0.hook_q", [](const Tensor& x) { return x; }),
                    Catch::Contains("blocks.0.hook_q") && Catch::Contains("attn.pattern"));
  CHECK_FALSE(model.remove_hook(12345));
}

TEST_CASE("hooks: run_with_cache records every point with its shape, and they add up",
          "[nn][hooks]") {
  nn::GPT model(tiny_config(), 2);
  model.eval();
  const Tensor ids = random_ids({2, 6}, 11, 3);
  const std::vector<double> plain = logits_of(model, ids);
  const nn::ActivationCache cache = model.run_with_cache(ids);
  REQUIRE(cache.activations.size() == 20);
  require_all_close(cache.logits.to_vector(), plain, 1e-5);  // the general path agrees with the fused
  CHECK(cache["blocks.0.resid_pre"].shape() == Shape{2, 6, 8});
  CHECK(cache["blocks.1.attn.q"].shape() == Shape{2, 2, 6, 4});
  CHECK(cache["blocks.1.attn.k"].shape() == Shape{2, 2, 6, 4});
  CHECK(cache["blocks.1.attn.v"].shape() == Shape{2, 2, 6, 4});
  CHECK(cache["blocks.1.attn.pattern"].shape() == Shape{2, 2, 6, 6});
  CHECK(cache["blocks.1.attn.z"].shape() == Shape{2, 2, 6, 4});
  CHECK(cache["blocks.1.mlp_out"].shape() == Shape{2, 6, 8});
  CHECK_FALSE(cache["blocks.0.resid_post"].requires_grad());
  require_all_close(cache["blocks.1.resid_pre"].to_vector(), cache["blocks.0.resid_post"].to_vector(), 0);
  require_all_close(cache["blocks.0.resid_mid"].to_vector(),
                (cache["blocks.0.resid_pre"] + cache["blocks.0.attn_out"]).to_vector(), 1e-6);
  require_all_close(cache["blocks.0.resid_post"].to_vector(),
                (cache["blocks.0.resid_mid"] + cache["blocks.0.mlp_out"]).to_vector(), 1e-6);
  // Causal rows of the pattern sum to 1 with nothing above the diagonal.
  const Tensor rows = sum(cache["blocks.0.attn.pattern"], {-1});
  for (double r : rows.to_vector()) CHECK(r == Approx(1.0).epsilon(1e-5));
  CHECK(cache["blocks.0.attn.pattern"].at({0, 0, 2, 3}) == 0.0);
  CHECK_THROWS_WITH(cache["blocks.9.attn.q"], Catch::Contains("blocks.9.attn.q"));

  const auto only = model.run_with_cache(ids, [](const std::string& n) { return n == "blocks.0.attn.pattern"; });
  REQUIRE(only.activations.size() == 1);
  CHECK(only.contains("blocks.0.attn.pattern"));
  // The recording hooks are gone: the forward is the plain one again (fused, no weights kept).
  require_all_close(logits_of(model, ids), plain, 0);
  CHECK_FALSE(model.attention_weights()[0].defined());
}

TEST_CASE("hooks: zeroing a head's z equals zeroing its rows of c_proj", "[nn][hooks]") {
  nn::GPT model(tiny_config(), 4);
  nn::GPT edited(tiny_config(), 4);
  const Tensor ids = random_ids({2, 7}, 11, 5);
  const int64_t head = 1, d = 4;
  // c_proj.weight is (C_in, C_out) applied as x @ W: head h reads rows [h d, (h+1) d).
  Tensor& w = (*edited.transformer->h)[1].attn->c_proj->weight;
  std::vector<double> values = w.to_vector();
  for (int64_t r = head * d; r < (head + 1) * d; ++r) {
    for (int64_t c = 0; c < 8; ++c) values[static_cast<size_t>(r * 8 + c)] = 0.0;
  }
  w.copy_(Tensor::from(values, w.shape()));
  const Tensor mask = head_mask(2, head, DType::f32);
  const nn::HookId id = model.add_hook("blocks.1.attn.z", [&](const Tensor& z) { return z * mask; });
  require_all_close(logits_of(model, ids), logits_of(edited, ids), 1e-5);
  CHECK(model.remove_hook(id));
  CHECK_FALSE(model.remove_hook(id));
}

TEST_CASE("hooks: a replacement of another shape is refused, naming the point", "[nn][hooks]") {
  nn::GPT model(tiny_config(), 1);
  nn::ScopedHooks hooks(model);
  hooks.add("blocks.0.mlp_out", [](const Tensor& x) { return sum(x, {2}); });
  CHECK_THROWS_WITH(model.forward(random_ids({1, 4}, 11, 1)),
                    Catch::Contains("blocks.0.mlp_out") && Catch::Contains("(1, 4, 8)"));
}

TEST_CASE("hooks: ScopedHooks removes its hooks when the scope ends", "[nn][hooks]") {
  nn::GPT model(tiny_config(), 6);
  const Tensor ids = random_ids({1, 5}, 11, 2);
  const std::vector<double> plain = logits_of(model, ids);
  {
    nn::ScopedHooks hooks(model);
    hooks.add("blocks.0.resid_post", [](const Tensor& x) { return x * 0.0; });
    const std::vector<double> zeroed = logits_of(model, ids);
    CHECK(zeroed != plain);
  }
  require_all_close(logits_of(model, ids), plain, 0);
}

TEST_CASE("gradcheck: f64 gradients flow through editing hooks on z, the pattern and resid",
          "[nn][hooks][gradcheck]") {
  nn::GPT model(tiny_config(), 8);
  model.eval();
  const Tensor ids = random_ids({2, 5}, 11, 9);
  const Tensor targets = random_ids({2, 5}, 11, 10);
  Tensor gain = leaf({1, 2, 1, 1}, 11);   // scales each head's z of layer 0
  Tensor patch = leaf({2, 5, 8}, 12, 0.1);  // added into layer 1's residual stream
  nn::ScopedHooks hooks(model);
  hooks.add("blocks.0.attn.z", [&](const Tensor& z) { return z * gain; });
  // Mixes each pattern row with a uniform one (1/T on every key).
  hooks.add("blocks.1.attn.pattern", [&](const Tensor& p) {
    const Tensor uniform = p.detach() * 0.0 + 1.0 / 5.0;
    return p * 0.7 + uniform * 0.3;
  });
  hooks.add("blocks.1.resid_pre", [&](const Tensor& x) { return x + patch; });
  require_module_gradcheck(model, {gain, patch}, [&](const std::vector<Tensor>&) {
    return model.loss(ids, targets);
  });
}

TEST_CASE("hooks: patching an activation with a leaf sends the gradient to the leaf only",
          "[nn][hooks]") {
  nn::GPT model(tiny_config(), 3);
  const Tensor ids = random_ids({1, 6}, 11, 4);
  Tensor replacement;
  {
    nn::ScopedHooks hooks(model);
    hooks.add("blocks.0.resid_pre", [&](const Tensor& x) {
      replacement = x.detach().clone().set_requires_grad();
      return replacement;
    });
    model.zero_grad();
    model.loss(ids, random_ids({1, 6}, 11, 5)).backward();
  }
  REQUIRE(replacement.grad().defined());
  double norm = 0.0;
  for (double g : replacement.grad().to_vector()) norm += g * g;
  CHECK(norm > 0.0);
  // The embeddings sit before the replacement: cut off from the loss.
  const Tensor& wpe_grad = model.transformer->wpe->weight.grad();
  if (wpe_grad.defined()) {
    for (double g : wpe_grad.to_vector()) CHECK(g == 0.0);
  }
}
