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

// `m` less its mean along `axis`: the part of it a layer norm's centering lets through.
Tensor centred(const Tensor& m, int64_t axis) { return m - mean(m, {axis}, true); }

// Column `first`.. of `width` of an (in,out) weight, as the (width, in) matrix that multiplies
// a column vector, with the reading layer's ln_1 folded in: its gain scales the input, and its
// centering removes the input's mean, so no head reads along the all-ones direction.
Tensor reading_rows(const Tensor& weight, int64_t first, int64_t width, const Tensor& gain) {
  const Tensor cols = narrow(weight, 1, first, width);  // (C, width)
  return centred(transpose(cols * reshape(gain, {gain.size(0), 1}), 0, 1), 1);
}

HeadCircuit random_circuit(int64_t d, int64_t c, Generator& gen) {
  const auto draw = [&](int64_t rows, int64_t cols) { return Tensor::randn({rows, cols}, gen, DType::f64); };
  const Tensor w_q = draw(d, c), w_k = draw(d, c), w_v = draw(d, c), w_o = draw(c, d);
  return head_circuit(w_q, w_k, w_v, w_o);
}

}  // namespace

HeadCircuit head_circuit(const Tensor& w_q, const Tensor& w_k, const Tensor& w_v, const Tensor& w_o) {
  return {matmul(w_q, w_k, true, false), matmul(w_o, w_v), HeadRef{}};
}

std::vector<HeadCircuit> head_circuits(const nn::GPT& model) {
  NoGradGuard no_grad;
  const nn::GPTConfig& config = model.config();
  const int64_t c = config.n_embd, h = config.n_head, d = c / h;
  std::vector<HeadCircuit> out;
  for (int64_t layer = 0; layer < config.n_layer; ++layer) {
    const nn::Block& block = (*model.transformer->h)[static_cast<size_t>(layer)];
    const Tensor w = block.attn->c_attn->weight.to(DType::f64);  // (C, Q + 2KV): x @ W
    const Tensor proj = block.attn->c_proj->weight.to(DType::f64);  // (Q, C): z @ W
    const Tensor gain = block.ln_1->weight.to(DType::f64);
    const std::vector<int64_t> kept = config.kept_heads(layer);
    const auto slots = static_cast<int64_t>(kept.size());
    const int64_t q = slots * d, kv = (slots == h ? config.kv_heads() : slots) * d;
    for (int64_t slot = 0; slot < slots; ++slot) {
      const int64_t group = slot / (slots * d / kv);
      HeadCircuit circuit = head_circuit(reading_rows(w, slot * d, d, gain),
                                         reading_rows(w, q + group * d, d, gain),
                                         reading_rows(w, q + kv + group * d, d, gain),
                                         // what the head writes, centred as the next ln_1 reads it
                                         centred(transpose(narrow(proj, 0, slot * d, d), 0, 1), 0));
      circuit.head = {layer, kept[static_cast<size_t>(slot)]};
      out.push_back(circuit);
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
  const int64_t d = config.n_embd / config.n_head;
  Generator gen(seed);
  CompositionReport report;
  report.n_layer = config.n_layer;
  report.n_head = config.n_head;
  for (const HeadCircuit& writer : circuits) {
    for (const HeadCircuit& reader : circuits) {
      if (reader.head.layer <= writer.head.layer) continue;
      CompositionPair pair;
      pair.from = writer.head;
      pair.to = reader.head;
      pair.score = compose(writer, reader);
      pair.baseline = compose(random_circuit(d, config.n_embd, gen), random_circuit(d, config.n_embd, gen));
      report.pairs.push_back(pair);
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
