// The attention variants end to end: every position scheme (learned, sinusoidal, rope, alibi,
// none) with multi-head, grouped-query and multi-query attention gradchecks, gives the same
// results on the fused and the general path, is causal, gives the same logits with the KV
// cache (RoPE at the cached offset) and the same sampled ids with and without it, and runs past
// the training context unless its positions are learned.
#include <algorithm>
#include <cmath>

#include "nn_helpers.hpp"
#include "tinygpt/nn/position.hpp"
#include "tinygpt/nn/sampler.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;
using nn::PositionEmbedding;

namespace {

// 2 layers, 4 heads of width 4 over `kv_heads` key/value heads, context 8, vocabulary 11.
nn::GPTConfig variant_config(PositionEmbedding pos, int64_t kv_heads,
                            const AttentionPattern& pattern = {}) {
  nn::GPTConfig c = tiny_config(2);
  c.n_head = 4;
  c.n_embd = 16;
  c.position_embedding = pos;
  c.n_kv_head = kv_heads;
  c.attention = pattern;
  return c;
}

// Full attention, a window of 3 keys with 1 global token and a stride of 3: short enough that the
// context of 8 (80 for the fused kernel's blocks) sees every kind of hidden key.
const std::vector<AttentionPattern> kPatterns = {AttentionPattern{},
                                                 AttentionPattern::sliding_window(3, 1),
                                                 AttentionPattern::strided_attention(3)};


std::string describe(PositionEmbedding pos, int64_t kv_heads, const AttentionPattern& pattern = {}) {
  return nn::position_embedding_name(pos) + ", kv_heads " + std::to_string(kv_heads) + ", " +
         pattern.str() + " attention";
}

}  // namespace

TEST_CASE("position embedding names round-trip, and unknown names are refused", "[nn][position]") {
  for (PositionEmbedding p : kPositionSchemes) {
    CHECK(nn::parse_position_embedding(nn::position_embedding_name(p)) == p);
  }
  CHECK_THROWS_AS(nn::parse_position_embedding("absolute"), ValueError);
}

TEST_CASE("sinusoidal positions interleave sin and cos of pos / 10000^(2i/d)", "[nn][position]") {
  const Tensor pe = nn::sinusoidal_positions(3, 4, 6, DType::f64);  // positions 3..6, d = 6
  REQUIRE(pe.shape() == Shape{4, 6});
  const double* v = pe.data<double>();
  for (int64_t p = 0; p < 4; ++p) {
    for (int64_t i = 0; i < 3; ++i) {
      const double angle = static_cast<double>(3 + p) / std::pow(10000.0, 2.0 * i / 6.0);
      CHECK(v[p * 6 + 2 * i] == Approx(std::sin(angle)).epsilon(1e-14));
      CHECK(v[p * 6 + 2 * i + 1] == Approx(std::cos(angle)).epsilon(1e-14));
    }
  }
}

TEST_CASE("the configuration decides the parameters: wpe only for learned, c_attn (C, C + 2 KV)",
          "[nn][gpt][gqa]") {
  for (PositionEmbedding pos : kPositionSchemes) {
    for (int64_t kv : {0, 4, 2, 1}) {
      INFO(describe(pos, kv));
      nn::GPT model(variant_config(pos, kv), 1);
      const auto params = model.named_parameters();
      const auto has = [&](const std::string& name) {
        return std::any_of(params.begin(), params.end(), [&](const auto& p) { return p.first == name; });
      };
      CHECK(has("transformer.wpe.weight") == (pos == PositionEmbedding::learned));
      const int64_t kv_heads = kv == 0 ? 4 : kv;
      for (const auto& [name, p] : params) {
        if (name == "transformer.h.0.attn.c_attn.weight") CHECK(p.shape() == Shape{16, 16 + 2 * kv_heads * 4});
      }
    }
  }
  nn::GPTConfig bad = variant_config(PositionEmbedding::learned, 3);
  CHECK_THROWS_AS(bad.validate(), ValueError);
  bad = variant_config(PositionEmbedding::rope, 4);
  bad.n_embd = 12;  // heads of width 3: RoPE pairs dimensions
  CHECK_THROWS_AS(bad.validate(), ValueError);
}

