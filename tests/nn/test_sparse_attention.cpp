// Sparse patterns: sliding windows (with and without global tokens), the Sparse Transformer's
// strided band + columns and BigBird's window + global tokens + random key blocks. The fused kernel, which skips the keys no query sees, against the
// general path with the pattern's (T,T) mask; a window or stride at least T long is full
// attention bit for bit; no query reads a key it may not see; float64 gradient checks of the op
// and of a GPT per pattern.
#include "nn_helpers.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

// The general path on packed qkv: the pattern's mask, with the keys from lengths[b] on hidden
// (none when empty), softmax; a bidirectional pattern's ALiBi is symmetric.
Tensor general_attention(const Tensor& qkv, int64_t h, int64_t kvh, bool alibi,
                         const AttentionPattern& pattern, const std::vector<int64_t>& lengths = {}) {
  const PackedHeads p = unpack_heads(qkv, h, kvh);
  const int64_t t = qkv.size(1);
  Tensor mask = nn::pattern_mask(pattern, t, t);
  if (!lengths.empty()) mask = mask + nn::padding_mask(lengths, t);
  const AlibiForm form = pattern.is_bidirectional() ? AlibiForm::symmetric : AlibiForm::causal;
  return merge_heads(nn::scaled_dot_product_attention(p.q, p.k, p.v, mask.to(qkv.dtype()), 0.0,
                                                      false, nullptr, alibi, {}, {}, 0, form)
                         .output);
}

}  // namespace

