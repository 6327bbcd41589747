#pragma once
// Composition scores (Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits"):
// how much a later head reads what an earlier head writes, from the weights alone. In the
// column-vector convention each head has W_QK = W_Q^T W_K and W_OV = W_O W_V (d_model x d_model),
// with its layer's ln_1 folded into W_Q, W_K and W_V (its gain, and its centering: the reader sees
// its input less the mean, so W_O is centred too, as TransformerLens's fold_ln and
// center_writing_weights do) and the biases ignored. For a writer
// h1 and a reader h2 in a later layer:
//   Q-composition  |W_QK^{h2}^T W_OV^{h1}|_F / (|W_QK^{h2}|_F |W_OV^{h1}|_F)
//   K-composition  |W_QK^{h2}   W_OV^{h1}|_F / (|W_QK^{h2}|_F |W_OV^{h1}|_F)
//   V-composition  |W_OV^{h2}   W_OV^{h1}|_F / (|W_OV^{h2}|_F |W_OV^{h1}|_F)
// Every score is in [0, 1]; random matrices of the same shapes give the baseline a score must
// clear to mean anything (it is not 0: two random low-rank maps still overlap).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tinygpt/heads/ablation.hpp"
#include "tinygpt/nn/gpt.hpp"

namespace tinygpt::heads {

// One head's circuits, f64 (C,C) each.
struct HeadCircuit {
  Tensor qk;  // W_Q^T W_K
  Tensor ov;  // W_O W_V
  HeadRef head;  // which head, in its original numbering (head_circuits sets it)
};
// From the head's own matrices in the column-vector convention: w_q, w_k, w_v (d,C), w_o (C,d).
HeadCircuit head_circuit(const Tensor& w_q, const Tensor& w_k, const Tensor& w_v, const Tensor& w_o);
// Every head the model has, layer by layer, head by head (a grouped-query head uses its
// key/value head's W_K and W_V; a pruned head has none).
std::vector<HeadCircuit> head_circuits(const nn::GPT& model);

struct CompositionScores {
  double q = 0.0, k = 0.0, v = 0.0;
};
// The three scores of `reader` composing with `writer`.
CompositionScores compose(const HeadCircuit& writer, const HeadCircuit& reader);

struct CompositionPair {
  HeadRef from, to;            // writer, reader (to.layer > from.layer)
  CompositionScores score;
  CompositionScores baseline;  // the same pair's shapes filled with standard normal draws
};

struct CompositionReport {
  int64_t n_layer = 0, n_head = 0;
  std::vector<CompositionPair> pairs;  // by writer, then reader, each layer by layer; pruned heads have none
  CompositionScores mean_baseline;     // over the pairs

  // [{"from": [l1, h1], "to": [l2, h2], "q": .., "k": .., "v": .., "baseline": {"q", "k", "v"}}]
  nlohmann::json json() const;
  // The `top` pairs by K-composition, one line each, with the baseline.
  std::string table(size_t top = 10) const;
};

// Scores of every writer/reader pair; the baseline draws from Generator(seed).
CompositionReport composition_scores(const nn::GPT& model, uint64_t seed = 0);

}  // namespace tinygpt::heads