TEST_CASE("kv_heads = heads is today's attention: the same weights and bits as the default",
          "[nn][gpt][gqa]") {
  nn::GPT mha(variant_config(PositionEmbedding::learned, 0), 7);
  nn::GPT same(variant_config(PositionEmbedding::learned, 4), 7);
  const Tensor ids = random_ids({2, 8}, 11, 3);
  const Tensor targets = random_ids({2, 8}, 11, 4);
  const auto a = mha.state_dict(), b = same.state_dict();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK(a[i].second.to_vector() == b[i].second.to_vector());
  }
  CHECK(mha.loss(ids, targets).item() == same.loss(ids, targets).item());
}

TEST_CASE("grouped-query attention equals multi-head attention with duplicated key/value heads",
          "[nn][gpt][gqa]") {
  // Query head h uses key/value head h / (heads / kv_heads): copying kv head g into the MHA
  // model's heads g r .. g r + r - 1 makes the two models compute the same function.
  for (PositionEmbedding pos : {PositionEmbedding::learned, PositionEmbedding::rope, PositionEmbedding::alibi}) {
    for (int64_t kv : {2, 1}) {
      INFO(describe(pos, kv));
      nn::GPT gqa(variant_config(pos, kv), 3);
      scramble(gqa, 4, 0.3);
      nn::GPT mha(variant_config(pos, 4), 3);
      const int64_t c = 16, d = 4, r = 4 / kv, w_gqa = c + 2 * kv * d, w_mha = 3 * c;
      const auto src = gqa.named_parameters();
      const auto dsts = mha.named_parameters();
      for (size_t i = 0; i < dsts.size(); ++i) {
        const std::string& name = dsts[i].first;
        Tensor dst = dsts[i].second;
        const Tensor& from = src[i].second;
        REQUIRE(src[i].first == name);
        if (name.find("c_attn") == std::string::npos) {
          dst.copy_(from);
          continue;
        }
        const bool weight = from.ndim() == 2;
        const int64_t rows = weight ? c : 1;
        const float* s = from.data<float>();
        float* t = dst.data<float>();
        for (int64_t row = 0; row < rows; ++row) {
          for (int64_t col = 0; col < w_mha; ++col) {
            int64_t at = col;  // queries stay
            if (col >= c) {
              const int64_t part = (col - c) / c, head = (col - c) % c / d, e = col % d;
              at = c + part * kv * d + (head / r) * d + e;
            }
            t[row * w_mha + col] = s[row * w_gqa + at];
          }
        }
      }
      gqa.eval();
      mha.eval();
      const Tensor ids = random_ids({2, 8}, 11, 5);
      require_all_close(gqa.forward(ids).to_vector(), mha.forward(ids).to_vector(), 1e-5);
    }
  }
}

TEST_CASE("gradcheck the GPT loss for every position scheme and key/value head count",
          "[gradcheck][nn][gpt][position][gqa][exhaustive]") {
  for (PositionEmbedding pos : kPositionSchemes) {
    for (const AttentionPattern& pattern : kPatterns) {
      for (int64_t kv : {2, 1}) {
        if (!pattern.is_full() && kv == 1) continue;  // sparse patterns with one GQA shape: time
        for (bool fused : {true, false}) {
          INFO(describe(pos, kv, pattern) << (fused ? ", fused" : ", general"));
          nn::GPTConfig config = variant_config(pos, kv, pattern);
          config.n_embd = 8;  // heads of width 2: a small check
          nn::GPT model(config, 3);
          model.set_keep_attention_weights(!fused);
          const Tensor tokens = random_ids({2, 6}, 11, 1);
          const Tensor targets = random_ids({2, 6}, 11, 2);
          scramble(model, 9, 0.5);
          require_module_gradcheck(model, {}, [&](const std::vector<Tensor>&) {
            return model.loss(tokens, targets);
          });
        }
      }
    }
  }
}

