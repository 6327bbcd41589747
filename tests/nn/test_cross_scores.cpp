// Cross-attention's scorings (Luong's dot, general and concat; Bahdanau's additive) and the
// decoder without cross-attention, which sees the source only as one pooled vector.
#include <cmath>

#include "nn_helpers.hpp"
#include "seq2seq_helpers.hpp"

using namespace tinygpt;
using namespace tinygpt::testing;

namespace {

constexpr nn::AttentionScore kLearnedScores[] = {nn::AttentionScore::general, nn::AttentionScore::concat,
                                                 nn::AttentionScore::additive};

nn::MultiHeadAttention scored_mha(nn::AttentionScore score, int64_t kv_heads = 0) {
  Generator gen(3);
  nn::MultiHeadAttentionOptions options{8, 4, kv_heads, 0.0, true};
  options.score = score;
  return nn::MultiHeadAttention(options, gen, std::make_shared<Generator>(4));
}

nn::EncoderDecoderConfig scored_seq2seq(nn::AttentionScore score, bool cross = true) {
  nn::EncoderDecoderConfig c = tiny_seq2seq();
  c.encoder_layers = 1;
  c.cross_attention = cross;
  c.cross_score = score;
  return c;
}

// Every scoring but the default with cross-attention, and the decoder without it.
const std::pair<nn::AttentionScore, bool> kDecoderViews[] = {
    {nn::AttentionScore::general, true}, {nn::AttentionScore::concat, true},
    {nn::AttentionScore::additive, true}, {nn::AttentionScore::dot, false}};

// x (T,C) row-major times a (out,in)-stored weight plus bias -> (T,out), by loops.
std::vector<double> project(const std::vector<double>& x, int64_t t, const nn::Linear& layer) {
  const std::vector<double> w = layer.weight.to_vector(), b = layer.bias.to_vector();
  const int64_t out = layer.weight.size(0), in = layer.weight.size(1);
  std::vector<double> y(static_cast<size_t>(t * out));
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t o = 0; o < out; ++o) {
      double acc = b[static_cast<size_t>(o)];
      for (int64_t c = 0; c < in; ++c) acc += x[static_cast<size_t>(i * in + c)] * w[static_cast<size_t>(o * in + c)];
      y[static_cast<size_t>(i * out + o)] = acc;
    }
  }
  return y;
}

// The score of query vector q and key vector k (width d) of head h, as the papers write it.
double stated_score(nn::AttentionScore score, const nn::MultiHeadAttention& mha, int64_t h,
                    const double* q, const double* k, int64_t d) {
  const std::vector<double> w = mha.score_weight.defined() ? mha.score_weight.to_vector() : std::vector<double>{};
  const std::vector<double> v = mha.score_vector.defined() ? mha.score_vector.to_vector() : std::vector<double>{};
  double e = 0.0;
  for (int64_t a = 0; a < d; ++a) {
    double inner = 0.0;  // general: (W_a k)_a; concat: (W_a [q;k])_a; additive: q_a + k_a
    for (int64_t c = 0; c < d; ++c) {
      if (score == nn::AttentionScore::general) inner += w[static_cast<size_t>((h * d + a) * d + c)] * k[c];
      if (score == nn::AttentionScore::concat) {
        inner += w[static_cast<size_t>((h * d + a) * 2 * d + c)] * q[c] +
                 w[static_cast<size_t>((h * d + a) * 2 * d + d + c)] * k[c];
      }
    }
    if (score == nn::AttentionScore::general) e += q[a] * inner;
    if (score == nn::AttentionScore::concat) e += v[static_cast<size_t>(h * d + a)] * std::tanh(inner);
    if (score == nn::AttentionScore::additive) e += v[static_cast<size_t>(h * d + a)] * std::tanh(q[a] + k[a]);
  }
  return e;
}

}  // namespace

