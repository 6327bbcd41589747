#pragma once
// Which earlier tokens one prediction used, three ways side by side, because attention weights
// are not explanations (Jain & Wallace 2019) and often disagree with gradient-based importance:
//
//  - raw attention: each layer's attention row of the query position, averaged over its heads;
//  - attention rollout (Abnar & Zuidema 2020): per layer A' = 0.5 A + 0.5 I (A averaged over the
//    heads, the identity for the residual connection), multiplied from the first layer up; the
//    query's row says how much each input position flows into it;
//  - gradient x input: with x the input embeddings (token + position, the hook point
//    blocks.0.resid_pre) and f the log-probability of the next token at the query position,
//    position j gets |sum_c x[j,c] df/dx[j,c]|, taken by the tape through a hook that puts a
//    leaf in place of x.
//
// Each attribution is over positions 0..query and normalised to sum 1.
#include <vector>

#include "tinygpt/nn/gpt.hpp"

namespace tinygpt::heads {

struct Attribution {
  int64_t position = 0;  // the query
  int64_t target = 0;    // the token whose log-probability was attributed
  bool target_is_next = false;  // the text's next token (else the model's top prediction)
  std::vector<std::vector<double>> attention;  // [layer][j]
  std::vector<double> rollout;                 // [j]
  std::vector<double> grad_x_input;            // [j]
  std::vector<double> attention_spearman;      // [layer]: rank correlation with grad_x_input
  double rollout_spearman = 0.0;
};

// Attribution of the prediction at `position` of `ids` (IndexError when position is outside
// [0, ids.size()) or ids is longer than the context). The model is used in eval mode; its
// parameter gradients are left cleared.
Attribution attribute(nn::GPT& model, const std::vector<int64_t>& ids, int64_t position);

// Row `position` of the rollout of per-layer attention maps (each (H,T,T), f32), over 0..position.
std::vector<double> attention_rollout(const std::vector<Tensor>& maps, int64_t position);

// Spearman's rank correlation (ties get their mean rank); NaN when a side is constant or there
// are fewer than two values. ShapeError when the sizes differ.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// Aligned text: one row per position (token, raw attention per layer, rollout, gradient x input)
// and the rank correlations; tokens shown by `label`.
std::string attribution_table(const Attribution& a, const std::vector<std::string>& labels);

}  // namespace tinygpt::heads
