#pragma once
#include <algorithm>
#include <cmath>

#include "gradcheck_helpers.hpp"
#include "tinygpt/nn.hpp"

namespace tinygpt::testing {

// Every position scheme a model takes, for the cases that sweep them.
inline const std::vector<nn::PositionEmbedding> kPositionSchemes = {
    nn::PositionEmbedding::learned, nn::PositionEmbedding::sinusoidal, nn::PositionEmbedding::rope,
    nn::PositionEmbedding::alibi, nn::PositionEmbedding::none};

// A small f32 GPT for behaviour tests.
inline nn::GPTConfig tiny_config(int64_t layers = 2) {
  nn::GPTConfig c;
  c.vocab_size = 11;
  c.block_size = 8;
  c.n_layer = layers;
  c.n_head = 2;
  c.n_embd = 8;
  return c;
}

// Weights well above GPT-2's 0.02, so that every path carries a signal far above round-off.
inline void scramble(nn::Module& model, uint64_t seed, double std) {
  Generator gen(seed);
  for (Tensor p : model.parameters()) p.copy_(Tensor::randn(p.shape(), gen, p.dtype(), 0.0, std));
}

inline Tensor random_ids(const Shape& shape, int64_t vocab, uint64_t seed) {
  Generator gen(seed);
  std::vector<int64_t> ids(static_cast<size_t>(shape.numel()));
  for (auto& id : ids) id = gen.randint(vocab);
  return Tensor::from_ids(ids, shape);
}

// Fails with the largest difference unless every element of got is within tol of want.
inline void require_all_close(const std::vector<double>& got, const std::vector<double>& want,
                              double tol) {
  REQUIRE(got.size() == want.size());
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  INFO("largest difference " << worst);
  REQUIRE(worst <= tol);
}

// The logits of `ids` fed as the first `first` tokens at once and then one at a time through a
// KV cache, end to end: equal to one forward of all of them when the cache is right.
inline std::vector<double> cached_logits(nn::GPT& model, const std::vector<int64_t>& ids,
                                         int64_t first) {
  auto cache = model.make_cache();
  const std::vector<int64_t> head(ids.begin(), ids.begin() + first);
  std::vector<double> out = model.forward(Tensor::from_ids(head, {1, first}), {}, &cache).to_vector();
  for (size_t i = static_cast<size_t>(first); i < ids.size(); ++i) {
    const auto next = model.forward(Tensor::from_ids({ids[i]}, {1, 1}), {}, &cache).to_vector();
    out.insert(out.end(), next.begin(), next.end());
  }
  return out;
}

// The heads of a packed qkv (B,T,C + 2 KV) as the general path takes them: q (B,H,T,d), and k, v
// with each of the kvh key/value heads repeated for its H / kvh query heads.
struct PackedHeads {
  Tensor q, k, v;
};
inline PackedHeads unpack_heads(const Tensor& qkv, int64_t h, int64_t kvh) {
  const int64_t b = qkv.size(0), t = qkv.size(1), d = qkv.size(2) / (h + 2 * kvh);
  const std::vector<Tensor> parts = split(qkv, {h * d, kvh * d, kvh * d}, 2);
  const auto heads = [&](const Tensor& part, int64_t n) {
    return permute(reshape(part, {b, t, n, d}), {0, 2, 1, 3});
  };
  return {heads(parts[0], h), repeat_heads(heads(parts[1], kvh), h / kvh),
          repeat_heads(heads(parts[2], kvh), h / kvh)};
}
// (B,H,T,d) -> (B,T,H d)
inline Tensor merge_heads(const Tensor& y) {
  return reshape(permute(y, {0, 2, 1, 3}), {y.size(0), y.size(2), y.size(1) * y.size(3)});
}

// An attention op's output and its input's gradient for the output gradient g.
struct OutputAndGrad {
  std::vector<double> y, dx;
};
template <class F>
OutputAndGrad output_and_grad(const Tensor& x0, const Tensor& g, F op) {
  Tensor x = x0.clone().set_requires_grad();
  const Tensor y = op(x);
  y.backward(g);
  return {y.to_vector(), x.grad().to_vector()};
}

// Gradient-checks `module`'s forward with respect to all its parameters (and `inputs` that
// require grad), in f64.
template <class M, class F>
void require_module_gradcheck(M& module, std::vector<Tensor> inputs, F forward) {
  module.to(DType::f64);
  std::vector<Tensor> all = inputs;
  for (Tensor p : module.parameters()) all.push_back(p);
  REQUIRE_GRADCHECK([&](const std::vector<Tensor>& in) { return forward(in); }, all);
}

// Gradient-checks the loss of a GPT of `config` (vocabulary 11) on two random sequences of 6, on
// the fused path or (keeping the weights) the general one.
inline void require_gpt_loss_gradcheck(const nn::GPTConfig& config, bool fused) {
  nn::GPT model(config, 3);
  model.set_keep_attention_weights(!fused);
  const Tensor tokens = random_ids({2, 6}, 11, 1);
  const Tensor targets = random_ids({2, 6}, 11, 2);
  require_module_gradcheck(model, {}, [&](const std::vector<Tensor>&) {
    return model.loss(tokens, targets);
  });
}

// An encoder's BigBird (bidirectional over `context` positions).
inline AttentionPattern encoder_bigbird(int64_t window, int64_t globals, int64_t random,
                                        int64_t block, int64_t context, uint64_t seed = 3) {
  return AttentionPattern::bigbird(window, globals, random, block, seed)
      .bidirectional_over(context, "context", "test");
}

}  // namespace tinygpt::testing
