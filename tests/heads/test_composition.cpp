// Composition scores: rank-one circuits whose scores are known cosines, and a model's head
// circuits read from the right columns of c_attn and rows of c_proj with the ln_1 gain folded in.
#include <cmath>

#include <catch2/catch.hpp>

#include "nn/nn_helpers.hpp"
#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/heads/composition.hpp"

using namespace tinygpt;

namespace {

Tensor row(const std::vector<double>& v) { return Tensor::from(v, {1, static_cast<int64_t>(v.size())}, DType::f64); }
Tensor column(const std::vector<double>& v) { return Tensor::from(v, {static_cast<int64_t>(v.size()), 1}, DType::f64); }

// Head width 1: W_QK = x y^T, W_OV = u w^T.
heads::HeadCircuit rank_one(const std::vector<double>& x, const std::vector<double>& y,
                            const std::vector<double>& u, const std::vector<double>& w) {
  return heads::head_circuit(row(x), row(y), row(w), column(u));
}

}  // namespace

TEST_CASE("composition: rank-one circuits score the cosine of what is written and read",
          "[heads][composition]") {
  // The writer writes along u = e0. K-composition is |cos(y, u)| (the key side reads y),
  // Q-composition |cos(x, u)|, V-composition |cos(w_reader, u)|.
  const heads::HeadCircuit writer = rank_one({0, 0, 1}, {0, 1, 0}, {1, 0, 0}, {0, 0, 1});
  const heads::HeadCircuit keys_read_it = rank_one({0, 1, 0}, {1, 0, 0}, {0, 0, 1}, {0, 1, 0});
  heads::CompositionScores s = heads::compose(writer, keys_read_it);
  CHECK(s.k == Approx(1.0));
  CHECK(s.q == Approx(0.0).margin(1e-12));
  CHECK(s.v == Approx(0.0).margin(1e-12));
  const heads::HeadCircuit halfway = rank_one({1, 1, 0}, {0, 0, 1}, {0, 1, 0}, {1, 0, 1});
  s = heads::compose(writer, halfway);
  CHECK(s.q == Approx(1.0 / std::sqrt(2.0)));
  CHECK(s.k == Approx(0.0).margin(1e-12));
  CHECK(s.v == Approx(1.0 / std::sqrt(2.0)));
}

TEST_CASE("composition: a model's circuits are W_Q^T W_K and W_O W_V with ln_1 folded in (gain, centering)",
          "[heads][composition]") {
  nn::GPTConfig config;
  config.vocab_size = 5;
  config.block_size = 4;
  config.n_layer = 2;
  config.n_head = 2;
  config.n_embd = 4;
  nn::GPT model(config, 3);
  auto& block = (*model.transformer->h)[1];
  block.ln_1->weight.copy_(Tensor::from({1.0, 2.0, 0.5, 3.0}, {4}));
  const std::vector<heads::HeadCircuit> circuits = heads::head_circuits(model);
  REQUIRE(circuits.size() == 4);
  CHECK(circuits[3].head == heads::HeadRef{1, 1});
  // Layer 1, head 1 (width 2), raw entry (i, j): sum_m g_i Wq[i][2 + m] g_j Wk[j][4 + 2 + m]; the
  // reader sees its input less the mean, so each circuit is centred on both sides: P M P.
  const std::vector<double> w = block.attn->c_attn->weight.to_vector();  // (4, 12)
  const std::vector<double> proj = block.attn->c_proj->weight.to_vector();  // (4, 4)
  const std::vector<double> g = {1.0, 2.0, 0.5, 3.0};
  double qk[4][4] = {}, ov[4][4] = {};
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int m = 0; m < 2; ++m) {
        qk[i][j] += g[i] * w[i * 12 + 2 + m] * g[j] * w[j * 12 + 6 + m];
        ov[i][j] += proj[(2 + m) * 4 + i] * g[j] * w[j * 12 + 10 + m];
      }
    }
  }
  const auto centred = [](double (&m)[4][4], int i, int j) {
    double row = 0.0, col = 0.0, all = 0.0;
    for (int k = 0; k < 4; ++k) {
      row += m[i][k] / 4;
      col += m[k][j] / 4;
      for (int l = 0; l < 4; ++l) all += m[k][l] / 16;
    }
    return m[i][j] - row - col + all;
  };
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      CHECK(circuits[3].qk.at({i, j}) == Approx(centred(qk, i, j)).margin(1e-7));
      CHECK(circuits[3].ov.at({i, j}) == Approx(centred(ov, i, j)).margin(1e-7));
    }
  }
  const heads::CompositionReport report = heads::composition_scores(model);
  REQUIRE(report.pairs.size() == 4);  // 2 writers x 2 readers
  CHECK(report.pairs[1].from == heads::HeadRef{0, 0});
  CHECK(report.pairs[1].to == heads::HeadRef{1, 1});
  for (const heads::CompositionPair& p : report.pairs) {
    for (double score : {p.score.q, p.score.k, p.score.v, p.baseline.q, p.baseline.k, p.baseline.v}) {
      CHECK(score > 0.0);
      CHECK(score <= 1.0);
    }
  }
  const nlohmann::json json = report.json();
  CHECK(json[1]["from"] == nlohmann::json::array({0, 0}));
  CHECK(json[1]["to"] == nlohmann::json::array({1, 1}));
  CHECK(json[1]["k"].get<double>() == Approx(report.pairs[1].score.k));
  CHECK(json[1]["baseline"].contains("v"));
}
