#include <algorithm>
#include <cmath>

#include "nn_helpers.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

// Plain triple loops, independent of the library's ops: softmax(q k^T / sqrt(d) + mask) v.
struct Reference {
  std::vector<double> weights, output;
};

Reference reference_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                              const std::vector<int64_t>& lengths, bool causal) {
  const int64_t b = q.size(0), h = q.size(1), tq = q.size(2), tk = k.size(2), d = q.size(3);
  Reference r{std::vector<double>(static_cast<size_t>(b * h * tq * tk), 0.0),
              std::vector<double>(static_cast<size_t>(b * h * tq * d), 0.0)};
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t hi = 0; hi < h; ++hi) {
      for (int64_t i = 0; i < tq; ++i) {
        std::vector<double> s(static_cast<size_t>(tk));
        double top = -INFINITY;
        for (int64_t j = 0; j < tk; ++j) {
          const bool masked = (causal && j > i + (tk - tq)) ||
                              (!lengths.empty() && j >= lengths[static_cast<size_t>(bi)]);
          double dotp = 0;
          for (int64_t x = 0; x < d; ++x) dotp += q.at({bi, hi, i, x}) * k.at({bi, hi, j, x});
          s[static_cast<size_t>(j)] = masked ? -INFINITY : dotp / std::sqrt(static_cast<double>(d));
          top = std::max(top, s[static_cast<size_t>(j)]);
        }
        double total = 0;
        for (auto& e : s) total += (e = std::exp(e - top));
        for (int64_t j = 0; j < tk; ++j) {
          const double w = s[static_cast<size_t>(j)] / total;
          r.weights[static_cast<size_t>(((bi * h + hi) * tq + i) * tk + j)] = w;
          for (int64_t x = 0; x < d; ++x) {
            r.output[static_cast<size_t>(((bi * h + hi) * tq + i) * d + x)] += w * v.at({bi, hi, j, x});
          }
        }
      }
    }
  }
  return r;
}


}  // namespace

TEST_CASE("attention equals a triple-loop reference, with and without masks", "[nn][attention]") {
  Generator gen(3);
  const Tensor q = Tensor::randn({2, 3, 4, 5}, gen, DType::f64);
  const Tensor k = Tensor::randn({2, 3, 6, 5}, gen, DType::f64);
  const Tensor v = Tensor::randn({2, 3, 6, 5}, gen, DType::f64);
  const std::vector<int64_t> lengths = {6, 3};
  for (bool causal : {false, true}) {
    for (bool padded : {false, true}) {
      Tensor mask;
      if (causal) mask = nn::causal_mask(4, 6);
      if (padded) {
        const Tensor pad = nn::padding_mask(lengths, 6);
        mask = mask.defined() ? mask + pad : pad;
      }
      const auto got = nn::scaled_dot_product_attention(q, k, v, mask.defined() ? mask.to(DType::f64) : mask);
      const Reference want = reference_attention(q, k, v, padded ? lengths : std::vector<int64_t>{}, causal);
      require_all_close(got.weights.to_vector(), want.weights, 1e-12);
      require_all_close(got.output.to_vector(), want.output, 1e-12);
    }
  }
}

TEST_CASE("fused causal attention equals the general path", "[nn][attention]") {
  Generator gen(1);
  nn::MultiHeadSelfAttention attn({16, 4, 0.0, true, true}, gen, std::make_shared<Generator>(2));
  const Tensor x = Tensor::randn({3, 9, 16}, gen);
  attn.set_keep_attention_weights(false);
  const Tensor fused = attn.forward(x);
  attn.set_keep_attention_weights(true);
  const Tensor general = attn.forward(x);
  require_all_close(fused.to_vector(), general.to_vector(), 1e-5);
}

TEST_CASE("fused causal attention keeps finite gradients for huge scores", "[nn][attention]") {
  // Scores around 1e15, as a diverging run reaches: the backward recomputes each weight from the
  // saved log-sum-exp, and a recomputed score one rounding away from the forward's made
  // exp(1e8) = inf, then NaN gradients, in the optimised build.
  Generator gen(3);
  const Tensor qkv = (Tensor::randn({2, 9, 48}, gen) * 1e7).detach().set_requires_grad();
  const Tensor weights = Tensor::randn({2, 9, 16}, gen);
  sum(causal_self_attention(qkv, 2) * weights).backward();
  const std::vector<double> grad = qkv.grad().to_vector();
  CHECK(std::all_of(grad.begin(), grad.end(), [](double g) { return std::isfinite(g); }));
}

