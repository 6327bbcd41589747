// BigBird in an encoder (the encoder-decoder's): bidirectional, its window reaching both ways,
// its global tokens seeing and seen by every position, each query block's random key blocks
// drawn from the whole context. The mask against the stated definition, the attention against
// the general path with that mask, float64 gradient checks, and the refusals.
#include "nn_helpers.hpp"
#include "seq2seq_helpers.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

nn::EncoderDecoderConfig bigbird_seq2seq() {
  nn::EncoderDecoderConfig c = tiny_seq2seq();
  c.max_position_embeddings = 12;
  c.encoder_attention = AttentionPattern::bigbird(2, 1, 1, 3, 5);
  return c;
}

}  // namespace

TEST_CASE("a bidirectional BigBird sees the window both ways, the global tokens both ways and "
          "R random blocks from the whole context", "[nn][attention][bigbird]") {
  const AttentionPattern p = encoder_bigbird(3, 2, 2, 4, 32);
  REQUIRE(p.is_bidirectional());
  REQUIRE(p.bidirectional_blocks == 8);
  bool later_block_drawn = false;
  for (int64_t qb = 0; qb < 8; ++qb) {
    const std::vector<int64_t> drawn = p.random_key_blocks(qb);
    REQUIRE(drawn.size() == 2);
    later_block_drawn = later_block_drawn || drawn.back() > qb;
    for (int64_t kb : drawn) REQUIRE((kb >= 0 && kb < 8));
  }
  CHECK(later_block_drawn);  // unlike a causal BigBird's, blocks after the query's are candidates
  const Tensor mask = nn::pattern_mask(p, 32, 32);
  for (int64_t i = 0; i < 32; ++i) {
    for (int64_t j = 0; j < 32; ++j) {
      const std::vector<int64_t> drawn = p.random_key_blocks(i / 4);
      const bool want = std::abs(i - j) < 3 || i < 2 || j < 2 ||
                        std::binary_search(drawn.begin(), drawn.end(), j / 4);
      INFO("query " << i << ", key " << j);
      REQUIRE((mask.at({i, j}) == 0.0) == want);
    }
  }
  CHECK(p.str() == "bidirectional bigbird: window 3 + 2 global tokens + 2 random blocks of 4");
}

TEST_CASE("MultiHeadAttention with a bidirectional BigBird (the fused kernel) equals the general "
          "path with its mask, padded too, and a hidden key changes nothing", "[nn][attention][bigbird][seq2seq]") {
  const AttentionPattern p = encoder_bigbird(2, 1, 1, 3, 12);
  nn::MultiHeadAttentionOptions options{8, 2, 0, 0.0, true};
  options.pattern = p;
  Generator init(5);
  nn::MultiHeadAttention sparse(options, init, std::make_shared<Generator>(6));
  options.pattern = {};
  Generator same_init(5);
  nn::MultiHeadAttention full(options, same_init, std::make_shared<Generator>(6));
  sparse.to(DType::f64);
  full.to(DType::f64);
  const Tensor x = leaf({2, 12, 8}, 7);
  // The general path itself: full attention's projections with the pattern's mask as padding.
  const Tensor q = full.q_proj->forward(x), k = full.k_proj->forward(x), v = full.v_proj->forward(x);
  const auto heads = [](const Tensor& t) { return permute(reshape(t, {2, 12, 2, 4}), {0, 2, 1, 3}); };
  const Tensor mask = nn::pattern_mask(p, 12, 12).to(DType::f64);
  const Tensor y = nn::scaled_dot_product_attention(heads(q), heads(k), heads(v), mask).output;
  const Tensor want = full.out_proj->forward(reshape(permute(y, {0, 2, 1, 3}), {2, 12, 8}));
  require_all_close(sparse.forward(x, x).to_vector(), want.to_vector(), 1e-12);
  // Padded, the fused kernel (weights not kept) equals the general path `heads` reads (kept).
  const std::vector<double> fused = sparse.forward(x, x, {false, {12, 7}}).to_vector();
  sparse.set_keep_attention_weights(true);
  require_all_close(sparse.forward(x, x, {false, {12, 7}}).to_vector(), fused, 1e-12);
  REQUIRE(sparse.attention_weights().defined());
  sparse.set_keep_attention_weights(false);
  // Query 5 (block 1, drawing block 3 or another) may not see key 11 unless drawn: a change there
  // leaves its output exactly as it was.
  if (mask.at({5, 11}) != 0.0) {
    std::vector<double> values = x.to_vector();
    for (int64_t c = 0; c < 8; ++c) values[static_cast<size_t>(11 * 8 + c)] = 3.0;
    const Tensor moved = Tensor::from(values, {2, 12, 8}, DType::f64);
    const Tensor a = sparse.forward(x, x), b = sparse.forward(moved, moved);
    for (int64_t c = 0; c < 8; ++c) REQUIRE(a.at({0, 5, c}) == b.at({0, 5, c}));
  }
}