TEST_CASE("fused attention equals the general path for every variant, values and gradients",
          "[nn][attention][fused][position][gqa]") {
  for (PositionEmbedding pos : kPositionSchemes) {
    for (const AttentionPattern& pattern : kPatterns) {
      for (int64_t kv : {4, 2, 1}) {
        INFO(describe(pos, kv, pattern));
        // Context 80: the fused kernel's query blocks of 64 and a partial one.
        nn::GPTConfig config = variant_config(pos, kv, pattern);
        config.block_size = 80;
        std::vector<std::vector<double>> loss, grads;
        for (bool fused : {true, false}) {
          nn::GPT model(config, 11);
          model.to(DType::f64);
          scramble(model, 12, 0.2);
          model.set_keep_attention_weights(!fused);
          const Tensor l = model.loss(random_ids({2, 80}, 11, 6), random_ids({2, 80}, 11, 7));
          l.backward();
          loss.push_back({l.item()});
          std::vector<double> g;
          for (const Tensor& p : model.parameters()) {
            const auto v = p.grad().to_vector();
            g.insert(g.end(), v.begin(), v.end());
          }
          grads.push_back(g);
        }
        require_all_close(loss[0], loss[1], 1e-12);
        require_all_close(grads[0], grads[1], 1e-10);
      }
    }
  }
}

TEST_CASE("the key bias's gradient is the exact zero, except where RoPE turns each key",
          "[nn][gpt][position][gqa]") {
  for (PositionEmbedding pos : kPositionSchemes) {
    for (int64_t kv : {4, 1}) {
      for (bool fused : {true, false}) {
        INFO(describe(pos, kv) << (fused ? ", fused" : ", general"));
        nn::GPT model(variant_config(pos, kv), 21);
        scramble(model, 22, 0.3);
        model.set_keep_attention_weights(!fused);
        model.loss(random_ids({2, 8}, 11, 23), random_ids({2, 8}, 11, 24)).backward();
        for (const auto& [name, p] : model.named_parameters()) {
          if (name.find("c_attn.bias") == std::string::npos) continue;
          const std::vector<double> g = p.grad().to_vector();  // (C + 2 KV): q, k, v
          const auto key_begin = g.begin() + 16, key_end = key_begin + 4 * kv;
          const bool zero = std::all_of(key_begin, key_end, [](double x) { return x == 0.0; });
          CHECK(zero == (pos != PositionEmbedding::rope));
          CHECK(std::any_of(g.begin(), key_begin, [](double x) { return x != 0.0; }));  // queries
          CHECK(std::any_of(key_end, g.end(), [](double x) { return x != 0.0; }));      // values
        }
      }
    }
  }
}

TEST_CASE("every variant is causal: later tokens leave earlier logits bit-identical",
          "[nn][gpt][causal][position][gqa]") {
  for (PositionEmbedding pos : kPositionSchemes) {
    for (const AttentionPattern& pattern : kPatterns) {
      for (int64_t kv : {4, 1}) {
        for (bool fused : {true, false}) {
          INFO(describe(pos, kv, pattern) << (fused ? ", fused" : ", general"));
          nn::GPT model(variant_config(pos, kv, pattern), 5);
          scramble(model, 6, 0.3);
          model.eval();
          model.set_keep_attention_weights(!fused);
          const std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};
          const Tensor before = model.forward(Tensor::from_ids(ids, {1, 8}));
          const int64_t v = model.config().vocab_size;
          for (int64_t t = 0; t < 7; ++t) {
            std::vector<int64_t> changed = ids;
            changed[static_cast<size_t>(t + 1)] = (changed[static_cast<size_t>(t + 1)] + 3) % 11;
            const Tensor after = model.forward(Tensor::from_ids(changed, {1, 8}));
            for (int64_t i = 0; i < (t + 1) * v; ++i) {
              INFO("t " << t << " element " << i);
              REQUIRE(before.data<float>()[i] == after.data<float>()[i]);
            }
            // ... and the change reaches the position it was made at.
            bool moved = false;
            for (int64_t i = (t + 1) * v; i < (t + 2) * v; ++i) moved |= before.data<float>()[i] != after.data<float>()[i];
            CHECK(moved);
          }
        }
      }
    }
  }
}

