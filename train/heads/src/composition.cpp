#include "tinygpt/heads/composition.hpp"

#include <algorithm>
#include <cmath>

#include "tinygpt/autograd/ops.hpp"
#include "tinygpt/autograd/tape.hpp"

namespace tinygpt::heads {
namespace {

double frobenius(const Tensor& m) { return std::sqrt(sum(m * m).item()); }

// |a b|_F / (|a|_F |b|_F), 0 when either is zero (a head that writes or reads nothing).
double normalised_product(const Tensor& a, const Tensor& b, bool transpose_a) {
  const double denom = frobenius(a) * frobenius(b);
  return denom > 0.0 ? frobenius(matmul(a, b, transpose_a, false)) / denom : 0.0;
}

// Column `first`.. of `width` of an (in,out) weight, as the (width, in) matrix that multiplies
// a column vector, with the input scaled by `gain` (the ln_1 gain folded in).
Tensor reading_rows(const Tensor& weight, int64_t first, int64_t width, const Tensor& gain) {
  const Tensor cols = narrow(weight, 1, first, width);  // (C, width)
  return transpose(cols * reshape(gain, {gain.size(0), 1}), 0, 1);
}

HeadCircuit random_circuit(int64_t d, int64_t c, Generator& gen) {
  const auto draw = [&](int64_t rows, int64_t cols) { return Tensor::randn({rows, cols}, gen, DType::f64); };
  const Tensor w_q = draw(d, c), w_k = draw(d, c), w_v = draw(d, c), w_o = draw(c, d);
  return head_circuit(w_q, w_k, w_v, w_o);
}

}  // namespace

HeadCircuit head_circuit(const Tensor& w_q, const Tensor& w_k, const Tensor& w_v, const Tensor& w_o) {
  return {matmul(w_q, w_k, true, false), matmul(w_o, w_v)};
}

std::vector<HeadCircuit> head_circuits(const nn::GPT& model) {
  NoGradGuard no_grad;
  const nn::GPTConfig& config = model.config();
  const int64_t c = config.n_embd, h = config.n_head, d = c / h, kv = config.kv_heads() * d;
  std::vector<HeadCircuit> out;
  for (const auto& block : *model.transformer->h) {
    const Tensor w = block->attn->c_attn->weight.to(DType::f64);  // (C, C + 2KV): x @ W
    const Tensor proj = block->attn->c_proj->weight.to(DType::f64);  // (C, C): z @ W
    const Tensor gain = block->ln_1->weight.to(DType::f64);
    for (int64_t head = 0; head < h; ++head) {
      const int64_t group = head / (h / config.kv_heads());
      out.push_back(head_circuit(reading_rows(w, head * d, d, gain),
                                 reading_rows(w, c + group * d, d, gain),
                                 reading_rows(w, c + kv + group * d, d, gain),
                                 transpose(narrow(proj, 0, head * d, d), 0, 1)));
    }
  }
  return out;
}

CompositionScores compose(const HeadCircuit& writer, const HeadCircuit& reader) {
  return {normalised_product(reader.qk, writer.ov, true),
          normalised_product(reader.qk, writer.ov, false),
          normalised_product(reader.ov, writer.ov, false)};
}

CompositionReport composition_scores(const nn::GPT& model, uint64_t seed) {
  NoGradGuard no_grad;
  const nn::GPTConfig& config = model.config();
  const std::vector<HeadCircuit> circuits = head_circuits(model);
  const int64_t h = config.n_head, d = config.n_embd / h;
  Generator gen(seed);
  CompositionReport report;
  report.n_layer = config.n_layer;
  report.n_head = h;
  for (int64_t l1 = 0; l1 < config.n_layer; ++l1) {
    for (int64_t h1 = 0; h1 < h; ++h1) {
      for (int64_t l2 = l1 + 1; l2 < config.n_layer; ++l2) {
        for (int64_t h2 = 0; h2 < h; ++h2) {
          CompositionPair pair;
          pair.from = {l1, h1};
          pair.to = {l2, h2};
          pair.score = compose(circuits[static_cast<size_t>(l1 * h + h1)],
                               circuits[static_cast<size_t>(l2 * h + h2)]);
          pair.baseline = compose(random_circuit(d, config.n_embd, gen),
                                  random_circuit(d, config.n_embd, gen));
          report.pairs.push_back(pair);
        }
      }
    }
  }
  for (const CompositionPair& p : report.pairs) {
    const auto n = static_cast<double>(report.pairs.size());
    report.mean_baseline.q += p.baseline.q / n;
    report.mean_baseline.k += p.baseline.k / n;
    report.mean_baseline.v += p.baseline.v / n;
  }
  return report;
}

nlohmann::json CompositionReport::json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const CompositionPair& p : pairs) {
    list.push_back({{"from", {p.from.layer, p.from.head}},
                    {"to", {p.to.layer, p.to.head}},
                    {"q", p.score.q},
                    {"k", p.score.k},
                    {"v", p.score.v},
                    {"baseline", {{"q", p.baseline.q}, {"k", p.baseline.k}, {"v", p.baseline.v}}}});
  }
  return list;
}

std::string CompositionReport::table(size_t top) const {
  std::vector<const CompositionPair*> order;
  for (const CompositionPair& p : pairs) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(),
                   [](const CompositionPair* a, const CompositionPair* b) { return a->score.k > b->score.k; });
  order.resize(std::min(top, order.size()));
  std::string out = fmt::format(
      "composition (weights only; random matrices of the same shapes score q {:.3f}, k {:.3f}, "
      "v {:.3f} on average): the top pairs by K-composition\n{:>6} {:>6} {:>7} {:>7} {:>7}\n",
      mean_baseline.q, mean_baseline.k, mean_baseline.v, "from", "to", "q", "k", "v");
  for (const CompositionPair* p : order) {
    out += fmt::format("{:>6} {:>6} {:>7.3f} {:>7.3f} {:>7.3f}\n",
                       fmt::format("{}.{}", p->from.layer, p->from.head),
                       fmt::format("{}.{}", p->to.layer, p->to.head), p->score.q, p->score.k, p->score.v);
  }
  return out;
}

}  // namespace tinygpt::heads