TEST_CASE("gradcheck cross-attention scored by general, concat and additive, padded and grouped",
          "[gradcheck][nn][cross]") {
  for (const nn::AttentionScore score : kLearnedScores) {
    for (const int64_t kv_heads : {0, 2}) {
      INFO(nn::attention_score_name(score) << ", kv heads " << kv_heads);
      nn::MultiHeadAttention mha(scored_mha(score, kv_heads));
      require_module_gradcheck(mha, {leaf({2, 3, 8}, 5), leaf({2, 6, 8}, 6)},
                               [&](const std::vector<Tensor>& in) {
                                 return mha.forward(in[0], in[1], {false, {6, 4}});
                               });
    }
  }
}

TEST_CASE("each cross-attention score's weights are the softmax of its stated formula",
          "[nn][cross]") {
  for (const nn::AttentionScore score : kLearnedScores) {
    INFO(nn::attention_score_name(score));
    nn::MultiHeadAttention mha(scored_mha(score));
    mha.to(DType::f64);
    scramble(mha, 8, 0.5);
    mha.set_keep_attention_weights(true);
    const int64_t tq = 3, tk = 5, h = 4, d = 2;
    const Tensor query = leaf({1, tq, 8}, 9), memory = leaf({1, tk, 8}, 10);
    mha.forward(query, memory, {false, {4}});
    const std::vector<double> weights = mha.attention_weights().to_vector();  // (1,4,3,5)
    const std::vector<double> q = project(query.to_vector(), tq, *mha.q_proj);
    const std::vector<double> k = project(memory.to_vector(), tk, *mha.k_proj);
    for (int64_t head = 0; head < h; ++head) {
      for (int64_t i = 0; i < tq; ++i) {
        std::vector<double> e(4);  // the fifth key is padding
        double total = 0.0;
        for (int64_t j = 0; j < 4; ++j) {
          e[static_cast<size_t>(j)] = std::exp(stated_score(score, mha, head, &q[static_cast<size_t>(i * 8 + head * d)],
                                                            &k[static_cast<size_t>(j * 8 + head * d)], d));
          total += e[static_cast<size_t>(j)];
        }
        for (int64_t j = 0; j < tk; ++j) {
          const double want = j < 4 ? e[static_cast<size_t>(j)] / total : 0.0;
          REQUIRE(weights[static_cast<size_t>(((head * tq) + i) * tk + j)] == Approx(want).margin(1e-12));
        }
      }
    }
  }
}

TEST_CASE("Bahdanau's example: weights 0.05, 0.1, 0.75, 0.1 give the context 0.045, 0.530, 0.435",
          "[nn][cross]") {
  // The scores e_j = v_a^T tanh(W_a s + U_a h_j) that softmax turns into the text's weights: with
  // one attention unit, v_a = 4 and W_a s = 0, U_a h_j = atanh(ln(alpha_j) / 4) gives e_j =
  // ln(alpha_j). The encoder states h_j are ones whose weighted sum is the text's context.
  const std::vector<double> alpha{0.05, 0.1, 0.75, 0.1};
  std::vector<double> keys;
  for (const double a : alpha) keys.push_back(std::atanh(std::log(a) / 4.0));
  const Tensor q = Tensor::from({0.0}, {1, 1, 1, 1}, DType::f64);
  const Tensor k = Tensor::from(keys, {1, 1, 4, 1}, DType::f64);
  const Tensor v_a = Tensor::from({4.0}, {1, 1}, DType::f64);
  const Tensor states = Tensor::from({0.9, 0.1, 0.0, 0.0, 0.25, 0.75, 0.0, 0.6, 0.4, 0.0, 0.5, 0.6},
                                     {1, 1, 4, 3}, DType::f64);
  const nn::AttentionResult r = nn::attend_by_scores(nn::additive_scores(q, k, v_a), states);
  require_all_close(r.weights.to_vector(), alpha, 1e-12);
  require_all_close(r.output.to_vector(), {0.045, 0.530, 0.435}, 1e-12);
}