TEST_CASE("gradcheck MultiHeadAttention with a bidirectional BigBird, padded",
          "[gradcheck][nn][attention][bigbird]") {
  nn::MultiHeadAttentionOptions options{8, 2, 0, 0.0, true};
  options.pattern = encoder_bigbird(2, 1, 1, 3, 9);
  Generator init(8);
  nn::MultiHeadAttention mha(options, init, std::make_shared<Generator>(9));
  mha.set_keep_attention_weights(true);
  require_module_gradcheck(mha, {leaf({2, 9, 8}, 10)}, [&](const std::vector<Tensor>& in) {
    return mha.forward(in[0], in[0], {false, {9, 7}});
  });
}

TEST_CASE("gradcheck an encoder-decoder whose encoder runs BigBird", "[gradcheck][nn][seq2seq][bigbird]") {
  nn::EncoderDecoder model(bigbird_seq2seq(), 5);
  model.to(DType::f64);
  scramble(model, 6, 0.4);
  const Tensor source = Tensor::from_ids({3, 4, 5, 6, 7, 8, 3, 4, 0, 0}, {2, 5});
  const Tensor inputs = Tensor::from_ids({1, 4, 5, 1, 6, 0}, {2, 3});
  const Tensor targets = Tensor::from_ids({4, 5, 2, 6, 2, -100}, {2, 3});
  require_module_gradcheck(model, {}, [&](const std::vector<Tensor>&) {
    return model.loss(source, {5, 3}, inputs, targets);
  });
}

TEST_CASE("an encoder's attention refuses other patterns and blocks that do not tile its "
          "positions, naming the setting", "[nn][seq2seq][bigbird]") {
  nn::EncoderDecoderConfig c = bigbird_seq2seq();
  c.max_position_embeddings = 10;  // blocks of 3 do not tile it
  REQUIRE_THROWS_WITH(c.validate(), Catch::Contains("bigbird_block 3 does not divide "
                                                    "max_position_embeddings 10"));
  c = bigbird_seq2seq();
  c.encoder_attention = AttentionPattern::bigbird(2, 0, 5, 3, 1);
  REQUIRE_THROWS_WITH(c.validate(), Catch::Contains("random_blocks 5 is more than the context's 4 blocks"));
  c.encoder_attention = AttentionPattern::sliding_window(4);
  REQUIRE_THROWS_WITH(c.validate(), Catch::Contains("takes full or bigbird attention"));
  REQUIRE_THROWS_WITH(causal_self_attention(Tensor::zeros({1, 12, 24}), 2, 2, false,
                                            encoder_bigbird(2, 0, 1, 3, 12)),
                      Catch::Contains("is not causal"));
  REQUIRE_THROWS_WITH(bidirectional_self_attention(Tensor::zeros({1, 12, 24}), 2, 2, false,
                                                   AttentionPattern::bigbird(2, 0, 1, 3, 1), {}),
                      Catch::Contains("is not bidirectional"));
  REQUIRE_THROWS_WITH(bidirectional_self_attention(Tensor::zeros({1, 12, 24}), 2, 2, false,
                                                   encoder_bigbird(2, 0, 1, 3, 12), {13}),
                      Catch::Contains("length 13 of sequence 0 is outside [0, 12]"));
}
