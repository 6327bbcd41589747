// Causal linear attention (elu + 1 feature maps, running sums): the op against the general path
// that forms the implied weights phi(q).phi(k) normalised per row, values and gradients, with
// shared key/value heads; float64 gradient checks of phi, of the op and of a GPT with it
// (test_fused_attention.cpp checks it holds no (T,T) buffer); causality and cached decoding of a linear-attention GPT; refusals.
#include "nn_helpers.hpp"
#include "threads_scope.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;
using nn::PositionEmbedding;

namespace {

// The general path on packed qkv: causal mask, implied weights.
Tensor general_linear(const Tensor& qkv, int64_t h, int64_t kvh) {
  const PackedHeads p = unpack_heads(qkv, h, kvh);
  const Tensor mask = nn::causal_mask(qkv.size(1), qkv.size(1)).to(qkv.dtype());
  return merge_heads(nn::linear_attention(p.q, p.k, p.v, mask).output);
}

nn::GPTConfig linear_config(PositionEmbedding pos) {
  nn::GPTConfig c = tiny_config(2);
  c.n_head = 4;
  c.n_embd = 16;
  c.n_kv_head = 2;
  c.position_embedding = pos;
  c.attention = AttentionPattern::linear_attention();
  return c;
}

const PositionEmbedding kLinearSchemes[] = {PositionEmbedding::learned,
                                            PositionEmbedding::sinusoidal, PositionEmbedding::none};

}  // namespace

TEST_CASE("linear attention's running sums equal its implied weights", "[nn][attention][linear]") {
  for (DType dtype : {DType::f64, DType::f32}) {
    for (int64_t kv_heads : {4, 2, 1}) {
      INFO(dtype_name(dtype) << ", kv heads " << kv_heads);
      Generator gen(static_cast<uint64_t>(kv_heads));
      const int64_t t = 150, d = 5;
      const Tensor qkv = Tensor::randn({2, t, (4 + 2 * kv_heads) * d}, gen, dtype);
      const Tensor g = Tensor::randn({2, t, 4 * d}, gen, dtype);
      const OutputAndGrad fused = output_and_grad(
          qkv, g, [&](const Tensor& x) { return causal_linear_attention(x, 4, kv_heads); });
      const OutputAndGrad general =
          output_and_grad(qkv, g, [&](const Tensor& x) { return general_linear(x, 4, kv_heads); });
      const double tol = dtype == DType::f64 ? 1e-12 : 2e-5;
      require_all_close(fused.y, general.y, tol);
      require_all_close(fused.dx, general.dx, tol);
    }
  }
}

TEST_CASE("linear attention is bit-identical on 1 and 2 threads", "[nn][attention][linear]") {
  Generator gen(4);
  const Tensor qkv = Tensor::randn({3, 70, 3 * 16}, gen);
  const Tensor g = Tensor::randn({3, 70, 16}, gen);
  const auto op = [](const Tensor& x) { return causal_linear_attention(x, 2); };
  OutputAndGrad one, two;
  {
    ThreadsScope scope(1);
    one = output_and_grad(qkv, g, op);
  }
  {
    ThreadsScope scope(2);
    two = output_and_grad(qkv, g, op);
  }
  REQUIRE(one.y == two.y);
  REQUIRE(one.dx == two.dx);
}

TEST_CASE("gradcheck elu_plus_one", "[gradcheck][ops][linear]") {
  REQUIRE_GRADCHECK([](const std::vector<Tensor>& in) { return elu_plus_one(in[0]); },
                    {leaf({3, 7}, 2)});
}

TEST_CASE("gradcheck causal_linear_attention with shared key/value heads",
          "[gradcheck][ops][attention][linear]") {
  for (const int64_t kv_heads : {4, 2, 1}) {
    INFO("kv heads " << kv_heads);
    REQUIRE_GRADCHECK(
        [&](const std::vector<Tensor>& in) { return causal_linear_attention(in[0], 4, kv_heads); },
        {leaf({1, 70, (4 + 2 * kv_heads) * 2}, 3)});  // two chunks of 64
  }
}

TEST_CASE("gradcheck a GPT with linear attention for each position scheme it takes, both paths",
          "[gradcheck][nn][gpt][linear]") {
  for (PositionEmbedding pos : kLinearSchemes) {
    for (bool fused : {true, false}) {
      INFO(nn::position_embedding_name(pos) << (fused ? ", fused" : ", general"));
      nn::GPTConfig config = linear_config(pos);
      config.n_embd = 8;
      require_gpt_loss_gradcheck(config, fused);
    }
  }
}