TEST_CASE("gradcheck the encoder-decoder loss for every cross-attention score and without one",
          "[gradcheck][nn][seq2seq][exhaustive]") {
  const Tensor source = Tensor::from_ids({3, 4, 5, 6, 7, 8, 0, 0}, {2, 4});  // second row: 2 + pad
  const Tensor inputs = Tensor::from_ids({1, 4, 5, 1, 6, 0}, {2, 3});
  const Tensor targets = Tensor::from_ids({4, 5, 2, 6, 2, -100}, {2, 3});
  for (const auto& [score, cross] : kDecoderViews) {
    INFO(nn::attention_score_name(score) << (cross ? "" : ", no cross-attention"));
    nn::EncoderDecoder model(scored_seq2seq(score, cross), 5);
    model.to(DType::f64);
    scramble(model, 6, 0.4);
    require_module_gradcheck(model, {}, [&](const std::vector<Tensor>&) {
      return model.loss(source, {4, 2}, inputs, targets);
    });
  }
}

TEST_CASE("without cross-attention the decoder sees the mean of the encoder output only",
          "[nn][seq2seq]") {
  nn::EncoderDecoder model(scored_seq2seq(nn::AttentionScore::dot, false), 3);
  model.to(DType::f64);
  scramble(model, 4, 0.4);
  model.eval();
  for (const auto& [name, p] : model.named_parameters()) {
    INFO(name);
    REQUIRE(name.find("encoder_attn") == std::string::npos);
  }
  NoGradGuard no_grad;
  const Tensor inputs = Tensor::from_ids({1, 8, 3}, {1, 3});
  Generator gen(5);
  const Tensor memory = Tensor::randn({1, 4, 8}, gen, DType::f64);
  // Any memory with the same mean over the valid positions decodes the same.
  std::vector<double> m = memory.to_vector();
  for (int64_t c = 0; c < 8; ++c) {
    std::swap(m[static_cast<size_t>(c)], m[static_cast<size_t>(16 + c)]);
    m[static_cast<size_t>(24 + c)] = 1e3;  // padding: the last position is not valid
  }
  const Tensor shuffled = Tensor::from(m, {1, 4, 8}, DType::f64);
  require_all_close(model.decode(inputs, shuffled, {3}).to_vector(),
                    model.decode(inputs, memory, {3}).to_vector(), 1e-12);
  REQUIRE(model.cross_attention_weights().empty());
  nn::EncoderDecoderConfig c = scored_seq2seq(nn::AttentionScore::additive, false);
  REQUIRE_THROWS_WITH(nn::EncoderDecoder(c, 1), Catch::Contains("cross_score additive"));
}

TEST_CASE("cached decoding equals recomputation for every cross-attention score and without one",
          "[nn][seq2seq]") {
  for (const auto& [score, cross] : kDecoderViews) {
    INFO(nn::attention_score_name(score) << (cross ? "" : ", no cross-attention"));
    nn::EncoderDecoder model(scored_seq2seq(score, cross), 3);
    model.to(DType::f64);
    scramble(model, 4, 0.4);
    model.eval();
    NoGradGuard no_grad;
    const Tensor memory = model.encode(Tensor::from_ids({3, 4, 5, 6, 7, 0}, {1, 6}), {5});
    const std::vector<int64_t> inputs{1, 8, 3, 3, 6};
    const std::vector<double> full = model.decode(Tensor::from_ids(inputs, {1, 5}), memory, {5}).to_vector();
    nn::DecoderCache cache = model.make_cache();
    std::vector<double> stepped;
    for (const int64_t id : inputs) {
      const auto next = model.decode(Tensor::from_ids({id}, {1, 1}), memory, {5}, &cache).to_vector();
      stepped.insert(stepped.end(), next.begin(), next.end());
    }
    require_all_close(stepped, full, 1e-12);
  }
}
