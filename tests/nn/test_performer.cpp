// Performer attention (FAVOR+): the feature map's values against its formula and its float64
// gradcheck (queries with their row max, keys without), the running sums over given features
// against their implied weights (values, gradients, GQA) and their gradcheck, the orthogonal
// random features, a Performer GPT (gradcheck on both paths, paths agree, causal bit for bit,
// recurrent decoding exact, features in the state dict, seeded redraws), and the approximation
// of softmax attention improving about as 1/sqrt(M).
#include "nn_helpers.hpp"
#include "performer_error.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;
using nn::PositionEmbedding;

namespace {

// The general path over given features on a packed (B,T,H M + Hkv M + Hkv d).
Tensor general_features(const Tensor& packed, int64_t h, int64_t kvh, int64_t m) {
  const int64_t b = packed.size(0), t = packed.size(1);
  const int64_t d = (packed.size(2) - (h + kvh) * m) / kvh;
  const std::vector<Tensor> parts = split(packed, {h * m, kvh * m, kvh * d}, 2);
  const auto heads = [&](const Tensor& part, int64_t n, int64_t w) {
    return permute(reshape(part, {b, t, n, w}), {0, 2, 1, 3});
  };
  const Tensor mask = nn::causal_mask(t, t).to(packed.dtype());
  return merge_heads(nn::feature_attention(heads(parts[0], h, m),
                                           repeat_heads(heads(parts[1], kvh, m), h / kvh),
                                           repeat_heads(heads(parts[2], kvh, d), h / kvh), mask)
                         .output);
}

nn::GPTConfig performer_config(int64_t features = 6) {
  nn::GPTConfig c = tiny_config(2);
  c.n_head = 4;
  c.n_embd = 16;
  c.n_kv_head = 2;
  c.position_embedding = PositionEmbedding::none;
  c.attention = AttentionPattern::performer_attention(features, 3);
  return c;
}

}  // namespace