TEST_CASE("a linear-attention GPT: both paths agree, it is causal, cached decoding is exact",
          "[nn][gpt][linear][cache]") {
  for (PositionEmbedding pos : kLinearSchemes) {
    INFO(nn::position_embedding_name(pos));
    nn::GPT model(linear_config(pos), 5);
    model.eval();
    const std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};
    const Tensor fused = model.forward(Tensor::from_ids(ids, {1, 8}));
    model.set_keep_attention_weights(true);
    const Tensor general = model.forward(Tensor::from_ids(ids, {1, 8}));
    model.set_keep_attention_weights(false);
    require_all_close(fused.to_vector(), general.to_vector(), 1e-5);
    require_all_close(cached_logits(model, ids, 3), fused.to_vector(), 1e-5);
    // A later token leaves earlier logits bit-identical.
    std::vector<int64_t> changed = ids;
    changed[5] = 9;
    const std::vector<double> a = fused.to_vector();
    const std::vector<double> b = model.forward(Tensor::from_ids(changed, {1, 8})).to_vector();
    const size_t v = 11;
    REQUIRE(std::equal(a.begin(), a.begin() + 5 * v, b.begin()));
    REQUIRE_FALSE(std::equal(a.begin() + 5 * v, a.begin() + 6 * v, b.begin() + 5 * v));
  }
}

TEST_CASE("linear attention decodes from its recurrent state: exact, constant size, past the context",
          "[nn][gpt][linear][cache]") {
  // Context 8, GQA (4 heads over 2), f64: 30 positions decoded from the (d,d) state equal full
  // recomputation, with a prompt of 5 and then one position at a time.
  nn::GPTConfig config = linear_config(PositionEmbedding::none);
  nn::GPT model(config, 8);
  model.to(DType::f64);
  scramble(model, 4, 0.4);
  model.eval();
  REQUIRE(model.generates_past_context());
  std::vector<int64_t> ids(30);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + 3) % 11);
  const std::vector<double> full = model.forward(Tensor::from_ids(ids, {1, 30})).to_vector();
  require_all_close(cached_logits(model, ids, 5), full, 1e-10);
  auto cache = model.make_cache();
  model.forward(Tensor::from_ids(ids, {1, 30}), {}, &cache);
  CHECK_FALSE(cache[0].k.defined());  // no keys or values kept
  CHECK(cache[0].s.shape() == Shape{1, 2, 4, 4});
  CHECK(cache[0].z.shape() == Shape{1, 2, 4, 1});
  CHECK(cache[0].seen == 30);
  CHECK(model.recurrent_state_bytes() == 2 * 2 * (4 * 4 + 4) * 4);

  nn::SampleOptions options;
  options.tokens = 40;  // five contexts' worth, with no restart
  options.temperature = 1.0;
  options.use_cache = true;
  const std::vector<int64_t> cached = nn::generate(model, {1, 2}, options);
  options.use_cache = false;
  CHECK(cached == nn::generate(model, {1, 2}, options));
  // Learned and sinusoidal positions stop at (or were trained to) the context: restarts there.
  CHECK_FALSE(nn::GPT(linear_config(PositionEmbedding::learned), 1).generates_past_context());
  CHECK_FALSE(nn::GPT(linear_config(PositionEmbedding::sinusoidal), 1).generates_past_context());
}

TEST_CASE("linear attention refuses RoPE and ALiBi, and the softmax kernel refuses it",
          "[nn][linear][errors]") {
  for (PositionEmbedding pos : {PositionEmbedding::rope, PositionEmbedding::alibi}) {
    REQUIRE_THROWS_WITH(linear_config(pos).validate(),
                        Catch::Contains("linear attention") &&
                            Catch::Contains(nn::position_embedding_name(pos)));
  }
  Generator gen(1);
  const Tensor qkv = Tensor::randn({1, 4, 6}, gen);
  REQUIRE_THROWS_WITH(causal_self_attention(qkv, 1, 0, false, AttentionPattern::linear_attention()),
                      Catch::Contains("causal_linear_attention"));
  REQUIRE_THROWS_WITH(causal_linear_attention(Tensor::randn({1, 4, 7}, gen), 1),
                      Catch::Contains("causal_linear_attention") && Catch::Contains("(1, 4, 7)"));
}
