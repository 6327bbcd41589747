#include "custom_layers.hpp"
#include "nn_helpers.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

TEST_CASE("gradcheck Linear with bias on a 3-D input", "[gradcheck][nn]") {
  Generator gen(1);
  nn::Linear linear(4, 3, true, gen);
  require_module_gradcheck(linear, {leaf({2, 5, 4}, 2)},
                           [&](const std::vector<Tensor>& in) { return linear.forward(in[0]); });
}

TEST_CASE("gradcheck Linear without bias on a 1-D input", "[gradcheck][nn]") {
  Generator gen(1);
  nn::Linear linear(4, 3, false, gen);
  require_module_gradcheck(linear, {leaf({4}, 3)},
                           [&](const std::vector<Tensor>& in) { return linear.forward(in[0]); });
}

TEST_CASE("gradcheck Embedding with repeated ids", "[gradcheck][nn]") {
  Generator gen(1);
  nn::Embedding emb(6, 3, gen);
  const Tensor ids = Tensor::from_ids({0, 5, 2, 5, 5, 1}, {2, 3});
  require_module_gradcheck(emb, {}, [&](const std::vector<Tensor>&) { return emb.forward(ids); });
}

TEST_CASE("gradcheck LayerNorm with affine parameters", "[gradcheck][nn]") {
  nn::LayerNorm norm(5);
  Generator gen(4);
  norm.weight.copy_(Tensor::randn({5}, gen));
  norm.bias.copy_(Tensor::randn({5}, gen));
  require_module_gradcheck(norm, {leaf({3, 2, 5}, 5)},
                           [&](const std::vector<Tensor>& in) { return norm.forward(in[0]); });
}

TEST_CASE("gradcheck MLP", "[gradcheck][nn]") {
  Generator gen(1);
  nn::MLP mlp(4, 0.0, true, gen, std::make_shared<Generator>(2));
  require_module_gradcheck(mlp, {leaf({2, 3, 4}, 6)},
                           [&](const std::vector<Tensor>& in) { return mlp.forward(in[0]); });
}

namespace {

void check_attention(bool causal, std::vector<int64_t> lengths, bool keep_weights) {
  Generator gen(1);
  nn::MultiHeadSelfAttention attn({8, 2, 0.0, causal, true}, gen, std::make_shared<Generator>(2));
  attn.set_keep_attention_weights(keep_weights);
  require_module_gradcheck(attn, {leaf({2, 5, 8}, 7)}, [&](const std::vector<Tensor>& in) {
    return attn.forward(in[0], lengths);
  });
}

}  // namespace

TEST_CASE("gradcheck attention without mask", "[gradcheck][nn][attention]") {
  check_attention(false, {}, true);
}

TEST_CASE("gradcheck attention with causal mask", "[gradcheck][nn][attention]") {
  check_attention(true, {}, true);
}

TEST_CASE("gradcheck attention with causal mask on the fused path", "[gradcheck][nn][attention]") {
  check_attention(true, {}, false);
}

TEST_CASE("gradcheck attention with padding mask", "[gradcheck][nn][attention]") {
  check_attention(false, {5, 3}, true);
}

TEST_CASE("gradcheck attention with causal and padding masks", "[gradcheck][nn][attention]") {
  check_attention(true, {2, 5}, true);
}

TEST_CASE("gradcheck scaled_dot_product_attention cross-attention Tq != Tk", "[gradcheck][nn][attention]") {
  const Tensor mask = nn::padding_mask({4, 2}, 4);
  REQUIRE_GRADCHECK(
      [&](const std::vector<Tensor>& in) {
        return nn::scaled_dot_product_attention(in[0], in[1], in[2], mask).output;
      },
      {leaf({2, 2, 3, 4}, 1), leaf({2, 2, 4, 4}, 2), leaf({2, 2, 4, 4}, 3)});
}

TEST_CASE("gradcheck 2-layer GPT loss with respect to every parameter", "[gradcheck][nn][gpt]") {
  nn::GPT model(tiny_config(2), 3);
  const Tensor tokens = random_ids({2, 6}, 11, 1);
  const Tensor targets = random_ids({2, 6}, 11, 2);
  // Bigger than GPT-2's 0.02 so every path carries a gradient well above round-off.
  Generator gen(9);
  for (Tensor p : model.parameters()) {
    if (p.ndim() == 2) p.copy_(Tensor::randn(p.shape(), gen, DType::f32, 0.0, 0.5));
  }
  require_module_gradcheck(model, {},
                           [&](const std::vector<Tensor>&) { return model.loss(tokens, targets); });
}

TEST_CASE("gradcheck custom SiLU op, RMSNorm and SwiGLU from the example", "[gradcheck][nn][custom]") {
  REQUIRE_GRADCHECK([](const std::vector<Tensor>& in) { return custom::silu(in[0]); }, {leaf({3, 4}, 1)});
  custom::RMSNorm norm(4);
  Generator gen(2);
  norm.gain.copy_(Tensor::randn({4}, gen));
  require_module_gradcheck(norm, {leaf({3, 4}, 3)},
                           [&](const std::vector<Tensor>& in) { return norm.forward(in[0]); });
  custom::ResidualSwiGLU block(4, 6, gen);
  require_module_gradcheck(block, {leaf({2, 3, 4}, 4)},
                           [&](const std::vector<Tensor>& in) { return block.forward(in[0]); });
}
