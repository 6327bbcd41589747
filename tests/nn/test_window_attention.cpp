// Sliding-window attention (with and without global tokens): the fused kernel, which skips the
// keys no query of a block sees, against the general path with the pattern's (T,T) mask; the
// window at least T long is full attention bit for bit; no query reads a key outside its
// window; float64 gradient checks of the op and of a GPT with a window.
#include "nn_helpers.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

// The general path on packed qkv: the pattern's mask, softmax.
Tensor general_attention(const Tensor& qkv, int64_t h, int64_t kvh, bool alibi,
                         const AttentionPattern& pattern) {
  const PackedHeads p = unpack_heads(qkv, h, kvh);
  const Tensor mask = nn::pattern_mask(pattern, qkv.size(1), qkv.size(1)).to(qkv.dtype());
  return merge_heads(
      nn::scaled_dot_product_attention(p.q, p.k, p.v, mask, 0.0, false, nullptr, alibi).output);
}

}  // namespace

TEST_CASE("fused window attention equals the general path with the window's mask",
          "[nn][attention][window]") {
  struct Case {
    int64_t t, window, global, kv_heads;
    bool alibi;
  };
  const std::vector<Case> cases = {
      {150, 1, 0, 4, false},  {150, 17, 0, 4, false}, {150, 64, 0, 2, false},
      {200, 70, 3, 1, false}, {200, 33, 5, 4, true},  {130, 100, 80, 2, true},
  };
  for (DType dtype : {DType::f64, DType::f32}) {
    for (const Case& c : cases) {
      const AttentionPattern pattern = AttentionPattern::sliding_window(c.window, c.global);
      INFO(dtype_name(dtype) << ", T " << c.t << ", " << pattern.str() << ", kv heads "
                             << c.kv_heads << ", alibi " << c.alibi);
      Generator gen(static_cast<uint64_t>(c.t + c.window));
      const int64_t d = 3;
      const Tensor qkv = Tensor::randn({2, c.t, (4 + 2 * c.kv_heads) * d}, gen, dtype);
      const Tensor g = Tensor::randn({2, c.t, 4 * d}, gen, dtype);
      const OutputAndGrad fused = output_and_grad(qkv, g, [&](const Tensor& x) {
        return causal_self_attention(x, 4, c.kv_heads, c.alibi, pattern);
      });
      const OutputAndGrad general = output_and_grad(qkv, g, [&](const Tensor& x) {
        return general_attention(x, 4, c.kv_heads, c.alibi, pattern);
      });
      const double tol = dtype == DType::f64 ? 1e-12 : 2e-5;
      require_all_close(fused.y, general.y, tol);
      require_all_close(fused.dx, general.dx, tol);
    }
  }
}

TEST_CASE("a window at least as long as the sequence is full attention, bit for bit",
          "[nn][attention][window]") {
  Generator gen(3);
  const Tensor qkv = Tensor::randn({2, 130, 3 * 8}, gen);
  const Tensor g = Tensor::randn({2, 130, 8}, gen);
  const OutputAndGrad full = output_and_grad(qkv, g, [](const Tensor& x) { return causal_self_attention(x, 2); });
  for (const int64_t window : {130, 131, 1000}) {
    const OutputAndGrad windowed = output_and_grad(qkv, g, [&](const Tensor& x) {
      return causal_self_attention(x, 2, 0, false, AttentionPattern::sliding_window(window));
    });
    REQUIRE(windowed.y == full.y);
    REQUIRE(windowed.dx == full.dx);
  }
}

TEST_CASE("no query reads a key outside its window, bit for bit", "[nn][attention][window]") {
  // Changing the key and value of position j leaves every output row that may not see j exactly
  // as it was, and changes the rows that may.
  const int64_t t = 140, d = 4;
  const AttentionPattern pattern = AttentionPattern::sliding_window(20, 2);
  Generator gen(5);
  const Tensor qkv = Tensor::randn({1, t, 3 * d}, gen);
  const std::vector<double> before =
      causal_self_attention(qkv, 1, 0, false, pattern).to_vector();
  for (const int64_t j : {0, 1, 2, 50, 139}) {
    INFO("key " << j);
    Tensor edited = qkv.clone();
    for (int64_t e = d; e < 3 * d; ++e) edited.data<float>()[j * 3 * d + e] += 1.5f;
    const std::vector<double> after =
        causal_self_attention(edited, 1, 0, false, pattern).to_vector();
    for (int64_t i = 0; i < t; ++i) {
      bool same = true;
      for (int64_t e = 0; e < d; ++e) same = same && after[i * d + e] == before[i * d + e];
      INFO("query " << i);
      REQUIRE(same == !pattern.visible(i, j));
    }
  }
}

TEST_CASE("gradcheck fused window attention across query blocks, with global tokens",
          "[gradcheck][nn][attention][window]") {
  for (const bool alibi : {false, true}) {
    INFO("alibi " << alibi);
    REQUIRE_GRADCHECK(
        [&](const std::vector<Tensor>& in) {
          return causal_self_attention(in[0], 4, 2, alibi, AttentionPattern::sliding_window(20, 3));
        },
        {leaf({1, 90, 12 + 2 * 2 * 3}, 7)});
  }
}

TEST_CASE("gradcheck a GPT with a sliding window, fused and general paths",
          "[gradcheck][nn][gpt][window]") {
  nn::GPTConfig config = tiny_config();
  config.block_size = 12;
  config.attention = AttentionPattern::sliding_window(3, 1);
  for (const bool keep_weights : {false, true}) {
    INFO("general path (kept weights) " << keep_weights);
    nn::GPT model(config, 11);
    model.set_keep_attention_weights(keep_weights);
    const Tensor x = random_ids({2, 12}, config.vocab_size, 1);
    const Tensor y = random_ids({2, 12}, config.vocab_size, 2);
    require_module_gradcheck(model, {}, [&](const std::vector<Tensor>&) { return model.loss(x, y); });
  }
}

TEST_CASE("a GPT whose window covers its context gives full attention's loss",
          "[nn][gpt][window]") {
  nn::GPTConfig config = tiny_config();
  nn::GPT full(config, 4);
  config.attention = AttentionPattern::sliding_window(config.block_size);
  nn::GPT windowed(config, 4);
  full.to(DType::f64);
  windowed.to(DType::f64);
  const Tensor x = random_ids({3, 8}, config.vocab_size, 1);
  const Tensor y = random_ids({3, 8}, config.vocab_size, 2);
  REQUIRE(std::abs(windowed.loss(x, y).item() - full.loss(x, y).item()) < 1e-12);
}

TEST_CASE("window patterns refuse bad sizes naming the operation", "[nn][attention][window][errors]") {
  REQUIRE_THROWS_WITH(AttentionPattern::sliding_window(0), Catch::Contains("at least 1 key"));
  REQUIRE_THROWS_WITH(AttentionPattern::sliding_window(4, -1), Catch::Contains("global tokens"));
  AttentionPattern bad;
  bad.kind = AttentionPattern::Kind::window;
  Generator gen(1);
  const Tensor qkv = Tensor::randn({1, 4, 6}, gen);
  REQUIRE_THROWS_WITH(causal_self_attention(qkv, 1, 0, false, bad),
                      Catch::Contains("causal_self_attention"));
  nn::GPTConfig config = tiny_config();
  config.attention = bad;
  REQUIRE_THROWS_WITH(config.validate(), Catch::Contains("GPTConfig"));
}