TEST_CASE("fused sparse attention equals the general path with the pattern's mask",
          "[nn][attention][window][strided][bigbird]") {
  struct Case {
    int64_t t;
    AttentionPattern pattern;
    int64_t kv_heads;
    bool alibi;
  };
  using P = AttentionPattern;
  // Strides: 1 (every column: full attention through the merge), classes longer than a query
  // block of 64 (S 2 at T 150), ALiBi's distances across classes, S above T / 2 and above T.
  const std::vector<Case> cases = {
      {150, P::sliding_window(1), 4, false},     {150, P::sliding_window(17), 4, false},
      {150, P::sliding_window(64), 2, false},    {200, P::sliding_window(70, 3), 1, false},
      {200, P::sliding_window(33, 5), 4, true},  {130, P::sliding_window(100, 80), 2, true},
      {150, P::strided_attention(1), 4, false},  {150, P::strided_attention(2), 2, true},
      {200, P::strided_attention(12), 1, false}, {200, P::strided_attention(13), 4, true},
      {130, P::strided_attention(90), 2, true},  {100, P::strided_attention(150), 4, false},
      // BigBird: blocks across the kernel's query blocks of 64 (10, 13, 20), one of 64, a window
      // of 1, global tokens, and as many random blocks as there are (every key block).
      {150, P::bigbird(8, 0, 2, 10, 1), 4, false}, {200, P::bigbird(16, 3, 3, 20, 7), 2, true},
      {130, P::bigbird(1, 0, 1, 13, 3), 1, false}, {192, P::bigbird(32, 2, 2, 64, 5), 4, true},
      {200, P::bigbird(5, 4, 40, 5, 9), 2, false},
  };
  for (DType dtype : {DType::f64, DType::f32}) {
    for (const Case& c : cases) {
      const AttentionPattern& pattern = c.pattern;
      INFO(dtype_name(dtype) << ", T " << c.t << ", " << pattern.str() << ", kv heads "
                             << c.kv_heads << ", alibi " << c.alibi);
      Generator gen(static_cast<uint64_t>(c.t + pattern.window + pattern.stride));
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

TEST_CASE("fused bidirectional BigBird with padded keys equals the general path with the same "
          "mask", "[nn][attention][bigbird][seq2seq]") {
  struct Case {
    int64_t t;
    AttentionPattern pattern;
    std::vector<int64_t> lengths;  // of the batch's two sequences
    int64_t kv_heads;
    bool alibi;
  };
  // Blocks within and across the kernel's query blocks of 64 (3, 10, 13, 64), a context longer
  // than the batch (its blocks past T drawn but never seen), 0-5 global tokens, 0-3 random
  // blocks, every block drawn, padding from none to the whole sequence, and padded query rows
  // far from every unpadded key (they see none: zeros).
  const std::vector<Case> cases = {
      {12, encoder_bigbird(2, 1, 1, 3, 12, 3), {12, 7}, 4, false},
      {150, encoder_bigbird(8, 0, 2, 10, 200, 1), {150, 41}, 4, false},
      {130, encoder_bigbird(16, 3, 3, 13, 130, 7), {5, 130}, 2, true},
      {130, encoder_bigbird(1, 0, 1, 13, 130, 2), {0, 70}, 1, false},
      {192, encoder_bigbird(32, 2, 2, 64, 192, 5), {192, 100}, 4, true},
      {100, encoder_bigbird(5, 5, 20, 5, 100, 9), {99, 1}, 2, false},
      {140, encoder_bigbird(3, 0, 0, 10, 140, 4), {20, 140}, 4, true},
  };
  for (DType dtype : {DType::f64, DType::f32}) {
    for (const Case& c : cases) {
      INFO(dtype_name(dtype) << ", T " << c.t << ", " << c.pattern.str() << ", lengths "
                             << c.lengths[0] << " " << c.lengths[1] << ", kv heads " << c.kv_heads
                             << ", alibi " << c.alibi);
      Generator gen(static_cast<uint64_t>(c.t + c.pattern.block));
      const int64_t d = 3;
      const Tensor qkv = Tensor::randn({2, c.t, (4 + 2 * c.kv_heads) * d}, gen, dtype);
      const Tensor g = Tensor::randn({2, c.t, 4 * d}, gen, dtype);
      const OutputAndGrad fused = output_and_grad(qkv, g, [&](const Tensor& x) {
        return bidirectional_self_attention(x, 4, c.kv_heads, c.alibi, c.pattern, c.lengths);
      });
      const OutputAndGrad general = output_and_grad(qkv, g, [&](const Tensor& x) {
        return general_attention(x, 4, c.kv_heads, c.alibi, c.pattern, c.lengths);
      });
      const double tol = dtype == DType::f64 ? 1e-12 : 2e-5;
      require_all_close(fused.y, general.y, tol);
      require_all_close(fused.dx, general.dx, tol);
    }
  }
}

TEST_CASE("a window or stride at least as long as the sequence, or BigBird drawing every block, "
          "is full attention, bit for bit", "[nn][attention][window][strided][bigbird]") {
  Generator gen(3);
  const Tensor qkv = Tensor::randn({2, 130, 3 * 8}, gen);
  const Tensor g = Tensor::randn({2, 130, 8}, gen);
  const OutputAndGrad full = output_and_grad(qkv, g, [](const Tensor& x) { return causal_self_attention(x, 2); });
  for (const int64_t size : {130, 131, 1000}) {
    for (const AttentionPattern& pattern :
         {AttentionPattern::sliding_window(size), AttentionPattern::strided_attention(size)}) {
      INFO(pattern.str());
      const OutputAndGrad sparse = output_and_grad(qkv, g, [&](const Tensor& x) {
        return causal_self_attention(x, 2, 0, false, pattern);
      });
      REQUIRE(sparse.y == full.y);
      REQUIRE(sparse.dx == full.dx);
    }
  }
  for (const int64_t block : {1, 10, 13, 64}) {
    const AttentionPattern every = AttentionPattern::bigbird(1, 0, 130 / block + 1, block, 2);
    INFO(every.str());
    const OutputAndGrad sparse = output_and_grad(qkv, g, [&](const Tensor& x) {
      return causal_self_attention(x, 2, 0, false, every);
    });
    REQUIRE(sparse.y == full.y);
    REQUIRE(sparse.dx == full.dx);
  }
}

TEST_CASE("no query reads a key its pattern hides, bit for bit",
          "[nn][attention][window][strided][bigbird]") {
  // Changing the key and value of position j leaves every output row that may not see j exactly
  // as it was, and changes the rows that may.
  const int64_t t = 140, d = 4;
  Generator gen(5);
  const Tensor qkv = Tensor::randn({1, t, 3 * d}, gen);
  for (const AttentionPattern& pattern :
       {AttentionPattern::sliding_window(20, 2), AttentionPattern::strided_attention(9),
        AttentionPattern::bigbird(6, 2, 2, 10, 4)}) {
    const std::vector<double> before = causal_self_attention(qkv, 1, 0, false, pattern).to_vector();
    for (const int64_t j : {0, 1, 2, 50, 139}) {
      Tensor edited = qkv.clone();
      for (int64_t e = d; e < 3 * d; ++e) edited.data<float>()[j * 3 * d + e] += 1.5f;
      const std::vector<double> after =
          causal_self_attention(edited, 1, 0, false, pattern).to_vector();
      for (int64_t i = 0; i < t; ++i) {
        bool same = true;
        for (int64_t e = 0; e < d; ++e) same = same && after[i * d + e] == before[i * d + e];
        INFO(pattern.str() << ", key " << j << ", query " << i);
        REQUIRE(same == !pattern.visible(i, j));
      }
    }
  }
}

TEST_CASE("gradcheck fused sparse attention across query blocks, with global tokens, strides and "
          "random blocks", "[gradcheck][nn][attention][window][strided][bigbird]") {
  // Stride 1 puts 89 queries in one class: its causal pass crosses a query block too.
  const std::vector<std::pair<AttentionPattern, bool>> cases = {
      {AttentionPattern::sliding_window(20, 3), false},
      {AttentionPattern::sliding_window(20, 3), true},
      {AttentionPattern::strided_attention(7), true},
      {AttentionPattern::strided_attention(1), false},
      {AttentionPattern::bigbird(6, 2, 2, 15, 3), true}};
  for (const auto& c : cases) {
    INFO(c.first.str() << ", alibi " << c.second);
    REQUIRE_GRADCHECK(
        [&](const std::vector<Tensor>& in) {
          return causal_self_attention(in[0], 4, 2, c.second, c.first);
        },
        {leaf({1, 90, 12 + 2 * 2 * 3}, 7)});
  }
}

TEST_CASE("gradcheck fused bidirectional BigBird across query blocks, padded",
          "[gradcheck][nn][attention][bigbird][seq2seq]") {
  for (const bool alibi : {false, true}) {
    INFO("alibi " << alibi);
    REQUIRE_GRADCHECK(
        [&](const std::vector<Tensor>& in) {
          return bidirectional_self_attention(in[0], 4, 2, alibi,
                                              encoder_bigbird(6, 2, 2, 16, 80, 3), {80, 47});
        },
        {leaf({2, 80, 12 + 2 * 2 * 3}, 7)});
  }
}

TEST_CASE("gradcheck a GPT with a sliding window, a stride or BigBird, fused and general paths",
          "[gradcheck][nn][gpt][window][strided][bigbird]") {
  for (const AttentionPattern& pattern :
       {AttentionPattern::sliding_window(3, 1), AttentionPattern::strided_attention(3),
        AttentionPattern::bigbird(2, 1, 1, 3, 5)}) {
    nn::GPTConfig config = tiny_config();
    config.block_size = 12;
    config.attention = pattern;
    for (const bool keep_weights : {false, true}) {
      INFO(pattern.str() << ", general path (kept weights) " << keep_weights);
      nn::GPT model(config, 11);
      model.set_keep_attention_weights(keep_weights);
      const Tensor x = random_ids({2, 12}, config.vocab_size, 1);
      const Tensor y = random_ids({2, 12}, config.vocab_size, 2);
      require_module_gradcheck(model, {},
                               [&](const std::vector<Tensor>&) { return model.loss(x, y); });
    }
  }
}

TEST_CASE("a GPT whose window or stride covers its context gives full attention's loss",
          "[nn][gpt][window][strided]") {
  nn::GPTConfig config = tiny_config();
  nn::GPT full(config, 4);
  full.to(DType::f64);
  const Tensor x = random_ids({3, 8}, config.vocab_size, 1);
  const Tensor y = random_ids({3, 8}, config.vocab_size, 2);
  for (const AttentionPattern& pattern : {AttentionPattern::sliding_window(config.block_size),
                                          AttentionPattern::strided_attention(config.block_size)}) {
    INFO(pattern.str());
    config.attention = pattern;
    nn::GPT sparse(config, 4);
    sparse.to(DType::f64);
    REQUIRE(std::abs(sparse.loss(x, y).item() - full.loss(x, y).item()) < 1e-12);
  }
}

TEST_CASE("a window model's ring cache decodes past its context in constant memory, exactly",
          "[nn][gpt][cache][window]") {
  // Context 16, window 5 + 2 global tokens, 40 positions: the ring of 7 slots wraps many times
  // and the prompt (12) already overflows it. Full recomputation over all 40 positions is the
  // reference: the same pattern, positions continuing past the context.
  for (const nn::PositionEmbedding pos :
       {nn::PositionEmbedding::rope, nn::PositionEmbedding::alibi, nn::PositionEmbedding::none}) {
    INFO(nn::position_embedding_name(pos));
    nn::GPTConfig config = tiny_config();
    config.block_size = 16;
    config.position_embedding = pos;
    config.attention = AttentionPattern::sliding_window(5, 2);
    nn::GPT model(config, 6);
    model.to(DType::f64);
    scramble(model, 7, 0.4);
    model.eval();
    REQUIRE(model.generates_past_context());
    std::vector<int64_t> ids(40);
    Generator draw(3);
    for (int64_t& id : ids) id = draw.randint(config.vocab_size);
    const std::vector<double> full = model.forward(Tensor::from_ids(ids, {1, 40})).to_vector();
    require_all_close(cached_logits(model, ids, 12), full, 1e-10);
    auto cache = model.make_cache();
    model.forward(Tensor::from_ids(ids, {1, 40}), {}, &cache);
    CHECK(cache[0].k.size(2) == 7);
    CHECK(cache[0].seen == 40);
    CHECK(model.kv_cache_positions(1000000) == 7);

    nn::SampleOptions options;
    options.tokens = 60;  // far past the context of 16, with no restart
    options.temperature = 1.0;
    options.use_cache = true;
    const std::vector<int64_t> cached = nn::generate(model, {1, 2, 3}, options);
    options.use_cache = false;
    CHECK(cached == nn::generate(model, {1, 2, 3}, options));
  }
  // Learned and sinusoidal positions stop at their table: such models restart the cache.
  nn::GPTConfig config = tiny_config();
  config.attention = AttentionPattern::sliding_window(3);
  CHECK_FALSE(nn::GPT(config, 1).generates_past_context());
}

TEST_CASE("sparse patterns refuse bad sizes naming the operation",
          "[nn][attention][window][strided][errors]") {
  REQUIRE_THROWS_WITH(AttentionPattern::sliding_window(0), Catch::Contains("at least 1 key"));
  REQUIRE_THROWS_WITH(AttentionPattern::sliding_window(4, -1), Catch::Contains("global tokens"));
  REQUIRE_THROWS_WITH(AttentionPattern::strided_attention(0), Catch::Contains("stride"));
  for (const AttentionPattern::Kind kind :
       {AttentionPattern::Kind::window, AttentionPattern::Kind::strided}) {
    AttentionPattern bad;
    bad.kind = kind;  // size 0
    Generator gen(1);
    const Tensor qkv = Tensor::randn({1, 4, 6}, gen);
    REQUIRE_THROWS_WITH(causal_self_attention(qkv, 1, 0, false, bad),
                        Catch::Contains("causal_self_attention"));
    nn::GPTConfig config = tiny_config();
    config.attention = bad;
    REQUIRE_THROWS_WITH(config.validate(), Catch::Contains("GPTConfig"));
  }
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

TEST_CASE("BigBird's random key blocks are the R blocks at or before the query block that the "
          "stated hash ranks first", "[nn][attention][bigbird]") {
  for (const uint64_t seed : {uint64_t{0}, uint64_t{1337}, ~uint64_t{0}}) {
    const AttentionPattern p = AttentionPattern::bigbird(4, 0, 3, 8, seed);
    for (int64_t qb = 0; qb < 40; ++qb) {
      INFO("seed " << seed << ", query block " << qb);
      // The definition written out again: rank (hash, block), take the first R, ascending.
      std::vector<std::pair<uint64_t, int64_t>> ranked;
      const uint64_t row = splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(qb));
      for (int64_t k = 0; k <= qb; ++k) ranked.emplace_back(splitmix64(row ^ static_cast<uint64_t>(k)), k);
      std::sort(ranked.begin(), ranked.end());
      std::vector<int64_t> want;
      for (size_t r = 0; r < std::min<size_t>(3, ranked.size()); ++r) want.push_back(ranked[r].second);
      std::sort(want.begin(), want.end());
      REQUIRE(p.random_key_blocks(qb) == want);
      for (int64_t k = 0; k <= qb + 1; ++k) {
        REQUIRE(p.random_block_seen(qb, k) == std::binary_search(want.begin(), want.end(), k));
      }
    }
  }
  const AttentionPattern a = AttentionPattern::bigbird(4, 0, 2, 8, 1), b = AttentionPattern::bigbird(4, 0, 2, 8, 2);
  bool differ = false;
  for (int64_t qb = 2; qb < 20; ++qb) differ = differ || a.random_key_blocks(qb) != b.random_key_blocks(qb);
  CHECK(differ);
}