TEST_CASE("performer_features follows its formula", "[nn][performer]") {
  Generator gen(1);
  const Tensor x = Tensor::randn({2, 3}, gen, DType::f64);
  const Tensor omega = Tensor::randn({5, 3}, gen, DType::f64);
  const std::vector<double> xs = x.to_vector(), ws = omega.to_vector();
  const double c = std::pow(3.0, -0.25);
  for (const bool query : {false, true}) {
    const std::vector<double> got = performer_features(x, omega, query).to_vector();
    for (int64_t r = 0; r < 2; ++r) {
      std::vector<double> a(5);
      double sq = 0;
      for (int64_t e = 0; e < 3; ++e) sq += xs[r * 3 + e] * xs[r * 3 + e];
      for (int64_t j = 0; j < 5; ++j) {
        for (int64_t e = 0; e < 3; ++e) a[j] += c * ws[j * 3 + e] * xs[r * 3 + e];
      }
      const double top = query ? *std::max_element(a.begin(), a.end()) : 0.0;
      for (int64_t j = 0; j < 5; ++j) {
        CHECK(got[r * 5 + j] ==
              Approx(std::exp(a[j] - c * c * sq / 2 - top) / std::sqrt(5.0)).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("gradcheck performer_features for queries and keys", "[gradcheck][ops][performer]") {
  Generator gen(2);
  const Tensor omega = Tensor::randn({7, 4}, gen, DType::f64);
  for (const bool query : {false, true}) {
    INFO((query ? "query" : "key"));
    REQUIRE_GRADCHECK(
        [&](const std::vector<Tensor>& in) { return performer_features(in[0], omega, query); },
        {leaf({2, 3, 4}, 3)});
  }
}

TEST_CASE("causal_feature_attention's running sums equal its implied weights",
          "[nn][attention][performer]") {
  for (DType dtype : {DType::f64, DType::f32}) {
    for (int64_t kv_heads : {4, 2, 1}) {
      INFO(dtype_name(dtype) << ", kv heads " << kv_heads);
      Generator gen(static_cast<uint64_t>(kv_heads));
      const int64_t t = 150, m = 7, d = 5;
      // Features must be positive: exp of Gaussians.
      Tensor packed = Tensor::randn({2, t, (4 + kv_heads) * m + kv_heads * d}, gen, dtype);
      const std::vector<Tensor> parts = split(packed, {(4 + kv_heads) * m, kv_heads * d}, 2);
      packed = concat({exp(parts[0] * 0.5), parts[1]}, 2);
      const Tensor g = Tensor::randn({2, t, 4 * d}, gen, dtype);
      const OutputAndGrad fused = output_and_grad(
          packed, g, [&](const Tensor& x) { return causal_feature_attention(x, 4, kv_heads, m); });
      const OutputAndGrad general = output_and_grad(
          packed, g, [&](const Tensor& x) { return general_features(x, 4, kv_heads, m); });
      const double tol = dtype == DType::f64 ? 1e-12 : 2e-5;
      require_all_close(fused.y, general.y, tol);
      require_all_close(fused.dx, general.dx, tol);
    }
  }
}

TEST_CASE("gradcheck causal_feature_attention with shared key/value heads",
          "[gradcheck][ops][attention][performer]") {
  for (const int64_t kv_heads : {2, 1}) {
    INFO("kv heads " << kv_heads);
    REQUIRE_GRADCHECK(
        [&](const std::vector<Tensor>& in) {
          const std::vector<Tensor> parts = split(in[0], {(2 + kv_heads) * 3, kv_heads * 2}, 2);
          return causal_feature_attention(concat({exp(parts[0]), parts[1]}, 2), 2, kv_heads, 3);
        },
        {leaf({1, 70, (2 + kv_heads) * 3 + kv_heads * 2}, 4, 0.5)});  // two chunks of 64
  }
  Generator gen(1);
  REQUIRE_THROWS_WITH(causal_feature_attention(Tensor::randn({1, 4, 6}, gen), 1, 1, 3),
                      Catch::Contains("causal_feature_attention") && Catch::Contains("(1, 4, 6)"));
}

TEST_CASE("orthogonal random features: orthogonal blocks, chi(d) norms, seeded",
          "[nn][performer]") {
  Generator gen(5), same(5);
  const int64_t m = 10, d = 4;  // blocks of 4, 4 and 2 rows
  const Tensor omega = nn::orthogonal_random_features(m, d, gen);
  CHECK(omega.to_vector() == nn::orthogonal_random_features(m, d, same).to_vector());
  const std::vector<double> w = omega.to_vector();
  const auto dot = [&](int64_t a, int64_t b) {
    double s = 0;
    for (int64_t e = 0; e < d; ++e) s += w[a * d + e] * w[b * d + e];
    return s;
  };
  for (int64_t a = 0; a < m; ++a) {
    CHECK(dot(a, a) > 0.0);
    for (int64_t b = a + 1; b < m && b / d == a / d; ++b) CHECK(std::abs(dot(a, b)) < 1e-5);
  }
  REQUIRE_THROWS_WITH(nn::orthogonal_random_features(0, d, gen), Catch::Contains("features"));
}

TEST_CASE("gradcheck a Performer GPT, both paths", "[gradcheck][nn][gpt][performer]") {
  for (bool fused : {true, false}) {
    INFO((fused ? "fused" : "general"));
    nn::GPTConfig config = performer_config(5);
    config.n_embd = 8;
    require_gpt_loss_gradcheck(config, fused);
  }
}

TEST_CASE("a Performer GPT: both paths agree, it is causal, recurrent decoding is exact",
          "[nn][gpt][performer][cache]") {
  nn::GPT model(performer_config(), 5);
  model.to(DType::f64);
  scramble(model, 4, 0.4);
  model.eval();
  std::vector<int64_t> ids(20);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + 3) % 11);
  const Tensor fused = model.forward(Tensor::from_ids(ids, {1, 20}));
  model.set_keep_attention_weights(true);
  const Tensor general = model.forward(Tensor::from_ids(ids, {1, 20}));
  CHECK(model.attention_weights().size() == 2);
  model.set_keep_attention_weights(false);
  require_all_close(fused.to_vector(), general.to_vector(), 1e-10);
  require_all_close(cached_logits(model, ids, 5), fused.to_vector(), 1e-10);
  auto cache = model.make_cache();
  model.forward(Tensor::from_ids(ids, {1, 20}), {}, &cache);
  CHECK(cache[0].s.shape() == Shape{1, 2, 6, 4});  // (M, d) per key/value head
  CHECK(model.recurrent_state_bytes() == 2 * 2 * (6 * 4 + 6) * 4);
  std::vector<int64_t> changed = ids;
  changed[5] = 9;
  const std::vector<double> a = fused.to_vector();
  const std::vector<double> b = model.forward(Tensor::from_ids(changed, {1, 20})).to_vector();
  REQUIRE(std::equal(a.begin(), a.begin() + 5 * 11, b.begin()));
}

TEST_CASE("a Performer GPT keeps its features in the state dict and redraws them on schedule",
          "[nn][gpt][performer]") {
  nn::GPT model(performer_config(), 5);
  const nn::NamedTensors buffers = model.named_buffers();
  REQUIRE(buffers.size() == 2);
  CHECK(buffers[0].first == "transformer.h.0.attn.performer_features");
  CHECK(buffers[0].second.shape() == Shape{6, 4});
  CHECK(model.state_dict().size() == model.named_parameters().size() + 2);
  const std::vector<double> before = buffers[0].second.to_vector();
  nn::redraw_performer_features(model, 4, 1);  // 4 is not a multiple of 3: kept
  CHECK(buffers[0].second.to_vector() == before);
  nn::redraw_performer_features(model, 6, 1);
  const std::vector<double> at6 = buffers[0].second.to_vector();
  CHECK(at6 != before);
  CHECK(at6 != buffers[1].second.to_vector());  // each layer its own draw
  nn::GPT other(performer_config(), 9);
  nn::redraw_performer_features(other, 6, 1);
  CHECK(other.named_buffers()[0].second.to_vector() == at6);  // (seed, step, layer) decide
  other.load_state_dict(nn::GPT(performer_config(), 5).state_dict());
  CHECK(other.named_buffers()[0].second.to_vector() == before);
}

TEST_CASE("Performer approximates softmax attention better with more features, ~1/sqrt(M)",
          "[nn][performer]") {
  const double e16 = examples::performer_error(16), e64 = examples::performer_error(64),
               e256 = examples::performer_error(256), e1024 = examples::performer_error(1024);
  INFO(e16 << " " << e64 << " " << e256 << " " << e1024);
  CHECK(e64 < e16);
  CHECK(e256 < e64);
  CHECK(e1024 < e64 / 2.5);
}

TEST_CASE("Performer's settings are refused when out of range", "[nn][performer][errors]") {
  REQUIRE_THROWS_WITH(AttentionPattern::performer_attention(0), Catch::Contains("features"));
  REQUIRE_THROWS_WITH(AttentionPattern::performer_attention(4, -1), Catch::Contains("redraw_every"));
  AttentionPattern linear = AttentionPattern::linear_attention();
  linear.features = 8;
  REQUIRE_THROWS_WITH(linear.validate("test"), Catch::Contains("features"));
  nn::GPTConfig rope = performer_config();
  rope.position_embedding = PositionEmbedding::rope;
  REQUIRE_THROWS_WITH(rope.validate(), Catch::Contains("rope"));
}