TEST_CASE("KV-cache forward equals full recomputation for every variant", "[nn][gpt][cache][position][gqa]") {
  for (PositionEmbedding pos : kPositionSchemes) {
    for (const AttentionPattern& pattern : kPatterns) {
      for (int64_t kv : {4, 2, 1}) {
        INFO(describe(pos, kv, pattern));
        nn::GPT model(variant_config(pos, kv, pattern), 2);
        scramble(model, 3, 0.3);
        model.eval();
        const std::vector<int64_t> ids = {3, 1, 4, 1, 5, 9, 2, 6};
        const Tensor full = model.forward(Tensor::from_ids(ids, {1, 8}));  // (1,8,V)
        require_all_close(cached_logits(model, ids, 3), full.to_vector(), 1e-5);
        // The cache holds kv_heads heads only (and a window's ring only W + G positions).
        auto cache = model.make_cache();
        model.forward(Tensor::from_ids(ids, {1, 8}), {}, &cache);
        CHECK(cache[0].k.shape() == Shape{1, kv, model.kv_cache_positions(8), 4});
        CHECK(model.kv_cache_bytes(8) == 2 * 2 * kv * 8 * 4 * 4);
      }
    }
  }
}

TEST_CASE("generate gives the same ids with and without the cache for every variant",
          "[sample][position][gqa]") {
  for (PositionEmbedding pos : kPositionSchemes) {
    for (const AttentionPattern& pattern : kPatterns) {
      for (int64_t kv : {4, 2, 1}) {
        if (!pattern.is_full() && kv != 2) continue;  // sparse patterns with one GQA shape: time
        nn::GPT model(variant_config(pos, kv, pattern), 8);
        scramble(model, 9, 0.3);
        for (const uint64_t seed : {1u, 2u}) {
          for (const double temperature : {0.0, 1.0}) {
            INFO(describe(pos, kv, pattern) << ", seed " << seed << ", temperature " << temperature);
            nn::SampleOptions options;
            options.tokens = 35;  // restarts the window of 8 several times
            options.seed = seed;
            options.temperature = temperature;
            options.use_cache = true;
            const auto cached = nn::generate(model, {1, 2, 3}, options);
            options.use_cache = false;
            CHECK(cached == nn::generate(model, {1, 2, 3}, options));
          }
        }
      }
    }
  }
}

TEST_CASE("only learned positions stop at the training context", "[nn][gpt][position]") {
  for (PositionEmbedding pos : kPositionSchemes) {
    INFO(nn::position_embedding_name(pos));
    nn::GPT model(variant_config(pos, 2), 4);
    scramble(model, 5, 0.3);
    model.eval();
    const Tensor ids = random_ids({1, 24}, 11, 6);  // 3x the context of 8
    if (pos == PositionEmbedding::learned) {
      CHECK_THROWS_AS(model.forward(ids), IndexError);
      continue;
    }
    const Tensor logits = model.forward(ids);
    REQUIRE(logits.shape() == Shape{1, 24, 11});
    for (double v : logits.to_vector()) REQUIRE(std::isfinite(v));
    // Causal: the first 8 positions are those of the 8-token window.
    const Tensor first = model.forward(narrow(ids, 1, 0, 8));
    require_all_close(narrow(logits, 1, 0, 8).to_vector(), first.to_vector(), 1e-5);
  }
}