TEST_CASE("attention weights have shape (B,H,T,T) and rows that sum to 1", "[nn][attention]") {
  Generator gen(1);
  nn::MultiHeadSelfAttention attn({8, 2, 0.0, true, true}, gen, std::make_shared<Generator>(2));
  attn.set_keep_attention_weights(true);
  attn.forward(Tensor::randn({3, 7, 8}, gen));
  const Tensor w = attn.attention_weights();
  REQUIRE(w.shape() == Shape{3, 2, 7, 7});
  const Tensor rows = sum(w, {-1});
  for (double s : rows.to_vector()) REQUIRE(s == Approx(1.0).margin(1e-6));
}

TEST_CASE("causal mask: later tokens leave earlier logits bit-identical", "[nn][gpt][causal]") {
  for (bool fused : {true, false}) {
    nn::GPT model(tiny_config(2), 5);
    model.eval();
    model.set_keep_attention_weights(!fused);
    std::vector<int64_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};
    const Tensor before = model.forward(Tensor::from_ids(ids, {1, 8}));
    for (int64_t t = 0; t < 7; ++t) {
      std::vector<int64_t> changed = ids;
      for (int64_t j = t + 1; j < 8; ++j) changed[static_cast<size_t>(j)] = (changed[static_cast<size_t>(j)] + 3) % 11;
      const Tensor after = model.forward(Tensor::from_ids(changed, {1, 8}));
      const int64_t v = model.config().vocab_size;
      for (int64_t i = 0; i <= t * v + v - 1; ++i) {
        INFO("fused " << fused << " t " << t << " element " << i);
        REQUIRE(before.data<float>()[i] == after.data<float>()[i]);
      }
    }
  }
}

TEST_CASE("padding: padded keys get exactly zero weight and their content changes nothing",
          "[nn][attention][padding]") {
  Generator gen(1);
  nn::MultiHeadSelfAttention attn({8, 2, 0.0, true, true}, gen, std::make_shared<Generator>(2));
  attn.set_keep_attention_weights(true);
  const std::vector<int64_t> lengths = {4, 6};
  Tensor x = Tensor::randn({2, 6, 8}, gen);
  const Tensor y = attn.forward(x, lengths);
  const Tensor w = attn.attention_weights();  // (2,2,6,6)
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 4; j < 6; ++j) REQUIRE(w.at({0, h, i, j}) == 0.0);
    }
  }
  Tensor x2 = x.clone();
  float* p = x2.data<float>();
  for (int64_t t = 4; t < 6; ++t) {
    for (int64_t c = 0; c < 8; ++c) p[t * 8 + c] += 100.0f;  // sequence 0's padding only
  }
  const Tensor y2 = attn.forward(x2, lengths);
  for (int64_t t = 0; t < 4; ++t) {  // the real positions of sequence 0, and all of sequence 1
    for (int64_t c = 0; c < 8; ++c) REQUIRE(y.at({0, t, c}) == y2.at({0, t, c}));
  }
  for (int64_t i = 0; i < 6 * 8; ++i) REQUIRE(y.data<float>()[48 + i] == y2.data<float>()[48 + i]);
}

TEST_CASE("dropout module: identity in eval, scaled and seeded in training", "[nn][dropout]") {
  auto gen = std::make_shared<Generator>(11);
  nn::Dropout drop(0.25, gen);
  const Tensor x = Tensor::ones({100000});
  drop.eval();
  REQUIRE(drop.forward(x).impl() == x.impl());
  drop.train();
  const Tensor y = drop.forward(x);
  int64_t zeros = 0;
  for (double v : y.to_vector()) {
    if (v == 0.0) {
      ++zeros;
    } else {
      REQUIRE(v == Approx(1.0 / 0.75));
    }
  }
  REQUIRE(static_cast<double>(zeros) / 100000.0 == Approx(0.25).margin(0.01));
  gen->seed_with(11);
  REQUIRE(drop.forward(x).to_vector() == y.to_vector());
}

TEST_CASE("GPT in eval mode ignores dropout, in training it does not", "[nn][gpt][dropout]") {
  nn::GPTConfig config = tiny_config(1);
  config.dropout = 0.5;
  nn::GPT model(config, 1);
  const Tensor ids = random_ids({2, 8}, 11, 4);
  model.eval();
  const auto a = model.forward(ids).to_vector();
  const auto b = model.forward(ids).to_vector();
  REQUIRE(a == b);
  model.train();
  REQUIRE(model.forward(ids).to_vector() != a);
}

TEST_CASE("KV-cache forward equals full recomputation", "[nn][gpt][cache]") {
  nn::GPT model(tiny_config(2), 2);
  model.eval();
  const std::vector<int64_t> ids = {3, 1, 4, 1, 5, 9, 2, 6};
  const Tensor full = model.forward(Tensor::from_ids(ids, {1, 8}));  // (1,8,V)
  require_all_close(cached_logits(model, ids, 3), full.to_vector(), 1e-5);
}
